// task.c: execution contexts (include/orthant/task.h) — the serial path, the
// caller's task system, the built-in pool, and the job buffers of task_int.h.
//
// The built-in pool (left out when ORTHANT_NO_THREADS is defined) is the
// smallest thing that serves orthant's one-task-at-a-time calls: workers - 1
// threads sleep on a condition variable; enqueue publishes the task and bumps
// a generation; every thread, the caller's included (in finish), claims
// ranges of min_range items from one atomic counter until none are left, so
// uneven jobs balance themselves; finish returns when the last thread has
// checked out of the generation.
#if (!defined(ORTHANT_NO_THREADS) || defined(__unix__)) && !defined(_POSIX_C_SOURCE)
#define _POSIX_C_SOURCE 200809L
#endif
#include <assert.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#include "mem.h"
#include "task_int.h"

#if defined(__unix__) || defined(__APPLE__)
#include <sched.h>
#define TK_HAVE_SCHED_YIELD 1
#endif

#ifndef ORTHANT_NO_THREADS
#include <pthread.h>

typedef struct tk_pool {
	pthread_t *threads;
	int nthreads; ///< started and not yet joined
	int room;     ///< threads the block at `threads` was made for
	pthread_mutex_t mu;
	pthread_cond_t wake, done;
	// The task of the current generation, written under mu before it is bumped.
	ort_task_fn *task;
	void *task_ctx;
	int count, grain;
	atomic_int next;   ///< the next item to claim
	unsigned generation;
	int busy;          ///< threads still in the current generation
	bool quit;
} tk_pool;

typedef struct tk_worker {
	tk_pool *pool;
	int index;
} tk_worker;

/// Claim and run ranges of the current task until none are left.
static void tk_pool_work(tk_pool *p, int worker)
{
	for (;;) {
		int begin = atomic_fetch_add_explicit(&p->next, p->grain, memory_order_relaxed);
		if (begin >= p->count) return;
		int end = p->count - begin > p->grain ? begin + p->grain : p->count;
		p->task(begin, end, worker, p->task_ctx);
	}
}

static void *tk_pool_main(void *arg)
{
	tk_worker *w = arg;
	tk_pool *p = w->pool;
	unsigned seen = 0;
	pthread_mutex_lock(&p->mu);
	for (;;) {
		while (!p->quit && p->generation == seen) pthread_cond_wait(&p->wake, &p->mu);
		if (p->quit) break;
		seen = p->generation;
		pthread_mutex_unlock(&p->mu);
		tk_pool_work(p, w->index);
		pthread_mutex_lock(&p->mu);
		if (--p->busy == 0) pthread_cond_signal(&p->done);
	}
	pthread_mutex_unlock(&p->mu);
	return NULL;
}

static void *tk_pool_enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user_ctx)
{
	tk_pool *p = user_ctx;
	pthread_mutex_lock(&p->mu);
	assert(p->busy == 0); // one task at a time: finish came before this enqueue
	p->task = task;
	p->task_ctx = task_ctx;
	p->count = count;
	p->grain = min_range > 0 ? min_range : 1;
	atomic_store_explicit(&p->next, 0, memory_order_relaxed);
	p->busy = p->nthreads;
	p->generation++;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	return p;
}

static void tk_pool_finish(void *user_task, void *user_ctx)
{
	(void)user_task;
	tk_pool *p = user_ctx;
	tk_pool_work(p, 0);
	pthread_mutex_lock(&p->mu);
	while (p->busy > 0) pthread_cond_wait(&p->done, &p->mu);
	pthread_mutex_unlock(&p->mu);
}

static void tk_pool_stop(tk_pool *p, const ort_allocator *a)
{
	pthread_mutex_lock(&p->mu);
	p->quit = true;
	pthread_cond_broadcast(&p->wake);
	pthread_mutex_unlock(&p->mu);
	for (int i = 0; i < p->nthreads; ++i) pthread_join(p->threads[i], NULL);
	pthread_cond_destroy(&p->done);
	pthread_cond_destroy(&p->wake);
	pthread_mutex_destroy(&p->mu);
	allocator_free(a, p->threads, (size_t)p->room * (sizeof(pthread_t) + sizeof(tk_worker)));
	allocator_free(a, p, sizeof *p);
}

