// ext.c: orthant._ext, the CPython extension under the orthant package.
//
// The helpers, the Python glue and the module; the two types are in
// ext_packed.inc and ext_dynamic.inc, included here (one translation unit).
// Two types: _Packed (the packed tree, static, built once from an array) and
// _Dynamic (the dynamic tree, with handles). The Python layer (orthant/
// __init__.py) checks shapes and dtypes and hands over C-contiguous float32 or
// float64 arrays; everything here reads them in place with the GIL released.
//
// Threads: a batch call with workers > 1 splits its rows into that many
// contiguous ranges, runs each on its own pthread with its own buffers and
// joins them in range order, so the result does not depend on workers. The
// packed tree's reads are documented as safe from any number of threads.
#define PY_SSIZE_T_CLEAN
#include <Python.h>
#define NPY_NO_DEPRECATED_API NPY_1_7_API_VERSION
#include <numpy/arrayobject.h>

#include <float.h>
#include <math.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "orthant/orthant.h"
// The library's Morton keys and sort (src/, on the include path): batches are
// ordered exactly as the library orders them.
#include "morton.h"

#define COORD_LIMIT ((double)ORTHANT_COORD_LIMIT)

// ---- small helpers --------------------------------------------------------------

/// The next float above a finite f (nextafterf(f, INFINITY), inline).
static inline float next_up(float f)
{
	if (f == 0.0f) return FLT_TRUE_MIN;
	uint32_t u;
	memcpy(&u, &f, sizeof u);
	u = f > 0.0f ? u + 1 : u - 1; // one ulp more, or one ulp less magnitude
	memcpy(&f, &u, sizeof f);
	return f;
}

/// The largest float <= x, and the smallest float >= x (x finite, within the limit).
static inline float round_down(double x)
{
	float f = (float)x;
	return (double)f > x ? -next_up(-f) : f;
}

static inline float round_up(double x)
{
	float f = (float)x;
	return (double)f < x ? next_up(f) : f;
}

/// Room for one more of n items of elem bytes in *p (capacity *cap), doubling.
static bool grow(void **p, size_t *cap, size_t n, size_t elem)
{
	if (n < *cap) return true;
	size_t c = *cap ? *cap * 2 : 1024;
	void *q = realloc(*p, c * elem);
	if (!q) return false;
	*p = q;
	*cap = c;
	return true;
}

/// Growable arrays; failed is set once a push could not allocate.
#define VEC(name, type)                                                                                      \
	typedef struct name {                                                                                    \
		type *p;                                                                                             \
		size_t n, cap;                                                                                       \
		bool failed;                                                                                         \
	} name;                                                                                                  \
	static inline bool name##_push(name *v, type x)                                                          \
	{                                                                                                        \
		if (!grow((void **)&v->p, &v->cap, v->n, sizeof x)) return !(v->failed = true);                      \
		v->p[v->n++] = x;                                                                                    \
		return true;                                                                                         \
	}
VEC(u32vec, uint32_t)
VEC(u64vec, uint64_t)

