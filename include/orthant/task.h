// SPDX-License-Identifier: MIT. Copyright (c) 2026 the orthant authors; the terms are in LICENSE.
/// @file task.h
/// orthant: running a call on several cores — through the caller's task
/// system, a small built-in pool of threads, or (the default) none.
///
/// The calls that can split their work are ortN_packed_build, ortN_packed_find_pairs,
/// ortN_tree_build (loose and tight, into an empty tree), ortN_tree_find_pairs and
/// the batched queries ortN_tree_query_boxes, _points and
/// _rays. Each takes the ort_tasks named in its tree's definition (or set later
/// with ortN_tree_set_tasks / ortN_packed_set_tasks); NULL, the default, runs it
/// on the calling thread as before.
///
/// The interface is the one Box2D v3 (b2WorldDef.enqueueTask and finishTask)
/// and other engines' job systems use, so an engine hands orthant the scheduler
/// it already has:
///
///     static void *enqueue(ort_task_fn *task, int count, int min_range, void *task_ctx, void *user)
///     {
///         // run task(begin, end, worker, task_ctx) over ranges tiling [0, count),
///         // each at least min_range long (the last may be shorter), on up to
///         // `workers` threads at once; return a handle for finish, or NULL after
///         // running it all here.
///     }
///     static void finish(void *handle, void *user) { // wait until that task is done }
///
/// Without callbacks, ort_tasks_create with workers > 1 starts workers - 1
/// threads of its own (the calling thread is the last worker) and keeps them
/// until ort_tasks_destroy. Nothing is global: each ort_tasks is the caller's.
///
/// What is guaranteed:
/// - Results are the same, in the same order, for every worker count and every
///   task system: the work is cut into jobs by the data alone (never by the
///   number of threads), each job writes into its own buffer, and the buffers
///   are read in job order.
/// - The caller's callbacks (a pair function, ...) are called on the calling
///   thread only, one at a time, in that order — never from a worker. Only
///   orthant's own code runs on the workers, and it only reads the tree.
/// - The job buffers belong to the ort_tasks and are kept between calls, so a
///   scene whose output does not outgrow earlier frames allocates nothing.
///   When a buffer must grow it grows on the calling thread, through the
///   context's allocator (the workers never allocate); if that fails the call
///   returns ORT_ERROR_OUT_OF_MEMORY and the tree is unchanged.
/// - An ort_tasks serves one call at a time. A call that finds it busy (another
///   thread is using it) runs on its own thread instead, with the same result.
#ifndef ORTHANT_TASK_H
#define ORTHANT_TASK_H

#include "orthant/base.h"

#ifdef __cplusplus
extern "C" {
#endif

/// A piece of work: items [begin, end) of a task, run by worker `worker`
/// (0 <= worker < workers; a task system may report any index in range).
typedef void ort_task_fn(int begin, int end, int worker, void *task_ctx);

/// Start a task of item_count items, split into ranges of at least min_range
/// items. Returns a handle that finish gets, or NULL when the task already ran
/// to its end inside enqueue (then finish is not called).
typedef void *ort_enqueue_task_fn(ort_task_fn *task, int item_count, int min_range, void *task_ctx,
                                  void *user_ctx);

/// Wait until the task enqueue returned `user_task` for has run every item.
typedef void ort_finish_task_fn(void *user_task, void *user_ctx);

/// How to make an ort_tasks. Start from ort_tasks_default_def().
typedef struct ort_tasks_def {
	/// Threads that may run one task at once, the calling thread included.
	/// <= 1 (the default): every call runs serially.
	int workers;
	/// The caller's task system: both set or neither (ORT_ERROR_INVALID_ARGUMENT).
	/// Neither, with workers > 1: the built-in pool.
	ort_enqueue_task_fn *enqueue;
	ort_finish_task_fn *finish;
	void *user_ctx; ///< handed to enqueue and finish
	/// Where the job buffers come from; zeroed means malloc/free. Only the
	/// calling thread allocates, so it need not be thread-safe.
	ort_allocator allocator;
} ort_tasks_def;

/// An execution context: a worker count, a task system and the job buffers.
typedef struct ort_tasks ort_tasks;

/// The defaults: one worker (serial), no callbacks, malloc/free.
ORTHANT_API ort_tasks_def ort_tasks_default_def(void);

/// Make a context. With workers > 1 and no callbacks this starts the built-in
/// pool's workers - 1 threads (a build without threads, ORTHANT_THREADS off,
/// makes a serial context instead: see ort_tasks_workers). On failure *out
/// is NULL and the result says why.
ORTHANT_API ort_result ort_tasks_create(const ort_tasks_def *def, ort_tasks **out);

/// Stop the pool's threads and free everything. NULL is ignored. No call may
/// be using the context, and no tree may still name it when it is next used.
ORTHANT_API void ort_tasks_destroy(ort_tasks *tasks);

/// Workers the context splits work for (1 for a serial one or NULL).
ORTHANT_API int ort_tasks_workers(const ort_tasks *tasks);

/// Bytes the context holds from its allocator (its job buffers grow to the
/// largest output a call has had, and stay).
ORTHANT_API size_t ort_tasks_bytes(const ort_tasks *tasks);

#ifdef __cplusplus
}
#endif

#endif
