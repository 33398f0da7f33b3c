// task_int.h: how the dimension-generic modules split a call into jobs
// (src/task.c; the public side is include/orthant/task.h).
//
// A parallel call runs on the calling thread in three steps:
//   1. it cuts its work into jobs from the data alone — the same jobs for any
//      number of workers — and describes them in scratch memory (tk_scratch);
//   2. tk_run runs every job on the workers; job j writes what it finds into
//      its own output buffer (tk_put), which counts past the end instead of
//      writing there; jobs that overflowed get larger buffers (allocated here,
//      on the calling thread) and run again — they are pure, so the second run
//      finds the same;
//   3. it reads the outputs in job order (tk_output) and calls the caller's
//      callbacks. So the output and its order never depend on the workers.
// tk_acquire / tk_release bracket the whole call: a context serves one call
// at a time, and a call that cannot have it runs serially.
#ifndef ORTHANT_SRC_TASK_INT_H
#define ORTHANT_SRC_TASK_INT_H

#include <string.h>

#include "orthant/task.h"

/// One job's output: bytes written while they fit in cap, always counted.
typedef struct tk_out {
	unsigned char *data;
	size_t cap, used;
} tk_out;

/// Append size bytes to a job's output.
static inline void tk_put(tk_out *o, const void *rec, size_t size)
{
	if (o->used + size <= o->cap) memcpy(o->data + o->used, rec, size);
	o->used += size;
}

/// A job: job index, and its buffers (NULL under tk_for): out[0] its output,
/// out[1] (when tk_run was asked for two) scratch it may use as it likes — to
/// ask for more, it sets out[1].used past out[1].cap and gives up.
typedef void tk_job_fn(void *ctx, int job, tk_out *out);

/// Jobs a call should cut its work into for up to 64 workers: enough that
/// uneven jobs still balance, few enough that each is worth a dispatch.
#define TK_JOBS_TARGET 256

/// True when a call should split its work through tasks (non-NULL, more than
/// one worker, not in use by another call); it then holds the context until
/// tk_release.
bool ort_tk_acquire(ort_tasks *tasks);
void ort_tk_release(ort_tasks *tasks);

/// One turn of a wait on another thread's short step (a detached tree's
/// attach): a pause hint for the first 64 spins, then the core is given up.
/// A waiter that only spun would burn the time slice the thread it waits for
/// needs whenever threads outnumber cores (and under valgrind, which runs one
/// thread at a time).
void ort_tk_backoff(unsigned spins);

/// At least size bytes of the calling thread's scratch, kept between calls
/// (NULL if the allocator refused). Its contents are lost by the next call.
void *ort_tk_scratch(ort_tasks *tasks, size_t size);

/// Run jobs [0, jobs) on the workers, each with `bufs` (1 or 2) buffers of
/// its own (see above). ORT_ERROR_OUT_OF_MEMORY when a buffer could not grow.
ort_result ort_tk_run(ort_tasks *tasks, int jobs, int bufs, tk_job_fn *fn, void *ctx);

/// The output (first buffer) of job j of the last tk_run.
const tk_out *ort_tk_output(const ort_tasks *tasks, int job);

/// Run jobs [0, jobs) on the workers, without outputs.
void ort_tk_for(ort_tasks *tasks, int jobs, tk_job_fn *fn, void *ctx);

#endif