/// sort_NAME(a, n): insertion sort for the short rows queries give, qsort past 48.
#define SORTER(NAME, T, BEFORE)                                                                              \
	static int cmp_##NAME(const void *a, const void *b)                                                      \
	{                                                                                                        \
		T x = *(const T *)a, y = *(const T *)b;                                                              \
		return BEFORE(x, y) ? -1 : BEFORE(y, x) ? 1 : 0;                                                     \
	}                                                                                                        \
	static void sort_##NAME(T *a, size_t n)                                                                  \
	{                                                                                                        \
		if (n > 48) {                                                                                        \
			qsort(a, n, sizeof *a, cmp_##NAME);                                                              \
			return;                                                                                          \
		}                                                                                                    \
		for (size_t i = 1; i < n; ++i) {                                                                     \
			T x = a[i];                                                                                      \
			size_t j = i;                                                                                    \
			for (; j > 0 && BEFORE(x, a[j - 1]); --j) a[j] = a[j - 1];                                       \
			a[j] = x;                                                                                        \
		}                                                                                                    \
	}

#define U32_BEFORE(x, y) ((x) < (y))
SORTER(u32, uint32_t, U32_BEFORE)

/// A candidate neighbour: exact distance and id; ordered by distance, then id.
typedef struct dpair {
	double d;
	uint32_t id;
} dpair;
#define DPAIR_BEFORE(x, y) ((x).d < (y).d || ((x).d == (y).d && (x).id < (y).id))
SORTER(dpair, dpair, DPAIR_BEFORE)

/// A ray's hit; ordered by t, then id.
typedef struct thit {
	float t;
	uint32_t id;
} thit;
#define THIT_BEFORE(x, y) ((x).t < (y).t || ((x).t == (y).t && (x).id < (y).id))
SORTER(thit, thit, THIT_BEFORE)
VEC(thitvec, thit)

// ---- running ranges of rows on threads -------------------------------------------

typedef bool range_fn(void *ctx, int worker, size_t lo, size_t hi);

typedef struct range_job {
	range_fn *fn;
	void *ctx;
	int worker;
	size_t lo, hi;
	bool ok;
} range_job;

static void *range_thread(void *arg)
{
	range_job *j = arg;
	j->ok = j->fn(j->ctx, j->worker, j->lo, j->hi);
	return NULL;
}

#define MAX_WORKERS 256

/// fn over [0, m) split in `workers` contiguous ranges; range 0 runs here.
/// True when every range succeeded. Falls back to fewer threads if one cannot start.
static bool run_ranges(range_fn *fn, void *ctx, int workers, size_t m)
{
	if (workers < 1) workers = 1;
	if (workers > MAX_WORKERS) workers = MAX_WORKERS;
	if ((size_t)workers > m) workers = m ? (int)m : 1;
	range_job jobs[MAX_WORKERS];
	pthread_t th[MAX_WORKERS];
	bool started[MAX_WORKERS] = {false};
	for (int w = 0; w < workers; ++w)
		jobs[w] = (range_job){fn, ctx, w, m * (size_t)w / (size_t)workers, m * (size_t)(w + 1) / (size_t)workers, true};
	for (int w = 1; w < workers; ++w) started[w] = pthread_create(&th[w], NULL, range_thread, &jobs[w]) == 0;
	range_thread(&jobs[0]);
	bool ok = jobs[0].ok;
	for (int w = 1; w < workers; ++w) {
		if (started[w])
			pthread_join(th[w], NULL);
		else
			range_thread(&jobs[w]); // no thread: run it here, same range, same result
		ok = ok && jobs[w].ok;
	}
	return ok;
}

// ---- the two dimensions ------------------------------------------------------------

#define XCAT_(a, b) a##b
#define XCAT(a, b) XCAT_(a, b)

#define XD 2
#define ORT_X(x) ort2_##x
#include "index_dim.h"
#undef ORT_X
#undef XD

#define XD 3
#define ORT_X(x) ort3_##x
#include "index_dim.h"
#undef ORT_X
#undef XD

// ---- Python glue --------------------------------------------------------------------

static PyObject *StaleHandleError;

static PyObject *raise_result(ort_result r, const char *what)
{
	if (r == ORT_ERROR_OUT_OF_MEMORY) return PyErr_NoMemory();
	if (r == ORT_ERROR_STALE_HANDLE) {
		PyErr_Format(StaleHandleError, "%s: stale handle (removed, or not of this index)", what);
		return NULL;
	}
	PyErr_Format(PyExc_ValueError, "%s: %s", what, ort_result_string(r));
	return NULL;
}

/// The C-contiguous float32/float64 array (m, cols) the Python layer promised.
static bool take_array(PyObject *o, int cols, const char *name, const void **data, int *is64, size_t *m)
{
	if (!PyArray_Check(o)) {
		PyErr_Format(PyExc_TypeError, "%s: expected a numpy array", name);
		return false;
	}
	PyArrayObject *a = (PyArrayObject *)o;
	int t = PyArray_TYPE(a);
	if ((t != NPY_FLOAT32 && t != NPY_FLOAT64) || PyArray_NDIM(a) != 2 || PyArray_DIM(a, 1) != cols ||
	    !PyArray_IS_C_CONTIGUOUS(a)) {
		PyErr_Format(PyExc_ValueError, "%s: expected a C-contiguous float32/float64 array of shape (m, %d)", name,
		             cols);
		return false;
	}
	*data = PyArray_DATA(a);
	*is64 = t == NPY_FLOAT64;
	*m = (size_t)PyArray_DIM(a, 0);
	if (*m > (size_t)INT32_MAX) {
		PyErr_Format(PyExc_ValueError, "%s: more than 2^31 - 1 rows", name);
		return false;
	}
	return true;
}

static bool check_rows_boxes(int dim, const void *data, int is64, size_t m, const char *name)
{
	const char *why = NULL;
	int axis = 0;
	long bad;
	Py_BEGIN_ALLOW_THREADS;
	bad = dim == 2 ? check_boxes2(data, is64, m, &why, &axis) : check_boxes3(data, is64, m, &why, &axis);
	Py_END_ALLOW_THREADS;
	if (bad < 0) return true;
	PyErr_Format(PyExc_ValueError, "%s: row %ld: %s on axis %d", name, bad, why, axis);
	return false;
}

static bool check_rows_points(int dim, const void *data, int is64, size_t m, const char *name)
{
	int axis = 0;
	long bad;
	Py_BEGIN_ALLOW_THREADS;
	bad = dim == 2 ? check_points2(data, is64, m, &axis) : check_points3(data, is64, m, &axis);
	Py_END_ALLOW_THREADS;
	if (bad < 0) return true;
	PyErr_Format(PyExc_ValueError, "%s: row %ld: NaN, infinite or beyond 1e30 on axis %d", name, bad, axis);
	return false;
}

static PyObject *new_i64(size_t n, int64_t **out)
{
	npy_intp dims[1] = {(npy_intp)n};
	PyObject *a = PyArray_SimpleNew(1, dims, NPY_INT64);
	if (a) *out = PyArray_DATA((PyArrayObject *)a);
	return a;
}

/// qi and ti as int64 arrays: row q's counts[q] hits are at bufs[wk[q]].p + pos[q].
static PyObject *rows_to_arrays(const int64_t *counts, const size_t *pos, const uint16_t *wk, size_t m,
                                const u32vec *bufs)
{
	size_t total = 0;
	for (size_t q = 0; q < m; ++q) total += (size_t)counts[q];
	int64_t *qi, *ti;
	PyObject *a = new_i64(total, &qi), *b = a ? new_i64(total, &ti) : NULL;
	if (!b) {
		Py_XDECREF(a);
		return NULL;
	}
	Py_BEGIN_ALLOW_THREADS;
	size_t k = 0;
	for (size_t q = 0; q < m; ++q) {
		const uint32_t *src = bufs[wk[q]].p + pos[q];
		for (int64_t c = 0; c < counts[q]; ++c, ++k) {
			qi[k] = (int64_t)q;
			ti[k] = src[c];
		}
	}
	Py_END_ALLOW_THREADS;
	return Py_BuildValue("(NN)", a, b);
}

/// A type object (and its len) for struct T with methods T_methods, T_init, T_dealloc, T_len.
#define PY_TYPE(T, doc)                                                                                      \
	static PySequenceMethods T##_seq = {.sq_length = (lenfunc)T##_len};                                      \
	static PyTypeObject T##Type = {                                                                          \
	    PyVarObject_HEAD_INIT(NULL, 0).tp_name = "orthant._ext._" #T,                                        \
	    .tp_basicsize = sizeof(T),                                                                           \
	    .tp_flags = Py_TPFLAGS_DEFAULT | Py_TPFLAGS_BASETYPE,                                                \
	    .tp_doc = doc,                                                                                       \
	    .tp_new = PyType_GenericNew,                                                                         \
	    .tp_init = (initproc)T##_init,                                                                       \
	    .tp_dealloc = (destructor)T##_dealloc,                                                               \
	    .tp_methods = T##_methods,                                                                           \
	    .tp_as_sequence = &T##_seq,                                                                          \
	}

