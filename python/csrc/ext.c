// ext.c: orthant._ext, the CPython extension under the orthant package.
//
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

// ---- _Packed ----------------------------------------------------------------------------

typedef struct {
	PyObject_HEAD int dim;
	core2 c2;
	core3 c3;
	double coord_max;
} Packed;

static void Packed_dealloc(Packed *self)
{
	core_free2(&self->c2);
	core_free3(&self->c3);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Packed_init(Packed *self, PyObject *args, PyObject *kw)
{
	static char *names[] = {"boxes", "dim", NULL};
	PyObject *arr;
	int dim;
	if (!PyArg_ParseTupleAndKeywords(args, kw, "Oi", names, &arr, &dim)) return -1;
	if (dim != 2 && dim != 3) {
		PyErr_SetString(PyExc_ValueError, "dim must be 2 or 3");
		return -1;
	}
	if (self->c2.tree || self->c3.tree) {
		PyErr_SetString(PyExc_RuntimeError, "already built");
		return -1;
	}
	const void *data;
	int is64;
	size_t n;
	if (!take_array(arr, 2 * dim, "boxes", &data, &is64, &n)) return -1;
	if (!check_rows_boxes(dim, data, is64, n, "boxes")) return -1;
	self->dim = dim;
	ort_result r;
	double cm = 0.0;
	Py_BEGIN_ALLOW_THREADS;
	r = dim == 2 ? core_build2(&self->c2, data, is64, (int)n) : core_build3(&self->c3, data, is64, (int)n);
	for (size_t i = 0; i < n * 2 * (size_t)dim; ++i) {
		double v = fabs(is64 ? ((const double *)data)[i] : ((const float *)data)[i]);
		if (v > cm) cm = v;
	}
	Py_END_ALLOW_THREADS;
	self->coord_max = cm;
	if (r != ORT_OK) {
		raise_result(r, "boxes");
		return -1;
	}
	return 0;
}

static int packed_n(Packed *s) { return s->dim == 2 ? s->c2.n : s->c3.n; }

/// Below this many rows a batch runs in the order given.
#define SPATIAL_ORDER_MIN 64

/// The order to run m rows in: spatial (Morton) for big batches, else as given.
static bool work_order(int dim, Packed *self, const void *data, int is64, int cols, size_t m, uint32_t *perm)
{
	if (m < SPATIAL_ORDER_MIN || packed_n(self) == 0) {
		for (size_t i = 0; i < m; ++i) perm[i] = (uint32_t)i;
		return true;
	}
	return dim == 2 ? morton_perm2(&self->c2, data, is64, cols, m, perm)
	                : morton_perm3(&self->c3, data, is64, cols, m, perm);
}

// query_boxes --------------------------------------------------------------------

typedef struct qjob {
	Packed *self;
	const void *q;
	int q64;
	const uint32_t *perm;
	int64_t *counts;
	size_t *pos;
	uint16_t *wk;
	u32vec bufs[MAX_WORKERS];
} qjob;

static bool qjob_range(void *ctx, int w, size_t lo, size_t hi)
{
	qjob *j = ctx;
	for (size_t t = lo; t < hi; ++t) j->wk[j->perm[t]] = (uint16_t)w;
	if (j->self->dim == 2)
		return query_range2(&j->self->c2, j->q, j->q64, j->perm, lo, hi, &j->bufs[w], j->counts, j->pos);
	return query_range3(&j->self->c3, j->q, j->q64, j->perm, lo, hi, &j->bufs[w], j->counts, j->pos);
}

static void free_bufs(u32vec *v, int n)
{
	for (int i = 0; i < n; ++i) free(v[i].p);
}

static PyObject *Packed_query_boxes(Packed *self, PyObject *args)
{
	PyObject *arr;
	int workers;
	if (!PyArg_ParseTuple(args, "Oi", &arr, &workers)) return NULL;
	const void *q;
	int q64;
	size_t m;
	if (!take_array(arr, 2 * self->dim, "boxes", &q, &q64, &m)) return NULL;
	if (!check_rows_boxes(self->dim, q, q64, m, "query boxes")) return NULL;
	qjob *j = calloc(1, sizeof *j);
	size_t room = m ? m : 1;
	int64_t *counts = malloc(room * sizeof *counts);
	size_t *pos = malloc(room * sizeof *pos);
	uint16_t *wk = malloc(room * sizeof *wk);
	uint32_t *perm = malloc(room * sizeof *perm);
	PyObject *res = NULL;
	if (!j || !counts || !pos || !wk || !perm) {
		PyErr_NoMemory();
		goto done;
	}
	*j = (qjob){.self = self, .q = q, .q64 = q64, .perm = perm, .counts = counts, .pos = pos, .wk = wk};
	bool ok;
	Py_BEGIN_ALLOW_THREADS;
	ok = work_order(self->dim, self, q, q64, 2 * self->dim, m, perm) && run_ranges(qjob_range, j, workers, m);
	Py_END_ALLOW_THREADS;
	res = ok ? rows_to_arrays(counts, pos, wk, m, j->bufs) : PyErr_NoMemory();
	free_bufs(j->bufs, MAX_WORKERS);
done:
	free(counts);
	free(pos);
	free(wk);
	free(perm);
	free(j);
	return res;
}

// pairs ------------------------------------------------------------------------------

/// (K, 2) int64 from flat (i, j) pairs already in order.
static PyObject *pairs_array(u32vec *bufs, int nbufs)
{
	size_t total = 0;
	for (int w = 0; w < nbufs; ++w) total += bufs[w].n / 2;
	npy_intp dims[2] = {(npy_intp)total, 2};
	PyObject *a = PyArray_SimpleNew(2, dims, NPY_INT64);
	if (!a) return NULL;
	int64_t *o = PyArray_DATA((PyArrayObject *)a);
	Py_BEGIN_ALLOW_THREADS;
	for (int w = 0; w < nbufs; ++w)
		for (size_t i = 0; i < bufs[w].n; ++i) *o++ = bufs[w].p[i];
	Py_END_ALLOW_THREADS;
	return a;
}

/// Order flat (i, j) pairs by i (a counting sort: row starts by prefix sums),
/// then each row by j, into out (the same length). False when out of memory.
static bool order_pairs(const u32vec *in, int n, u32vec *out)
{
	size_t k = in->n / 2;
	size_t *start = calloc((size_t)n + 2, sizeof *start);
	uint32_t *js = malloc((k ? k : 1) * sizeof *js);
	out->p = malloc((in->n ? in->n : 1) * sizeof *out->p);
	bool ok = start && js && out->p;
	if (ok) {
		out->n = out->cap = in->n;
		// start[i + 2] counts row i; two prefix sums later start[i + 1] is where
		// row i begins, and the scatter leaves it where row i + 1 begins.
		for (size_t p = 0; p < k; ++p) start[in->p[2 * p] + 2]++;
		for (int i = 0; i < n; ++i) start[i + 2] += start[i + 1];
		for (size_t p = 0; p < k; ++p) js[start[in->p[2 * p] + 1]++] = in->p[2 * p + 1];
		for (int i = 0; i < n; ++i) {
			sort_u32(js + start[i], start[i + 1] - start[i]);
			for (size_t p = start[i]; p < start[i + 1]; ++p) {
				out->p[2 * p] = (uint32_t)i;
				out->p[2 * p + 1] = js[p];
			}
		}
	}
	free(start);
	free(js);
	return ok;
}

/// All pairs in one pass of the library's pair finder, then ordered. workers
/// is accepted and does not change the work: the library has no way to split
/// one pair search between threads.
static PyObject *Packed_pairs(Packed *self, PyObject *args)
{
	int workers;
	if (!PyArg_ParseTuple(args, "i", &workers)) return NULL;
	int n = packed_n(self);
	u32vec raw = {0}, ordered = {0};
	bool ok;
	Py_BEGIN_ALLOW_THREADS;
	ok = self->dim == 2 ? find_pairs2(&self->c2, &raw) : find_pairs3(&self->c3, &raw);
	ok = ok && order_pairs(&raw, n, &ordered);
	Py_END_ALLOW_THREADS;
	free(raw.p);
	PyObject *res = ok ? pairs_array(&ordered, 1) : PyErr_NoMemory();
	free(ordered.p);
	return res;
}

/// One page of the sorted pairs: from row, skipping the first `skip` pairs of
/// that row, at most max_pairs. Returns (array, next_row, next_skip).
static PyObject *Packed_pairs_page(Packed *self, PyObject *args)
{
	Py_ssize_t row, skip, maxp;
	if (!PyArg_ParseTuple(args, "nnn", &row, &skip, &maxp)) return NULL;
	int n = packed_n(self);
	if (row < 0 || skip < 0 || maxp < 1) {
		PyErr_SetString(PyExc_ValueError, "pairs page: row >= 0, skip >= 0, max_pairs >= 1");
		return NULL;
	}
	u32vec out = {0}, scratch = {0};
	bool ok = true;
	size_t filled = 0;
	Py_BEGIN_ALLOW_THREADS;
	while (row < n && filled < (size_t)maxp) {
		scratch.n = 0;
		ok = self->dim == 2 ? self_row2(&self->c2, (uint32_t)row, &scratch) : self_row3(&self->c3, (uint32_t)row, &scratch);
		if (!ok) break;
		size_t have = scratch.n > (size_t)skip ? scratch.n - (size_t)skip : 0;
		size_t take = have < (size_t)maxp - filled ? have : (size_t)maxp - filled;
		for (size_t i = 0; i < take && ok; ++i)
			ok = u32vec_push(&out, (uint32_t)row) && u32vec_push(&out, scratch.p[(size_t)skip + i]);
		filled += take;
		if (take < have) {
			skip += (Py_ssize_t)take;
			break;
		}
		skip = 0;
		++row;
	}
	Py_END_ALLOW_THREADS;
	free(scratch.p);
	PyObject *a = ok ? pairs_array(&out, 1) : PyErr_NoMemory();
	free(out.p);
	if (!a) return NULL;
	return Py_BuildValue("(Nnn)", a, row, skip);
}

// nearest ----------------------------------------------------------------------------

typedef struct kjob {
	int dim;
	const uint32_t *perm;
	knn_job2 j2;
	knn_job3 j3;
} kjob;

static bool kjob_range(void *ctx, int w, size_t lo, size_t hi)
{
	(void)w;
	kjob *k = ctx;
	return k->dim == 2 ? knn_range2(&k->j2, k->perm, lo, hi) : knn_range3(&k->j3, k->perm, lo, hi);
}

static PyObject *Packed_nearest(Packed *self, PyObject *args)
{
	PyObject *arr, *excl;
	int k, workers;
	double maxd;
	if (!PyArg_ParseTuple(args, "OidOi", &arr, &k, &maxd, &excl, &workers)) return NULL;
	const void *pts;
	int p64;
	size_t m;
	if (!take_array(arr, self->dim, "points", &pts, &p64, &m)) return NULL;
	if (!check_rows_points(self->dim, pts, p64, m, "points")) return NULL;
	if (k < 1 || isnan(maxd) || maxd < 0) {
		PyErr_SetString(PyExc_ValueError, "k >= 1 and max_distance >= 0 required");
		return NULL;
	}
	const int64_t *ex = NULL;
	if (excl != Py_None) {
		if (!PyArray_Check(excl) || PyArray_TYPE((PyArrayObject *)excl) != NPY_INT64 ||
		    PyArray_NDIM((PyArrayObject *)excl) != 1 || (size_t)PyArray_DIM((PyArrayObject *)excl, 0) != m ||
		    !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)excl)) {
			PyErr_SetString(PyExc_ValueError, "exclude: expected an int64 array with one entry per point");
			return NULL;
		}
		ex = PyArray_DATA((PyArrayObject *)excl);
	}
	npy_intp dims[2] = {(npy_intp)m, k};
	PyObject *da = PyArray_SimpleNew(2, dims, NPY_FLOAT64);
	PyObject *ia = da ? PyArray_SimpleNew(2, dims, NPY_INT64) : NULL;
	if (!ia) {
		Py_XDECREF(da);
		return NULL;
	}
	kjob kj;
	memset(&kj, 0, sizeof kj);
	kj.dim = self->dim;
	double *dist = PyArray_DATA((PyArrayObject *)da);
	int64_t *idx = PyArray_DATA((PyArrayObject *)ia);
	if (self->dim == 2)
		kj.j2 = (knn_job2){&self->c2, pts, p64, k, maxd, ex, dist, idx, self->coord_max};
	else
		kj.j3 = (knn_job3){&self->c3, pts, p64, k, maxd, ex, dist, idx, self->coord_max};
	uint32_t *perm = malloc((m ? m : 1) * sizeof *perm);
	kj.perm = perm;
	bool ok = perm != NULL;
	Py_BEGIN_ALLOW_THREADS;
	ok = ok && work_order(self->dim, self, pts, p64, self->dim, m, perm) && run_ranges(kjob_range, &kj, workers, m);
	Py_END_ALLOW_THREADS;
	free(perm);
	if (!ok) {
		Py_DECREF(da);
		Py_DECREF(ia);
		return PyErr_NoMemory();
	}
	return Py_BuildValue("(NN)", da, ia);
}

