// broadphase_jobs.c: the begun step of an incremental update_pairs (few
// movers; broadphase.c) split into jobs through the tree's ort_tasks.
//
// The serial step, for each touched item i in touched order: flag i's
// partners, query i's box, and begin a pair with every hit o that is not i,
// not flagged, allowed by the filters and (spheres) touching; each new
// partner is flagged at once, so a hit met twice begins one pair, and a later
// mover finds the pairs earlier movers began among its partners.
//
// Split: runs of consecutive touched entries (cut by their number alone) are
// jobs. A job runs its movers' queries and keeps, per mover, the hits that
// pass the tests that depend on the two items alone (not i, filters,
// spheres), in query order, then NIL. The tree does not change while the jobs
// run (the update holds the readers' bracket: changes from callbacks wait),
// so those tests give what the serial step's would. Then the calling thread
// replays the movers in touched order, doing what depends on the pair set —
// flag i's partners, skip flagged hits, begin the rest, unflag — so the pairs
// begun, their records and the begin events, in order, are the serial step's
// for any number of workers. A failure before the replay (a job buffer
// refused, a query's error) changes nothing: the serial step then runs.
// When the queries prune by content bounds (loose cells, many movers), those
// are made first as find_pairs makes them with tasks: subtrees as jobs.
#include "task_int.h"
#include "tree_int.h"

/// Fewest touched entries worth splitting, and fewest per job.
#define BPJ_MIN_TOUCHED 32u
#define BPJ_MIN_ROWS 8u

/// What the jobs of one update share.
typedef struct bpj_ctx {
	const tree_t *t;
	const uint32_t *touched;
	uint32_t n, rows; ///< touched entries, entries per job
	bool by_content;  ///< query by content bounds (made first, in jobs)
	atomic_int failed; ///< the first error a query returned (0: none)
} bpj_ctx;

/// One mover's query inside a job.
typedef struct bpj_query {
	const tree_t *t;
	uint32_t self;
	box_t box;
	tk_out *out;
} bpj_query;

static bool bpj_hit(void *ctx, ort_handle h, void *user)
{
	(void)user;
	bpj_query *q = ctx;
	uint32_t o = h.id - 1;
	if (o == q->self || !items_pair(q->t, q->self, o)) return true;
	if (q->t->spheres && !items_touch(q->t, q->self, o, &q->box, &entry_at(q->t, q->t->items[o].addr)->box))
		return true;
	tk_put(q->out, &o, sizeof o);
	return true;
}

static void bpj_range(const bpj_ctx *c, int job, uint32_t *lo, uint32_t *hi)
{
	*lo = (uint32_t)job * c->rows;
	*hi = c->n - *lo > c->rows ? *lo + c->rows : c->n;
}

static void bpj_job(void *ctx, int job, tk_out *out)
{
	bpj_ctx *c = ctx;
	const tree_t *t = c->t;
	uint32_t lo, hi;
	bpj_range(c, job, &lo, &hi);
	// Every entry of the touched list ends its hits with NIL, an item no
	// longer touched with no hits: the list may name an item twice (touched,
	// its slot freed and reused, touched again), and the replay clears the
	// flag at the first, so it must find the second's hits to skip them.
	uint32_t end = NIL;
	for (uint32_t k = lo; k < hi; ++k) {
		uint32_t i = c->touched[k];
		if (!(t->items[i].flags & ITEM_TOUCHED)) {
			tk_put(out, &end, sizeof end);
			continue;
		}
		bpj_query q = {t, i, entry_at(t, t->items[i].addr)->box, out};
		ort_result r = c->by_content ? query_box_by_content(t, &q.box, bpj_hit, &q)
		                             : ORTHANT_NAME(tree_query_box)(t, q.box, ORT_MASK_ALL, bpj_hit, &q);
		int none = 0;
		if (r != ORT_OK) atomic_compare_exchange_strong(&c->failed, &none, (int)r);
		tk_put(out, &end, sizeof end);
	}
}