/// A pool of n threads (workers 1..n; the caller is worker 0), or NULL.
static tk_pool *tk_pool_start(int n, const ort_allocator *a)
{
	tk_pool *p = allocator_alloc(a, sizeof *p);
	if (!p) return NULL;
	memset(p, 0, sizeof *p);
	// One block: the thread ids, then each thread's argument.
	size_t bytes = (size_t)n * (sizeof(pthread_t) + sizeof(tk_worker));
	p->threads = allocator_alloc(a, bytes);
	p->room = n;
	if (!p->threads || pthread_mutex_init(&p->mu, NULL) != 0) {
		allocator_free(a, p->threads, bytes);
		allocator_free(a, p, sizeof *p);
		return NULL;
	}
	pthread_cond_init(&p->wake, NULL);
	pthread_cond_init(&p->done, NULL);
	atomic_init(&p->next, 0);
	tk_worker *args = (tk_worker *)(void *)(p->threads + n);
	for (int i = 0; i < n; ++i) {
		args[i] = (tk_worker){p, i + 1};
		if (pthread_create(&p->threads[i], NULL, tk_pool_main, &args[i]) != 0) {
			tk_pool_stop(p, a); // joins the threads started so far
			return NULL;
		}
		p->nthreads = i + 1;
	}
	return p;
}
#endif

struct ort_tasks {
	ort_tasks_def def;
	atomic_bool busy;
	void *pool; ///< the built-in pool, or NULL
	tk_out *outs;
	int out_cap;
	int *rerun; ///< [out_cap] jobs to run again
	int bufs;   ///< buffers per job in the last tk_run
	void *scratch;
	size_t scratch_cap;
	size_t bytes;
};

ort_tasks_def ort_tasks_default_def(void) { return (ort_tasks_def){.workers = 1}; }

ort_result ort_tasks_create(const ort_tasks_def *def, ort_tasks **out)
{
	if (out) *out = NULL;
	if (!def || !out || def->workers > 1024) return ORT_ERROR_INVALID_ARGUMENT;
	if (!def->enqueue != !def->finish || !def->allocator.alloc != !def->allocator.free)
		return ORT_ERROR_INVALID_ARGUMENT;
	ort_tasks *t = allocator_alloc(&def->allocator, sizeof *t);
	if (!t) return ORT_ERROR_OUT_OF_MEMORY;
	memset(t, 0, sizeof *t);
	t->def = *def;
	if (t->def.workers < 1) t->def.workers = 1;
	atomic_init(&t->busy, false);
	t->bytes = sizeof *t;
	if (t->def.workers > 1 && !t->def.enqueue) {
#ifndef ORTHANT_NO_THREADS
		t->pool = tk_pool_start(t->def.workers - 1, &def->allocator);
		if (!t->pool) {
			allocator_free(&def->allocator, t, sizeof *t);
			return ORT_ERROR_OUT_OF_MEMORY;
		}
		t->def.enqueue = tk_pool_enqueue;
		t->def.finish = tk_pool_finish;
		t->def.user_ctx = t->pool;
#else
		t->def.workers = 1; // no threads in this build: serial, and ort_tasks_workers says so
#endif
	}
	*out = t;
	return ORT_OK;
}

void ort_tasks_destroy(ort_tasks *t)
{
	if (!t) return;
	const ort_allocator *a = &t->def.allocator;
#ifndef ORTHANT_NO_THREADS
	if (t->pool) tk_pool_stop(t->pool, a);
#endif
	for (int j = 0; j < t->out_cap; ++j) allocator_free(a, t->outs[j].data, t->outs[j].cap);
	allocator_free(a, t->outs, (size_t)t->out_cap * (sizeof *t->outs + sizeof *t->rerun));
	allocator_free(a, t->scratch, t->scratch_cap);
	ort_allocator keep = *a;
	allocator_free(&keep, t, sizeof *t);
}

int ort_tasks_workers(const ort_tasks *t) { return t ? t->def.workers : 1; }

size_t ort_tasks_bytes(const ort_tasks *t) { return t ? t->bytes : 0; }

// ---- what the modules use (task_int.h) ---------------------------------------------

bool ort_tk_acquire(ort_tasks *t)
{
	if (!t || t->def.workers < 2) return false;
	bool idle = false;
	return atomic_compare_exchange_strong(&t->busy, &idle, true);
}

void ort_tk_release(ort_tasks *t)
{
	assert(atomic_load(&t->busy));
	atomic_store(&t->busy, false);
}

void ort_tk_backoff(unsigned spins)
{
	if (spins < 64) {
#if defined(__GNUC__) && (defined(__x86_64__) || defined(__i386__))
		__builtin_ia32_pause();
#elif defined(__GNUC__) && defined(__aarch64__)
		__asm__ __volatile__("yield");
#endif
		return;
	}
#ifdef TK_HAVE_SCHED_YIELD
	sched_yield();
#endif
}