// rays ---------------------------------------------------------------------------------

typedef struct rjob {
	Packed *self;
	const void *o, *d;
	int r64;
	const double *max_t;
	int64_t *counts;
	thitvec hits[MAX_WORKERS];
} rjob;

static bool rjob_range(void *ctx, int w, size_t lo, size_t hi)
{
	rjob *j = ctx;
	if (j->self->dim == 2)
		return ray_range2(&j->self->c2, j->o, j->d, j->r64, j->max_t, lo, hi, &j->hits[w], j->counts);
	return ray_range3(&j->self->c3, j->o, j->d, j->r64, j->max_t, lo, hi, &j->hits[w], j->counts);
}

static PyObject *Packed_ray(Packed *self, PyObject *args)
{
	PyObject *oa, *da, *ma;
	int workers;
	if (!PyArg_ParseTuple(args, "OOOi", &oa, &da, &ma, &workers)) return NULL;
	const void *o, *d;
	int o64, d64;
	size_t m, md;
	if (!take_array(oa, self->dim, "origins", &o, &o64, &m) || !take_array(da, self->dim, "dirs", &d, &d64, &md))
		return NULL;
	if (m != md || o64 != d64) {
		PyErr_SetString(PyExc_ValueError, "origins and dirs: same shape and dtype required");
		return NULL;
	}
	if (!check_rows_points(self->dim, o, o64, m, "origins") || !check_rows_points(self->dim, d, d64, m, "dirs"))
		return NULL;
	if (!PyArray_Check(ma) || PyArray_TYPE((PyArrayObject *)ma) != NPY_FLOAT64 ||
	    PyArray_NDIM((PyArrayObject *)ma) != 1 || (size_t)PyArray_DIM((PyArrayObject *)ma, 0) != m ||
	    !PyArray_IS_C_CONTIGUOUS((PyArrayObject *)ma)) {
		PyErr_SetString(PyExc_ValueError, "max_t: expected a float64 array with one entry per ray");
		return NULL;
	}
	const double *mt = PyArray_DATA((PyArrayObject *)ma);
	for (size_t i = 0; i < m; ++i)
		if (isnan(mt[i]) || mt[i] < 0) {
			PyErr_Format(PyExc_ValueError, "max_t: row %zu: NaN or negative", i);
			return NULL;
		}
	rjob *j = calloc(1, sizeof *j);
	int64_t *counts = malloc((m ? m : 1) * sizeof *counts);
	if (!j || !counts) {
		free(j);
		free(counts);
		return PyErr_NoMemory();
	}
	*j = (rjob){.self = self, .o = o, .d = d, .r64 = o64, .max_t = mt, .counts = counts};
	bool ok;
	Py_BEGIN_ALLOW_THREADS;
	ok = run_ranges(rjob_range, j, workers, m);
	Py_END_ALLOW_THREADS;
	PyObject *res = NULL;
	size_t total = 0;
	for (int w = 0; w < MAX_WORKERS; ++w) total += j->hits[w].n;
	int64_t *ri, *ti;
	PyObject *ra = ok ? new_i64(total, &ri) : PyErr_NoMemory();
	PyObject *ta = ra ? new_i64(total, &ti) : NULL;
	npy_intp dims[1] = {(npy_intp)total};
	PyObject *tt = ta ? PyArray_SimpleNew(1, dims, NPY_FLOAT64) : NULL;
	if (tt) {
		double *tp = PyArray_DATA((PyArrayObject *)tt);
		size_t k = 0;
		for (size_t r = 0; r < m; ++r)
			for (int64_t c = 0; c < counts[r]; ++c) ri[k++] = (int64_t)r;
		k = 0;
		for (int w = 0; w < MAX_WORKERS; ++w)
			for (size_t i = 0; i < j->hits[w].n; ++i, ++k) {
				ti[k] = j->hits[w].p[i].id;
				tp[k] = j->hits[w].p[i].t;
			}
		res = Py_BuildValue("(NNN)", ra, ta, tt);
	} else {
		Py_XDECREF(ra);
		Py_XDECREF(ta);
	}
	for (int w = 0; w < MAX_WORKERS; ++w) free(j->hits[w].p);
	free(counts);
	free(j);
	return res;
}

