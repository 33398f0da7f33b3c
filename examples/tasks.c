// tasks.c: orthant on the caller's own job system.
//
// An engine already has worker threads. Here it is a small one — a queue of
// ranges served by three threads, the calling thread helping while it waits —
// handed to orthant through ort_tasks_def.enqueue and .finish (the shape of
// Box2D v3's enqueueTask/finishTask). The packed tree's build and find_pairs
// and the dynamic tree's find_pairs then run on it, and report exactly what
// they report serially, in the same order.
#define _POSIX_C_SOURCE 200809L
#include <orthant/orthant2.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

// ---- the engine's job system ----------------------------------------------------

enum { THREADS = 3, MAX_RANGES = 4096 };

typedef struct range {
	ort_task_fn *task;
	void *ctx;
	int begin, end;
} range;

typedef struct job_system {
	pthread_t threads[THREADS];
	pthread_mutex_t mu;
	pthread_cond_t work, idle;
	range queue[MAX_RANGES];
	int head, tail;  ///< ranges waiting: queue[head..tail)
	int running;     ///< ranges taken and not finished
	int quit;
} job_system;

/// Take a range and run it; false when there was none. Called with mu held.
static int run_one(job_system *js, int worker)
{
	if (js->head == js->tail) return 0;
	range r = js->queue[js->head++];
	js->running++;
	pthread_mutex_unlock(&js->mu);
	r.task(r.begin, r.end, worker, r.ctx);
	pthread_mutex_lock(&js->mu);
	if (--js->running == 0 && js->head == js->tail) pthread_cond_broadcast(&js->idle);
	return 1;
}

static void *worker_main(void *arg)
{
	job_system *js = arg;
	int worker = 0;
	pthread_mutex_lock(&js->mu);
	for (int i = 0; i < THREADS; ++i)
		if (pthread_equal(js->threads[i], pthread_self())) worker = i + 1;
	while (!js->quit)
		if (!run_one(js, worker)) pthread_cond_wait(&js->work, &js->mu);
	pthread_mutex_unlock(&js->mu);
	return NULL;
}

/// orthant's enqueue: cut [0, count) into ranges of min_range and queue them.
static void *engine_enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user)
{
	job_system *js = user;
	int step = min_range < 1 ? 1 : min_range;
	if ((count + step - 1) / step > MAX_RANGES) step = (count + MAX_RANGES - 1) / MAX_RANGES;
	pthread_mutex_lock(&js->mu);
	js->head = js->tail = 0;
	for (int b = 0; b < count; b += step)
		js->queue[js->tail++] = (range){task, task_ctx, b, count - b > step ? b + step : count};
	pthread_cond_broadcast(&js->work);
	pthread_mutex_unlock(&js->mu);
	return js;
}

/// orthant's finish: help until the queue is empty and every range is done.
static void engine_finish(void *handle, void *user)
{
	(void)handle;
	job_system *js = user;
	pthread_mutex_lock(&js->mu);
	while (run_one(js, 0)) {
	}
	while (js->running > 0) pthread_cond_wait(&js->idle, &js->mu);
	pthread_mutex_unlock(&js->mu);
}

static int job_system_start(job_system *js)
{
	*js = (job_system){0};
	pthread_mutex_init(&js->mu, NULL);
	pthread_cond_init(&js->work, NULL);
	pthread_cond_init(&js->idle, NULL);
	pthread_mutex_lock(&js->mu); // the workers read their ids once all are set
	for (int i = 0; i < THREADS; ++i)
		if (pthread_create(&js->threads[i], NULL, worker_main, js) != 0) return -1;
	pthread_mutex_unlock(&js->mu);
	return 0;
}

static void job_system_stop(job_system *js)
{
	pthread_mutex_lock(&js->mu);
	js->quit = 1;
	pthread_cond_broadcast(&js->work);
	pthread_mutex_unlock(&js->mu);
	for (int i = 0; i < THREADS; ++i) pthread_join(js->threads[i], NULL);
	pthread_cond_destroy(&js->idle);
	pthread_cond_destroy(&js->work);
	pthread_mutex_destroy(&js->mu);
}

// ---- the scene ------------------------------------------------------------------------

enum { COUNT = 200000 };

/// The pairs as a count and an order-dependent hash: equal only for the same sequence.
typedef struct digest {
	long count;
	unsigned long long hash;
} digest;

static bool on_pair(void *ctx, uint32_t a, uint32_t b)
{
	digest *d = ctx;
	d->count++;
	d->hash = (d->hash ^ ((unsigned long long)a << 32 | b)) * 1099511628211ull;
	return true;
}

static bool on_tree_pair(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	return on_pair(ctx, a.id, b.id);
}

/// Build the packed tree and find its pairs, then the same with the dynamic tree.
static int run(const ort2_box *boxes, ort_tasks *tasks, digest *packed, digest *tree)
{
	ort2_packed_def pdef = ort2_packed_default_def();
	pdef.tasks = tasks; // NULL: on the calling thread
	ort2_packed *p;
	if (ort2_packed_create(&pdef, &p) != ORT_OK || ort2_packed_build(p, boxes, COUNT) != ORT_OK) return -1;
	if (ort2_packed_find_pairs(p, on_pair, packed) != ORT_OK) return -1;
	ort2_packed_destroy(p);
	ort2_tree_def tdef = ort2_tree_default_def();
	tdef.tasks = tasks;
	ort2_tree *t;
	if (ort2_tree_create(&tdef, &t) != ORT_OK || ort2_tree_build(t, boxes, NULL, COUNT, NULL) != ORT_OK) return -1;
	if (ort2_tree_find_pairs(t, ORT_MASK_ALL, on_tree_pair, tree) != ORT_OK) return -1;
	ort2_tree_destroy(t);
	return 0;
}

int main(void)
{
	ort2_box *boxes = malloc(sizeof *boxes * COUNT);
	if (!boxes) return 1;
	srand(7);
	for (int i = 0; i < COUNT; ++i) {
		float x = (float)(rand() % 100000) / 100.0f, y = (float)(rand() % 100000) / 100.0f;
		boxes[i] = (ort2_box){{x, y}, {x + 1.5f, y + 1.5f}};
	}

	job_system js;
	if (job_system_start(&js) != 0) return 1;
	ort_tasks_def def = ort_tasks_default_def();
	def.workers = THREADS + 1; // the engine's threads and the one that calls orthant
	def.enqueue = engine_enqueue;
	def.finish = engine_finish;
	def.user_ctx = &js;
	ort_tasks *tasks;
	if (ort_tasks_create(&def, &tasks) != ORT_OK) return 1;

	digest serial_p = {0, 14695981039346656037ull}, serial_t = serial_p, jobs_p = serial_p, jobs_t = serial_p;
	if (run(boxes, NULL, &serial_p, &serial_t) != 0 || run(boxes, tasks, &jobs_p, &jobs_t) != 0) return 1;
	printf("packed tree: %ld pairs serially, %ld on the job system, %s\n", serial_p.count, jobs_p.count,
	       serial_p.hash == jobs_p.hash ? "same sequence" : "DIFFERENT");
	printf("dynamic tree: %ld pairs serially, %ld on the job system, %s\n", serial_t.count, jobs_t.count,
	       serial_t.hash == jobs_t.hash ? "same sequence" : "DIFFERENT");

	ort_tasks_destroy(tasks);
	job_system_stop(&js);
	free(boxes);
	return serial_p.hash == jobs_p.hash && serial_t.hash == jobs_t.hash ? 0 : 1;
}