void *ort_tk_scratch(ort_tasks *t, size_t size)
{
	if (size == 0) size = 1; // NULL only for a refusal
	if (size <= t->scratch_cap) return t->scratch;
	size_t cap = size + size / 4 + 256;
	void *m = allocator_alloc(&t->def.allocator, cap);
	if (!m) return NULL;
	allocator_free(&t->def.allocator, t->scratch, t->scratch_cap);
	t->bytes += cap - t->scratch_cap;
	t->scratch = m;
	t->scratch_cap = cap;
	return m;
}

/// Room for `jobs` outputs (and as many rerun slots); new ones start empty.
static bool tk_outs_reserve(ort_tasks *t, int jobs)
{
	if (jobs <= t->out_cap) return true;
	int cap = jobs + jobs / 4 + 16;
	size_t each = sizeof *t->outs + sizeof *t->rerun;
	tk_out *outs = allocator_alloc(&t->def.allocator, (size_t)cap * each);
	if (!outs) return false;
	memset(outs, 0, (size_t)cap * sizeof *outs);
	if (t->out_cap) memcpy(outs, t->outs, (size_t)t->out_cap * sizeof *outs);
	allocator_free(&t->def.allocator, t->outs, (size_t)t->out_cap * each);
	t->bytes += (size_t)(cap - t->out_cap) * each;
	t->outs = outs;
	t->rerun = (int *)(void *)(outs + cap);
	t->out_cap = cap;
	return true;
}

/// One dispatch: jobs map[0..count) (or 0..count), with `bufs` buffers each or none.
typedef struct tk_call {
	tk_job_fn *fn;
	void *ctx;
	tk_out *outs;
	int bufs;
	const int *map;
} tk_call;

static void tk_task(int begin, int end, int worker, void *arg)
{
	(void)worker;
	const tk_call *c = arg;
	for (int i = begin; i < end; ++i) {
		int job = c->map ? c->map[i] : i;
		c->fn(c->ctx, job, c->outs ? &c->outs[job * c->bufs] : NULL);
	}
}

static void tk_dispatch(ort_tasks *t, int count, tk_call *call)
{
	if (count <= 0) return;
	void *h = t->def.enqueue(tk_task, count, 1, call, t->def.user_ctx);
	if (h) t->def.finish(h, t->def.user_ctx);
}

void ort_tk_for(ort_tasks *t, int jobs, tk_job_fn *fn, void *ctx)
{
	tk_call call = {fn, ctx, NULL, 0, NULL};
	tk_dispatch(t, jobs, &call);
}

/// Grow buffer o to hold what it asked for (o->used); false if refused.
static bool tk_out_grow(ort_tasks *t, tk_out *o)
{
	size_t cap = o->used + o->used / 4 + 4096;
	unsigned char *m = allocator_alloc(&t->def.allocator, cap);
	if (!m) return false;
	allocator_free(&t->def.allocator, o->data, o->cap);
	t->bytes += cap - o->cap;
	o->data = m;
	o->cap = cap;
	return true;
}

ort_result ort_tk_run(ort_tasks *t, int jobs, int bufs, tk_job_fn *fn, void *ctx)
{
	assert(bufs >= 1 && bufs <= 2);
	if (jobs > INT32_MAX / bufs || !tk_outs_reserve(t, jobs * bufs)) return ORT_ERROR_OUT_OF_MEMORY;
	tk_call call = {fn, ctx, t->outs, bufs, NULL};
	int count = jobs;
	t->bufs = bufs;
	// Run every job; then, while some asked for more room than they had,
	// grow their buffers here and run those again (a job's first buffer
	// counts all it would write, a second one, its scratch, what it needed
	// when it gave up, so this ends).
	for (;;) {
		for (int i = 0; i < count; ++i) {
			int job = call.map ? call.map[i] : i;
			for (int k = 0; k < bufs; ++k) t->outs[job * bufs + k].used = 0;
		}
		tk_dispatch(t, count, &call);
		int again = 0;
		for (int i = 0; i < count; ++i) {
			int job = call.map ? call.map[i] : i;
			bool redo = false;
			for (int k = 0; k < bufs; ++k) {
				tk_out *o = &t->outs[job * bufs + k];
				if (o->used <= o->cap) continue;
				if (!tk_out_grow(t, o)) return ORT_ERROR_OUT_OF_MEMORY;
				redo = true;
			}
			if (redo) t->rerun[again++] = job; // again <= i: the map is read ahead of this write
		}
		if (again == 0) return ORT_OK;
		call.map = t->rerun;
		count = again;
	}
}

const tk_out *ort_tk_output(const ort_tasks *t, int job)
{
	assert(job >= 0 && (job + 1) * t->bufs <= t->out_cap);
	return &t->outs[job * t->bufs];
}