static PyObject *Packed_nbytes(Packed *self, PyObject *unused)
{
	(void)unused;
	ort_tree_stats st;
	size_t row;
	if (self->dim == 2) {
		ort2_packed_get_stats(self->c2.tree, &st);
		row = (self->c2.is64 ? 8 : 4) * 4;
	} else {
		ort3_packed_get_stats(self->c3.tree, &st);
		row = (self->c3.is64 ? 8 : 4) * 6;
	}
	return PyLong_FromSize_t(st.bytes + row * (size_t)packed_n(self));
}

static Py_ssize_t Packed_len(Packed *self) { return packed_n(self); }

static PyMethodDef Packed_methods[] = {
    {"query_boxes", (PyCFunction)Packed_query_boxes, METH_VARARGS, "query_boxes(q, workers) -> (qi, ti)"},
    {"pairs", (PyCFunction)Packed_pairs, METH_VARARGS, "pairs(workers) -> (K, 2) int64, sorted"},
    {"pairs_page", (PyCFunction)Packed_pairs_page, METH_VARARGS,
     "pairs_page(row, skip, max_pairs) -> (pairs, next_row, next_skip)"},
    {"nearest", (PyCFunction)Packed_nearest, METH_VARARGS,
     "nearest(points, k, max_distance, exclude, workers) -> (dist, idx)"},
    {"ray", (PyCFunction)Packed_ray, METH_VARARGS, "ray(origins, dirs, max_t, workers) -> (ri, ti, t)"},
    {"nbytes", (PyCFunction)Packed_nbytes, METH_NOARGS, "bytes held: the tree and the kept copy of the boxes"},
    {NULL, NULL, 0, NULL}};