#include "ext_packed.inc"

#include "ext_dynamic.inc"

static struct PyModuleDef module = {PyModuleDef_HEAD_INIT, "orthant._ext",
                                    "orthant's C library, compiled in (private; use the orthant package).", -1, NULL};

PyMODINIT_FUNC PyInit__ext(void)
{
	import_array();
	if (PyType_Ready(&PackedType) < 0 || PyType_Ready(&DynamicType) < 0) return NULL;
	PyObject *m = PyModule_Create(&module);
	if (!m) return NULL;
	StaleHandleError = PyErr_NewExceptionWithDoc("orthant.StaleHandleError",
	                                             "A handle that names no live item of this index (removed, or of another index).",
	                                             PyExc_KeyError, NULL);
	Py_INCREF(&PackedType);
	Py_INCREF(&DynamicType);
	if (!StaleHandleError || PyModule_AddObject(m, "_Packed", (PyObject *)&PackedType) < 0 ||
	    PyModule_AddObject(m, "_Dynamic", (PyObject *)&DynamicType) < 0 ||
	    PyModule_AddObject(m, "StaleHandleError", StaleHandleError) < 0 ||
	    PyModule_AddStringConstant(m, "library_version", ORTHANT_VERSION_STRING) < 0) {
		Py_DECREF(m);
		return NULL;
	}
	return m;
}