/// Replay mover i's hits from *at (up to its NIL) as the serial step would;
/// false when the pair set could not grow (i's remaining hits are skipped).
static bool bpj_replay(tree_t *t, uint32_t i, const uint32_t **at, ORTHANT_NAME(pair_event_fn) * begin, void *ctx)
{
	bool ok = true;
	bp_flag_partners(t, i, true);
	for (uint32_t o; (o = *(*at)++) != NIL;) {
		if (!ok || (t->items[o].flags & ITEM_PAIRED)) continue;
		if (!bp_pair_reserve(t)) {
			ok = false;
			continue;
		}
		t->items[o].flags |= ITEM_PAIRED;
		bp_report(t, begin, ctx, &t->bp->pairs[bp_add(t, i, o)]);
	}
	bp_flag_partners(t, i, false);
	return ok;
}

/// The content bounds the movers' queries prune by, as find_pairs makes
/// them with tasks (pairs.c): subtrees in jobs, then the nodes above them.
static ort_result bpj_content(tree_t *t, ort_tasks *tasks)
{
	uint32_t limit = t->entries / TK_JOBS_TARGET < 1024 ? 1024 : t->entries / TK_JOBS_TARGET;
	int roots = pairs_content_roots(t, t->root, limit, NULL, 0);
	pair_jobs c = {NULL, t, 0, ort_tk_scratch(tasks, (size_t)roots * sizeof(uint32_t))};
	if (!c.nodes) return ORT_ERROR_OUT_OF_MEMORY;
	pairs_content_roots(t, t->root, limit, c.nodes, 0);
	ort_tk_for(tasks, roots, pairs_content_job, &c);
	pairs_content_walk(t, t->root, true, limit);
	return ORT_OK;
}

static bool bp_begun_in_jobs(tree_t *t, bool by_content, ORTHANT_NAME(pair_event_fn) * begin, void *ctx,
                             ort_result *result)
{
	struct broadphase *bp = t->bp;
	ort_tasks *tasks = t->def.tasks;
	if (bp->touched_len < BPJ_MIN_TOUCHED || !ort_tk_acquire(tasks)) return false;
	bpj_ctx c = {t, bp->touched, bp->touched_len, 0, by_content, 0};
	c.rows = c.n / TK_JOBS_TARGET < BPJ_MIN_ROWS ? BPJ_MIN_ROWS : c.n / TK_JOBS_TARGET;
	atomic_init(&c.failed, 0);
	int jobs = (int)((c.n + c.rows - 1) / c.rows);
	ort_result r = by_content ? bpj_content(t, tasks) : ORT_OK;
	if (r == ORT_OK) r = ort_tk_run(tasks, jobs, 1, bpj_job, &c);
	if (r != ORT_OK || atomic_load(&c.failed) != 0) {
		ort_tk_release(tasks);
		return false; // nothing changed: the serial step runs
	}
	*result = ORT_OK;
	uint32_t keep = 0;
	for (int j = 0; j < jobs; ++j) {
		const uint32_t *at = (const uint32_t *)(const void *)ort_tk_output(tasks, j)->data;
		uint32_t lo, hi;
		bpj_range(&c, j, &lo, &hi);
		for (uint32_t k = lo; k < hi; ++k) {
			uint32_t i = bp->touched[k];
			if (!(t->items[i].flags & ITEM_TOUCHED)) { // a second entry of an item replayed already
				while (*at++ != NIL) {
				}
				continue;
			}
			if (*result == ORT_OK) {
				if (bpj_replay(t, i, &at, begin, ctx)) {
					t->items[i].flags &= ~(uint32_t)ITEM_TOUCHED;
					continue;
				}
				*result = ORT_ERROR_OUT_OF_MEMORY;
			} else {
				while (*at++ != NIL) {
				}
			}
			// Out of memory: this mover and the rest stay touched, so the
			// next update picks up where this one stopped.
			bp->touched[keep++] = i;
		}
	}
	bp->touched_len = keep;
	ort_tk_release(tasks);
	return true;
}