PY_TYPE(Packed, "The packed tree over an (n, 4) or (n, 6) array (private; use orthant.Index).");

// ---- _Dynamic ----------------------------------------------------------------------------
//
// The dynamic tree stores float boxes; float64 input is rounded outward, and
// queries and pairs answer on the stored boxes. Handles are uint64:
// generation << 32 | id. A lock per object keeps threads that share one out of
// each other's way while the GIL is released.

typedef struct {
	PyObject_HEAD int dim;
	ort2_tree *t2;
	ort3_tree *t3;
	PyThread_type_lock lock;
} Dynamic;

static inline uint64_t h2u(ort_handle h) { return (uint64_t)h.gen << 32 | h.id; }
static inline ort_handle u2h(uint64_t u) { return (ort_handle){(uint32_t)u, (uint32_t)(u >> 32)}; }

#define LOCKED(self, stmt)                                                                                   \
	do {                                                                                                     \
		Py_BEGIN_ALLOW_THREADS;                                                                             \
		PyThread_acquire_lock((self)->lock, WAIT_LOCK);                                                     \
		stmt;                                                                                               \
		PyThread_release_lock((self)->lock);                                                                \
		Py_END_ALLOW_THREADS;                                                                               \
	} while (0)

static void Dynamic_dealloc(Dynamic *self)
{
	ort2_tree_destroy(self->t2);
	ort3_tree_destroy(self->t3);
	if (self->lock) PyThread_free_lock(self->lock);
	Py_TYPE(self)->tp_free((PyObject *)self);
}

static int Dynamic_init(Dynamic *self, PyObject *args, PyObject *kw)
{
	static char *names[] = {"dim", "placement", NULL};
	int dim = 2;
	const char *placement = "loose";
	if (!PyArg_ParseTupleAndKeywords(args, kw, "|is", names, &dim, &placement)) return -1;
	if (dim != 2 && dim != 3) {
		PyErr_SetString(PyExc_ValueError, "dim must be 2 or 3");
		return -1;
	}
	ort_placement pl = ORT_PLACEMENT_COUNT;
	for (int p = 0; p < ORT_PLACEMENT_COUNT; ++p)
		if (strcmp(placement, ort_placement_string((ort_placement)p)) == 0) pl = (ort_placement)p;
	if (pl == ORT_PLACEMENT_COUNT) {
		PyErr_Format(PyExc_ValueError, "placement must be \"loose\", \"tight\" or \"leaves\", not \"%s\"", placement);
		return -1;
	}
	if (self->t2 || self->t3) {
		PyErr_SetString(PyExc_RuntimeError, "already made");
		return -1;
	}
	self->lock = PyThread_allocate_lock();
	if (!self->lock) {
		PyErr_NoMemory();
		return -1;
	}
	self->dim = dim;
	ort_result r;
	if (dim == 2) {
		ort2_tree_def def = ort2_tree_default_def();
		def.placement = pl;
		r = ort2_tree_create(&def, &self->t2);
	} else {
		ort3_tree_def def = ort3_tree_default_def();
		def.placement = pl;
		r = ort3_tree_create(&def, &self->t3);
	}
	if (r != ORT_OK) {
		raise_result(r, "DynamicIndex");
		return -1;
	}
	return 0;
}

/// Row i of a checked (m, 2*dim) array as the float box that holds it.
static void dyn_box(int dim, const void *data, int is64, size_t i, ort2_box *b2, ort3_box *b3)
{
	if (dim == 2)
		*b2 = row_box2(data, is64, i, NULL);
	else
		*b3 = row_box3(data, is64, i, NULL);
}

/// A (1, 2*dim) array as the float box that holds its one row.
static bool take_one_box(int dim, PyObject *arr, ort2_box *b2, ort3_box *b3)
{
	const void *data;
	int is64;
	size_t m;
	if (!take_array(arr, 2 * dim, "box", &data, &is64, &m)) return false;
	if (m != 1) {
		PyErr_SetString(PyExc_ValueError, "box: one box expected");
		return false;
	}
	if (!check_rows_boxes(dim, data, is64, m, "box")) return false;
	dyn_box(dim, data, is64, 0, b2, b3);
	return true;
}

static PyObject *Dynamic_insert_many(Dynamic *self, PyObject *args)
{
	PyObject *arr;
	if (!PyArg_ParseTuple(args, "O", &arr)) return NULL;
	const void *data;
	int is64;
	size_t m;
	if (!take_array(arr, 2 * self->dim, "boxes", &data, &is64, &m)) return NULL;
	if (!check_rows_boxes(self->dim, data, is64, m, "boxes")) return NULL;
	npy_intp dims[1] = {(npy_intp)m};
	PyObject *out = PyArray_SimpleNew(1, dims, NPY_UINT64);
	if (!out) return NULL;
	uint64_t *o = PyArray_DATA((PyArrayObject *)out);
	ort_handle *h = malloc((m ? m : 1) * sizeof *h);
	void *boxes = malloc((m ? m : 1) * (self->dim == 2 ? sizeof(ort2_box) : sizeof(ort3_box)));
	if (!h || !boxes) {
		free(h);
		free(boxes);
		Py_DECREF(out);
		return PyErr_NoMemory();
	}
	ort_result r;
	LOCKED(self, {
		for (size_t i = 0; i < m; ++i)
			dyn_box(self->dim, data, is64, i, (ort2_box *)boxes + i, (ort3_box *)boxes + i);
		r = self->dim == 2 ? ort2_tree_build(self->t2, boxes, NULL, (int)m, h)
		                   : ort3_tree_build(self->t3, boxes, NULL, (int)m, h);
		if (r == ORT_OK)
			for (size_t i = 0; i < m; ++i) o[i] = h2u(h[i]);
	});
	free(h);
	free(boxes);
	if (r != ORT_OK) {
		Py_DECREF(out);
		return raise_result(r, "insert");
	}
	return out;
}

static PyObject *Dynamic_move(Dynamic *self, PyObject *args)
{
	unsigned long long u;
	PyObject *arr;
	if (!PyArg_ParseTuple(args, "KO", &u, &arr)) return NULL;
	ort2_box b2;
	ort3_box b3;
	if (!take_one_box(self->dim, arr, &b2, &b3)) return NULL;
	ort_result r;
	LOCKED(self, r = self->dim == 2 ? ort2_tree_move(self->t2, u2h(u), b2) : ort3_tree_move(self->t3, u2h(u), b3));
	if (r != ORT_OK) return raise_result(r, "move");
	Py_RETURN_NONE;
}

static PyObject *Dynamic_remove(Dynamic *self, PyObject *args)
{
	unsigned long long u;
	if (!PyArg_ParseTuple(args, "K", &u)) return NULL;
	ort_result r;
	LOCKED(self, r = self->dim == 2 ? ort2_tree_remove(self->t2, u2h(u)) : ort3_tree_remove(self->t3, u2h(u)));
	if (r != ORT_OK) return raise_result(r, "remove");
	Py_RETURN_NONE;
}

static PyObject *Dynamic_box(Dynamic *self, PyObject *args)
{
	unsigned long long u;
	if (!PyArg_ParseTuple(args, "K", &u)) return NULL;
	ort2_box b2;
	ort3_box b3;
	ort_result r;
	LOCKED(self, r = self->dim == 2 ? ort2_tree_get_box(self->t2, u2h(u), &b2) : ort3_tree_get_box(self->t3, u2h(u), &b3));
	if (r != ORT_OK) return raise_result(r, "box");
	if (self->dim == 2) return Py_BuildValue("(dddd)", b2.min[0], b2.min[1], b2.max[0], b2.max[1]);
	return Py_BuildValue("(dddddd)", b3.min[0], b3.min[1], b3.min[2], b3.max[0], b3.max[1], b3.max[2]);
}

static PyObject *Dynamic_contains(Dynamic *self, PyObject *args)
{
	unsigned long long u;
	if (!PyArg_ParseTuple(args, "K", &u)) return NULL;
	bool v;
	LOCKED(self, v = self->dim == 2 ? ort2_tree_is_valid(self->t2, u2h(u)) : ort3_tree_is_valid(self->t3, u2h(u)));
	return PyBool_FromLong(v);
}

static Py_ssize_t Dynamic_len(Dynamic *self)
{
	return self->dim == 2 ? ort2_tree_count(self->t2) : ort3_tree_count(self->t3);
}

static int cmp_u64(const void *a, const void *b)
{
	uint64_t x = *(const uint64_t *)a, y = *(const uint64_t *)b;
	return (x > y) - (x < y);
}

static int cmp_u64pair(const void *a, const void *b)
{
	const uint64_t *x = a, *y = b;
	int c = cmp_u64(&x[0], &y[0]);
	return c ? c : cmp_u64(&x[1], &y[1]);
}

static bool dyn_on_hit(void *ctx, ort_handle h, void *ud)
{
	(void)ud;
	return u64vec_push(ctx, h2u(h));
}

static bool dyn_on_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua;
	(void)ub;
	uint64_t x = h2u(a), y = h2u(b);
	return u64vec_push(ctx, x < y ? x : y) && u64vec_push(ctx, x < y ? y : x);
}


static PyObject *u64_array(u64vec *v, int cols)
{
	npy_intp dims[2] = {(npy_intp)(v->n / (size_t)cols), cols};
	PyObject *a = PyArray_SimpleNew(cols == 1 ? 1 : 2, dims, NPY_UINT64);
	if (a && v->n) memcpy(PyArray_DATA((PyArrayObject *)a), v->p, v->n * sizeof *v->p);
	return a;
}

static PyObject *Dynamic_query(Dynamic *self, PyObject *args)
{
	PyObject *arr;
	if (!PyArg_ParseTuple(args, "O", &arr)) return NULL;
	ort2_box b2;
	ort3_box b3;
	if (!take_one_box(self->dim, arr, &b2, &b3)) return NULL;
	u64vec v = {0};
	ort_result r;
	LOCKED(self, {
		r = self->dim == 2 ? ort2_tree_query_box(self->t2, b2, ORT_MASK_ALL, dyn_on_hit, &v)
		                   : ort3_tree_query_box(self->t3, b3, ORT_MASK_ALL, dyn_on_hit, &v);
		if (v.n) qsort(v.p, v.n, sizeof *v.p, cmp_u64);
	});
	PyObject *res = v.failed ? PyErr_NoMemory() : r != ORT_OK ? raise_result(r, "query") : u64_array(&v, 1);
	free(v.p);
	return res;
}

static PyObject *Dynamic_pairs(Dynamic *self, PyObject *unused)
{
	(void)unused;
	u64vec v = {0};
	ort_result r;
	LOCKED(self, {
		r = self->dim == 2 ? ort2_tree_find_pairs(self->t2, ORT_MASK_ALL, dyn_on_pair, &v)
		                   : ort3_tree_find_pairs(self->t3, ORT_MASK_ALL, dyn_on_pair, &v);
		if (v.n) qsort(v.p, v.n / 2, 2 * sizeof *v.p, cmp_u64pair);
	});
	PyObject *res = v.failed ? PyErr_NoMemory() : r != ORT_OK ? raise_result(r, "pairs") : u64_array(&v, 2);
	free(v.p);
	return res;
}

static void dyn_on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	dyn_on_pair(&((u64vec *)ctx)[0], a, b, ua, ub);
}

static void dyn_on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	dyn_on_pair(&((u64vec *)ctx)[1], a, b, ua, ub);
}

static PyObject *Dynamic_update_pairs(Dynamic *self, PyObject *unused)
{
	(void)unused;
	u64vec ev[2] = {{0}, {0}}; // began, ended
	ort_result r;
	LOCKED(self, {
		r = self->dim == 2 ? ort2_tree_update_pairs(self->t2, dyn_on_begin, dyn_on_end, ev)
		                   : ort3_tree_update_pairs(self->t3, dyn_on_begin, dyn_on_end, ev);
		for (int e = 0; e < 2; ++e)
			if (ev[e].n) qsort(ev[e].p, ev[e].n / 2, 2 * sizeof *ev[e].p, cmp_u64pair);
	});
	PyObject *res = NULL;
	if (ev[0].failed || ev[1].failed)
		PyErr_NoMemory();
	else if (r != ORT_OK)
		raise_result(r, "update_pairs");
	else
		res = Py_BuildValue("(NN)", u64_array(&ev[0], 2), u64_array(&ev[1], 2));
	free(ev[0].p);
	free(ev[1].p);
	return res;
}

static PyMethodDef Dynamic_methods[] = {
    {"insert_many", (PyCFunction)Dynamic_insert_many, METH_VARARGS, "insert_many(boxes) -> uint64 handles"},
    {"move", (PyCFunction)Dynamic_move, METH_VARARGS, "move(handle, box)"},
    {"remove", (PyCFunction)Dynamic_remove, METH_VARARGS, "remove(handle)"},
    {"box", (PyCFunction)Dynamic_box, METH_VARARGS, "box(handle) -> the stored (float) box"},
    {"contains", (PyCFunction)Dynamic_contains, METH_VARARGS, "contains(handle) -> bool"},
    {"query", (PyCFunction)Dynamic_query, METH_VARARGS, "query(box) -> sorted uint64 handles"},
    {"pairs", (PyCFunction)Dynamic_pairs, METH_NOARGS, "pairs() -> (K, 2) uint64 handles, sorted"},
    {"update_pairs", (PyCFunction)Dynamic_update_pairs, METH_NOARGS, "update_pairs() -> (began, ended)"},
    {NULL, NULL, 0, NULL}};

PY_TYPE(Dynamic, "The dynamic tree (private; use orthant.DynamicIndex).");

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
