// test_leafcap.c: the leaves placement's cap on copies per item (src/tree_cap.c),
// in 2D and 3D.
//
// - Work: on scenes made of boxes that cross many leaves (long thin strips,
//   centre-line straddlers, extents mixed over five scales, huge boxes among
//   small ones) the entries stored stay within NCHILD per item, the pair
//   finder's box tests within c (n log n + k) (the counting build), and the
//   leaf entries a query, ray or nearest search can test (every entry of every
//   leaf whose cell it reaches: the leaves walk prunes by cell) within
//   c (log n + k) a query; measured fresh and again after a remove + insert
//   of every item. Built with -DORTHANT_LEAVES_CAP=1000000000 (no cap)
//   the entries, the pair tests and the strips' leaf entries fail these
//   bounds. The own lists of inner nodes (where capped items live) are
//   printed, not bounded here: an index on big own lists bounds them.
// - Left capped: boxes capped among many small ones stay capped when the small
//   ones go and the tree folds; pairs and queries then test at most twice what
//   a tree built from the same boxes does.
// - Churn: inserts, removes and moves whose boxes change between small (a few
//   copies) and long or huge (capped), on small buckets so splits and merges
//   move items between the forms; after every step the tree validates (which
//   checks the cap rule), and every few steps the pairs, box queries, rays,
//   nearest and update_pairs' began and ended events are brute force's.
#include "testutil.h"

#ifdef ORTHANT_COUNT_WORK
extern uint64_t TU(work_box_tests);
#endif

#define NCHILD (1 << DIM)

enum scene_kind { S_STRIPS, S_STRADDLE, S_MIXED, S_HUGE, S_OVER, S_KINDS };
static const char *const scene_names[] = {"strips", "straddlers", "mixed extents", "huge among small",
                                          "strips over small"};

/// Box i of n of a scene kind, in [0, 1000]^DIM.
static box_t scene_box(int kind, tu_rng *r, int i)
{
	box_t b;
	switch (kind) {
	case S_STRIPS: return tu_strip(r, i, 500, 1.9f); // long along x, stacked apart
	case S_STRADDLE: // across the centre line x = 500
		for (int d = 0; d < DIM; ++d) {
			float side = tu_float(r, 0.5f, 3.0f);
			b.min[d] = d == 0 ? 500.0f - side * 0.5f : tu_float(r, 0.0f, 990.0f);
			b.max[d] = d == 0 ? 500.0f + side * 0.5f : b.min[d] + 0.01f;
		}
		break;
	case S_MIXED: // each axis's extent from 0.01 to 1000, log-uniform
		for (int d = 0; d < DIM; ++d) {
			float side = exp2f(tu_float(r, -6.6f, 9.9f));
			b.min[d] = tu_float(r, 0.0f, 1000.0f - side);
			b.max[d] = b.min[d] + side;
		}
		break;
	case S_OVER: // every other box a strip as above, the rest small boxes everywhere
		if (i % 2 == 0) return scene_box(S_STRIPS, r, i / 2);
		for (int d = 0; d < DIM; ++d) {
			b.min[d] = tu_float(r, 0.0f, 997.0f);
			b.max[d] = b.min[d] + tu_float(r, 0.5f, 3.0f);
		}
		break;
	default: // one box in 16 covers 40-100% of the region on each axis
		for (int d = 0; d < DIM; ++d) {
			float side = i % 16 == 0 ? tu_float(r, 400.0f, 1000.0f) : tu_float(r, 0.5f, 3.0f);
			b.min[d] = tu_float(r, 0.0f, 1000.0f - side);
			b.max[d] = b.min[d] + side;
		}
		break;
	}
	return b;
}

static tree_t *leaves_tree(int bucket, int prune_delay)
{
	def_t def = TU(tree_default_def)();
	def.placement = ORT_PLACEMENT_LEAVES;
	def.bucket_size = bucket;
	def.prune_delay = prune_delay;
	def.use_region = true;
	def.region = tu_cube(0.0f, 1000.0f);
	tree_t *t = NULL;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	return t;
}

// ---- the nodes, as visit_nodes shows them ---------------------------------------------

typedef struct vnode {
	box_t cell;
	int depth, entries;
	bool leaf;
} vnode;

typedef struct vnodes {
	vnode *v;
	int n, cap;
} vnodes;

static void visit_collect(void *ctx, const box_t *cell, const box_t *bounds, int depth, int entries)
{
	(void)bounds;
	vnodes *s = ctx;
	if (s->n == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 256;
		s->v = realloc(s->v, sizeof *s->v * (size_t)s->cap);
	}
	s->v[s->n++] = (vnode){*cell, depth, entries, true};
}

/// Every node; a node is a leaf when the next in pre-order is not below it,
/// but a root alone is one only when the stats say so (strips across the
/// whole region all capped there leave it divided, its children pruned).
static vnodes nodes_of(const tree_t *t)
{
	vnodes s = {NULL, 0, 0};
	TU(tree_visit_nodes)(t, visit_collect, &s);
	for (int i = 0; i + 1 < s.n; ++i) s.v[i].leaf = s.v[i + 1].depth <= s.v[i].depth;
	ort_tree_stats st;
	TU(tree_get_stats)(t, &st);
	if (s.n == 1) s.v[0].leaf = st.leaves == 1;
	return s;
}

/// Whether closed box b meets the half-open cell c.
static bool meets_cell(const box_t *c, const box_t *b)
{
	for (int d = 0; d < DIM; ++d)
		if (!(b->min[d] < c->max[d]) || b->max[d] < c->min[d]) return false;
	return true;
}

/// What a query reaching the cells `reach` says may be tested: the entries
/// of those leaves (leaf) and of those inner nodes (own).
typedef struct reach_work {
	double leaf, own;
} reach_work;

static void add_node(reach_work *w, const vnode *n)
{
	if (n->leaf)
		w->leaf += n->entries;
	else
		w->own += n->entries;
}

static reach_work box_reach(const vnodes *s, const box_t *q)
{
	reach_work w = {0, 0};
	for (int i = 0; i < s->n; ++i)
		if (meets_cell(&s->v[i].cell, q)) add_node(&w, &s->v[i]);
	return w;
}

static reach_work ray_reach(const vnodes *s, const float o[DIM], const float dir[DIM])
{
	reach_work w = {0, 0};
	for (int i = 0; i < s->n; ++i) {
		float enter;
		if (tu_ray_hit(o, dir, INFINITY, &s->v[i].cell, &enter)) add_node(&w, &s->v[i]);
	}
	return w;
}

static reach_work near_reach(const vnodes *s, const float p[DIM], double d2)
{
	reach_work w = {0, 0};
	for (int i = 0; i < s->n; ++i)
		if (tu_dist2(p, &s->v[i].cell) <= d2) add_node(&w, &s->v[i]);
	return w;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;
	return x < y ? -1 : x > y;
}

/// Leaves a copied item would be in: the leaves among s whose cell its box meets.
static int leaves_met(const vnodes *s, const box_t *b)
{
	int k = 0;
	for (int i = 0; i < s->n; ++i) k += s->v[i].leaf && meets_cell(&s->v[i].cell, b);
	return k;
}

// ---- work -------------------------------------------------------------------------------

/// Items a scene of test_cap_work holds: 3000, a quarter under valgrind
/// (shrunk by 8 or more; coverage, at 4, needs every scene whole).
static int cw_n(void) { return tu_shrink() >= 8 ? 750 : 3000; }
/// Leaf entries a query may reach, per (log2 n + k): a query meets about
/// that many leaves, each holding about half a bucket (16) of entries. (At
/// 32, strips piled as copies in leaves that would not split passed.)
#define CW_LEAF 8.0

/// The work measures of test_cap_work on t holding b[0..cw_n()) (m), printed
/// with `when`; what is over its bound, or NULL.
static const char *cap_work_of(tree_t *t, const model *m, const box_t *b, int kind, const char *when)
{
	enum { Q = 48, K = 10 };
	const int N = cw_n();
	double *dist = malloc(sizeof *dist * N);
	{
		ort_tree_stats st;
		TU(tree_get_stats)(t, &st);
		size_t k = 0;
		for (int i = 0; i < N; ++i)
			for (int j = i + 1; j < N; ++j) k += tu_overlap(&b[i], &b[j]);
		// Entries: at most NCHILD copies an item.
		print_message("%-18s %-6s n %d: %d entries (%.2f an item), %d nodes, depth %d\n", scene_names[kind], when, N,
		              st.entries, (double)st.entries / N, st.nodes, st.depth);
		// Every measure is printed before any fails, to show what is over.
		const char *over = NULL;
		if (st.entries > NCHILD * N) over = "entries: over NCHILD an item";
		// Pairs: brute force's, in c (n log n + k) box tests.
#ifdef ORTHANT_COUNT_WORK
		TU(work_box_tests) = 0;
#endif
		tu_check_pairs(t, m);
#ifdef ORTHANT_COUNT_WORK
		double tests = (double)TU(work_box_tests), pbound = 24.0 * (N * log2((double)N) + (double)k);
		print_message("%-18s pairs k %zu: %.0f box tests, %.2f of c (n log n + k)\n", scene_names[kind], k, tests,
		              tests / pbound);
		if (tests > pbound) over = "pair tests: over c (n log n + k)";
#endif
		// Queries: the items' own boxes, rays from their corners, 10 nearest
		// to their corners; answers against brute force, and the leaf entries
		// the cells they reach hold within c (log n + k) a query.
		vnodes s = nodes_of(t);
		tu_rng qr = tu_rng_make(17);
		static const char *const qnames[3] = {"box queries", "rays", "nearest"};
		reach_work w[3] = {{0, 0}, {0, 0}, {0, 0}};
		double bound[3] = {0, 0, 0};
		for (int q = 0; q < Q; ++q) {
			const box_t *qb = &b[tu_int(&qr, 0, N - 1)];
			size_t hits = 0;
			for (int i = 0; i < N; ++i) hits += tu_overlap(qb, &b[i]);
			tu_check_box_query(t, m, *qb);
			reach_work r[3];
			r[0] = box_reach(&s, qb);
			float dir[DIM];
			for (int d = 0; d < DIM; ++d) dir[d] = tu_float(&qr, -1.0f, 1.0f);
			size_t ray_hits = 0;
			for (int i = 0; i < N; ++i) {
				float enter;
				ray_hits += tu_ray_hit(qb->min, dir, INFINITY, &b[i], &enter);
			}
			tu_check_ray(t, m, qb->min, dir, INFINITY);
			r[1] = ray_reach(&s, qb->min, dir);
			for (int i = 0; i < N; ++i) dist[i] = tu_dist2(qb->max, &b[i]);
			qsort(dist, N, sizeof *dist, cmp_double);
			tu_check_nearest(t, m, qb->max, K, INFINITY);
			r[2] = near_reach(&s, qb->max, dist[K - 1]);
			const size_t out[3] = {hits, ray_hits, K};
			for (int j = 0; j < 3; ++j) {
				w[j].leaf += r[j].leaf;
				w[j].own += r[j].own;
				bound[j] += CW_LEAF * (log2((double)N) + (double)out[j]);
			}
		}
		for (int j = 0; j < 3; ++j) {
			print_message("%-18s %-6s %d %-11s: leaf entries reached %8.0f (%.2f of c (log n + k)), own lists %.0f\n",
			              scene_names[kind], when, Q, qnames[j], w[j].leaf, w[j].leaf / bound[j], w[j].own);
			if (w[j].leaf > bound[j]) over = "queries: leaf entries reached over c (log n + k) a query";
		}
		free(s.v);
		free(dist);
		return over;
	}
}

/// Each scene inserted, measured, then every item removed and inserted again
/// (in the tree the inserts grew, a strip is copied into the leaves it
/// touches until a split caps it: a leaf whose split would cap its strips must
/// still split, or re-inserted strips pile up in it, scanned whole by every
/// query that reaches it), and measured again.
static void test_cap_work(void **state)
{
	(void)state;
	const int N = cw_n();
	box_t *b = malloc(sizeof *b * N);
	for (int kind = 0; kind < S_KINDS; ++kind) {
		TU_CONTEXT("leaves cap work, %s", scene_names[kind]);
		tu_rng rng = tu_rng_make(300 + (uint64_t)kind);
		for (int i = 0; i < N; ++i) b[i] = scene_box(kind, &rng, i);
		tree_t *t = leaves_tree(16, 0);
		model m;
		tu_insert_all(t, &m, b, N);
		tu_check_valid(t);
		const char *over = cap_work_of(t, &m, b, kind, "fresh");
		for (int i = 0; i < N; ++i) {
			assert_int_equal(TU(tree_remove)(t, m.handle[i]), ORT_OK);
			assert_int_equal(TU(tree_insert)(t, b[i], NULL, &m.handle[i]), ORT_OK);
		}
		tu_check_valid(t);
		const char *churned = cap_work_of(t, &m, b, kind, "churn");
		if (over || churned) TU_FAIL("%s%s%s\n", over ? over : "", over ? "; after churn: " : "after churn: ", churned ? churned : "-");
		tu_model_free(&m);
		TU(tree_destroy)(t);
	}
	free(b);
}

// ---- capped items left capped by merges ---------------------------------------------

/// Entries in inner nodes: under the leaves placement, the capped items.
static int capped_entries(const tree_t *t)
{
	vnodes s = nodes_of(t);
	int k = 0;
	for (int i = 0; i < s.n; ++i) k += s.v[i].leaf ? 0 : s.v[i].entries;
	free(s.v);
	return k;
}

/// Box tests (the counting build; 0 otherwise) of find_pairs and of Q box
/// queries around items on t, each against brute force.
static double cap_pair_query_work(tree_t *t, const model *m)
{
	enum { Q = 64 };
#ifdef ORTHANT_COUNT_WORK
	TU(work_box_tests) = 0;
#endif
	tu_check_pairs(t, m);
	tu_rng qr = tu_rng_make(23);
	for (int q = 0; q < Q; ++q) tu_check_box_query(t, m, m->box[tu_int(&qr, 0, m->n - 1)]);
#ifdef ORTHANT_COUNT_WORK
	return (double)TU(work_box_tests);
#else
	return 0.0;
#endif
}

/// A capped item goes back to copies when a merge folds its home, not when
/// merges below its home leave it touching few leaves (finding those would
/// scan every ancestor's own list a merge). Such an item is stored as the
/// tight placement stores every item (once, in the smallest node holding
/// it; that own list indexed, handed down to the pair finder), which the
/// work bounds hold for any scene; so it costs no cliff. Boxes of side 40-80
/// (3D: 150-250) among many small ones (each over the cap in the deep tree the small ones
/// grow), then the small ones removed: the tree folds, the boxes stay capped;
/// pairs and box queries (against brute force) test at most twice what a
/// tree built from the same boxes does.
static void test_cap_left_capped(void **state)
{
	(void)state;
	enum { SMALL = 6000, MED = 600 };
	box_t *b = malloc(sizeof *b * (SMALL + MED));
	tu_rng r = tu_rng_make(91);
	for (int i = 0; i < SMALL + MED; ++i) {
		bool med = i % 11 == 0 && i / 11 < MED;
		for (int d = 0; d < DIM; ++d) {
			float side = med ? tu_float(&r, DIM == 2 ? 40.0f : 150.0f, DIM == 2 ? 80.0f : 250.0f) : tu_float(&r, 0.5f, 3.0f);
			b[i].min[d] = tu_float(&r, 0.0f, 1000.0f - side);
			b[i].max[d] = b[i].min[d] + side;
		}
	}
	tree_t *t = leaves_tree(16, 0);
	model m;
	tu_insert_all(t, &m, b, SMALL + MED);
	ort_tree_stats st;
	TU(tree_get_stats)(t, &st);
	int deep_nodes = st.nodes, deep_capped = capped_entries(t);
	// Remove the small ones (the model's order is the boxes').
	for (int i = m.n - 1; i >= 0; --i) {
		bool med = i % 11 == 0 && i / 11 < MED;
		if (med) continue;
		assert_int_equal(TU(tree_remove)(t, m.handle[i]), ORT_OK);
		tu_model_remove_at(&m, i);
	}
	tu_check_valid(t);
	TU(tree_get_stats)(t, &st);
	double left = cap_pair_query_work(t, &m);
	tree_t *fresh = leaves_tree(16, 0);
	model fm;
	box_t *mb = malloc(sizeof *mb * (size_t)m.n);
	for (int i = 0; i < m.n; ++i) mb[i] = m.box[i];
	tu_insert_all(fresh, &fm, mb, m.n);
	ort_tree_stats fs;
	TU(tree_get_stats)(fresh, &fs);
	double built = cap_pair_query_work(fresh, &fm);
	int capped = capped_entries(t), fresh_capped = capped_entries(fresh);
	print_message("left capped: %d boxes, %d nodes, %d capped (before the removals %d nodes, %d capped); inserted "
	              "fresh: %d nodes, %d capped; pair and query tests %.0f vs %.0f fresh (%.2fx)\n",
	              m.n, st.nodes, capped, deep_nodes, deep_capped, fs.nodes, fresh_capped, left, built,
	              built > 0 ? left / built : 0.0);
	if (capped <= fresh_capped) TU_FAIL("no more items capped than in the fresh tree: the scene tests nothing\n");
	if (left > 2.0 * built + 1024.0) TU_FAIL("%.0f tests, over twice the fresh tree's %.0f\n", left, built);
	free(mb);
	tu_model_free(&fm);
	TU(tree_destroy)(fresh);
	tu_model_free(&m);
	TU(tree_destroy)(t);
	free(b);
}

// ---- churn against brute force -------------------------------------------------------

/// A handle as 32 bits: id and the generation's low bits (the salt leaves
/// them), so a slot reused after a removal is another key.
static uint64_t handle_key(ort_handle h) { return (uint64_t)(h.id & 0xFFFFu) << 16 | (h.gen & 0xFFFFu); }

static uint64_t pair_key(ort_handle a, ort_handle b)
{
	uint64_t x = handle_key(a), y = handle_key(b);
	return x < y ? x << 32 | y : y << 32 | x;
}

typedef struct events {
	tu_list began, ended;
} events;

static void on_begin(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	tu_push(&((events *)ctx)->began, pair_key(a, b));
}

static void on_end(void *ctx, ort_handle a, ort_handle b, void *ua, void *ub)
{
	(void)ua, (void)ub;
	tu_push(&((events *)ctx)->ended, pair_key(a, b));
}

static tu_list model_pairs(const model *m)
{
	tu_list l = {0};
	for (int i = 0; i < m->n; ++i)
		for (int j = i + 1; j < m->n; ++j)
			if (tu_overlap(&m->box[i], &m->box[j])) tu_push(&l, pair_key(m->handle[i], m->handle[j]));
	tu_sort_u64(l.v, l.n);
	return l;
}

/// x \ y of sorted lists.
static tu_list minus(const tu_list *x, const tu_list *y)
{
	tu_list out = {0};
	size_t j = 0;
	for (size_t i = 0; i < x->n; ++i) {
		while (j < y->n && y->v[j] < x->v[i]) j++;
		if (j == y->n || y->v[j] != x->v[i]) tu_push(&out, x->v[i]);
	}
	return out;
}

/// A box that is small (a few copies), long on one axis, or huge (capped).
static box_t churn_box(tu_rng *r)
{
	box_t b;
	int shape = tu_int(r, 0, 5);
	int axis = tu_int(r, 0, DIM - 1);
	for (int d = 0; d < DIM; ++d) {
		float side = tu_float(r, 0.0f, 8.0f);
		if (shape == 3 && d == axis) side = tu_float(r, 100.0f, 1000.0f);
		if (shape == 4) side = tu_float(r, 300.0f, 1000.0f);
		if (shape == 5 && d == axis) side = tu_float(r, 20.0f, 80.0f);
		// Corners on a grid now and then: boxes on split lines and touching.
		b.min[d] = tu_int(r, 0, 3) == 0 ? (float)(tu_int(r, 0, 8) * 125) : tu_float(r, 0.0f, 1000.0f - side);
		if (b.min[d] + side > 1000.0f) b.min[d] = 1000.0f - side;
		b.max[d] = b.min[d] + side;
	}
	return b;
}

static void test_cap_churn(void **state)
{
	(void)state;
	enum { MAX = 160, CHECK = 25 };
	const int steps = tu_shrink() >= 8 ? 500 : 1500; // valgrind: fewer steps, the same checks every CHECK
	static const int buckets[] = {1, 2, 4, 16};
	int capped_seen = 0, copied_seen = 0;
	for (int cfg = 0; cfg < 8; ++cfg) {
		int bucket = buckets[cfg % 4], prune = cfg >= 4 ? 3 : 0;
		tree_t *t = leaves_tree(bucket, prune);
		model m;
		tu_model_init(&m, MAX);
		tu_rng r = tu_rng_make(900 + (uint64_t)cfg);
		tu_list prev = {0};
		for (int step = 0; step < steps; ++step) {
			TU_CONTEXT("leaves cap churn, bucket %d prune %d, step %d", bucket, prune, step);
			int op = tu_int(&r, 0, 9);
			if (m.n < MAX && (op < 4 || m.n < 8)) {
				box_t b = churn_box(&r);
				ort_handle h;
				assert_int_equal(TU(tree_insert)(t, b, NULL, &h), ORT_OK);
				tu_model_add(&m, h, b);
			} else if (op < 6) {
				int i = tu_int(&r, 0, m.n - 1);
				assert_int_equal(TU(tree_remove)(t, m.handle[i]), ORT_OK);
				tu_model_remove_at(&m, i);
			} else {
				int i = tu_int(&r, 0, m.n - 1);
				// Mostly a new shape; sometimes a nudge, which may stay in place.
				box_t b = churn_box(&r);
				if (op == 9)
					for (int d = 0; d < DIM; ++d) b.min[d] = m.box[i].min[d] + 0.25f, b.max[d] = m.box[i].max[d] + 0.25f;
				assert_int_equal(TU(tree_move)(t, m.handle[i], b), ORT_OK);
				m.box[i] = b;
			}
			if (op == 7) TU(tree_tick)(t);
			tu_check_valid(t);
			if (step % CHECK != CHECK - 1) continue;
			tu_check_pairs(t, &m);
			for (int q = 0; q < 4; ++q) {
				box_t qb = churn_box(&r);
				tu_check_box_query(t, &m, qb);
				float dir[DIM];
				for (int d = 0; d < DIM; ++d) dir[d] = tu_float(&r, -1.0f, 1.0f);
				tu_check_ray(t, &m, qb.min, dir, INFINITY);
				tu_check_nearest(t, &m, qb.max, 5, INFINITY);
			}
			// update_pairs: began = now \ before, ended = before \ now.
			events ev = {{0}, {0}};
			assert_int_equal(TU(tree_update_pairs)(t, on_begin, on_end, &ev), ORT_OK);
			tu_list now = model_pairs(&m);
			tu_list began = minus(&now, &prev), ended = minus(&prev, &now);
			tu_expect_same(&ev.began, &began, "update_pairs began");
			tu_expect_same(&ev.ended, &ended, "update_pairs ended");
			free(prev.v);
			prev = now;
			// Both forms present: an entry count below what copying every
			// item into every leaf it meets would take means some are capped.
			vnodes s = nodes_of(t);
			ort_tree_stats st;
			TU(tree_get_stats)(t, &st);
			long all_copied = 0;
			for (int i = 0; i < m.n; ++i) all_copied += leaves_met(&s, &m.box[i]);
			capped_seen += st.entries < all_copied;
			copied_seen += st.entries > st.items;
			free(s.v);
		}
		free(prev.v);
		tu_model_free(&m);
		TU(tree_destroy)(t);
	}
	print_message("checks with capped items %d, with copies %d\n", capped_seen, copied_seen);
	assert_true(capped_seen > 0);
	assert_true(copied_seen > 0);
}

// ---- peak memory of a batched build ---------------------------------------------------

/// An allocator that counts the bytes live and the most live at once.
typedef struct peak_alloc {
	size_t live, peak;
} peak_alloc;

static void *peak_alloc_fn(void *ctx, size_t size)
{
	peak_alloc *a = ctx;
	a->live += size;
	if (a->live > a->peak) a->peak = a->live;
	void *p = malloc(size ? size : 1);
	if (!p) abort();
	return p;
}

static void peak_free_fn(void *ctx, void *p, size_t size)
{
	peak_alloc *a = ctx;
	if (!p) return;
	a->live -= size;
	free(p);
}

/// The most bytes a tree of placement pl holds while tree_build stores boxes
/// b[0..n), after checking the tree it made against brute force (its pairs
/// when `pairs`).
static size_t build_peak(ort_placement pl, const box_t *b, int n, bool pairs)
{
	peak_alloc a = {0, 0};
	def_t def = TU(tree_default_def)();
	def.placement = pl;
	def.use_region = true;
	def.region = tu_cube(0.0f, 1000.0f);
	def.allocator = (ort_allocator){peak_alloc_fn, peak_free_fn, &a};
	tree_t *t = NULL;
	assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
	ort_handle *h = malloc(sizeof *h * (size_t)n);
	assert_int_equal(TU(tree_build)(t, b, NULL, n, h), ORT_OK);
	tu_check_valid(t);
	ort_tree_stats st;
	TU(tree_get_stats)(t, &st);
	if (st.entries > NCHILD * n) TU_FAIL("%d entries for %d items\n", st.entries, n);
	if (n <= 4000) {
		model m;
		tu_model_init(&m, n);
		for (int i = 0; i < n; ++i) tu_model_add(&m, h[i], b[i]);
		if (pairs) tu_check_pairs(t, &m);
		tu_check_box_query(t, &m, b[n / 2]);
		tu_model_free(&m);
	}
	free(h);
	TU(tree_destroy)(t);
	return a.peak;
}

/// The build-only scenes: piles the tree splits far down (a speck of small
/// boxes with one box far away, as deep as floats go) and one box repeated.
enum { S_SPECK = S_KINDS, S_DUPS, S_PEAK_KINDS };

/// Box i of n of a scene kind, or of the build-only ones, or (kind < 0) of
/// the uniform scene.
static box_t peak_box(int kind, tu_rng *r, int i, int n)
{
	if (kind >= 0 && kind < S_KINDS) return scene_box(kind, r, i);
	box_t b;
	for (int d = 0; d < DIM; ++d) {
		float lo = tu_float(r, 0.0f, 997.0f), side = tu_float(r, 0.5f, 3.0f);
		b.min[d] = kind == S_DUPS ? 1.0f : kind == S_SPECK ? (i == n - 1 ? 1e6f : lo * 1e-12f) : lo;
		b.max[d] = kind == S_DUPS ? 2.0f : kind == S_SPECK ? (i == n - 1 ? 1e6f + 1.0f : (lo + side) * 1e-12f) : lo + side;
	}
	return b;
}

/// A batched build holds O(n) memory at its peak on every scene kind: in
/// leaves, items over the cap are capped as the build splits, not copied
/// into every leaf first, and a pile that goes whole into one child is
/// split in the room of its parent's list; loose and tight partition in
/// place. Held as: the peak per item, at n and at 4n, stays within a few
/// times a uniform scene's of the same size and placement (pools grow by
/// doubling, so the peak itself moves in steps). Loose and tight take the
/// speck and the duplicates (the other kinds are leaves' own: copies).
static void test_build_peak(void **state)
{
	(void)state;
	const int N = tu_shrink() >= 8 ? 1000 : 4000; // valgrind: 1000 and 4000
	static const ort_placement pls[] = {ORT_PLACEMENT_LEAVES, ORT_PLACEMENT_LOOSE, ORT_PLACEMENT_TIGHT};
	static const char *const pl_names[] = {"leaves", "loose", "tight"};
	box_t *b = malloc(sizeof *b * 4 * N);
	for (int pl = 0; pl < 3; ++pl) {
		double uniform[2] = {0.0, 0.0};
		for (int kind = -1; kind < S_PEAK_KINDS; ++kind) {
			if (pl > 0 && kind >= 0 && kind < S_KINDS) continue;
			const char *name = kind < 0 ? "uniform" : kind == S_SPECK ? "speck" : kind == S_DUPS ? "duplicates" : scene_names[kind];
			TU_CONTEXT("build peak, %s, %s", pl_names[pl], name);
			for (int s = 0; s < 2; ++s) {
				int n = s ? 4 * N : N;
				tu_rng rng = tu_rng_make(500 + (uint64_t)kind);
				for (int i = 0; i < n; ++i) b[i] = peak_box(kind, &rng, i, n);
				double per = (double)build_peak(pls[pl], b, n, kind != S_DUPS) / n;
				if (kind < 0) uniform[s] = per;
				print_message("%-6s %-18s build peak n %5d: %4.0f bytes an item, %.2f of uniform\n", pl_names[pl], name,
				              n, per, per / uniform[s]);
				if (per > 3.0 * uniform[s]) TU_FAIL("%.0f bytes an item, uniform %.0f\n", per, uniform[s]);
			}
		}
	}
	free(b);
}

/// Dense clusters in a big world, built at once in leaves: the build splits
/// a leaf for the strips it would cap, and the fixup that stores them capped
/// then takes copies out and merges what emptied, so an item marked at a node
/// that such a merge folded into one leaf must be stored there as a copy
/// (the build stored it capped in a leaf, and the next move of it crashed:
/// the benchmark's smoke run caught it on its clustered scene, seed
/// 20240601; these clusterings are like it but did not happen to hit it).
/// Each tree validates and answers its pairs and a box query as brute force
/// does, 2D and 3D, over many clusterings.
static void test_build_clusters(void **state)
{
	(void)state;
	enum { N = 5000, CLUSTERS = 8 };
	box_t *b = malloc(sizeof *b * N);
	const uint64_t seeds = tu_shrink() >= 8 ? 2 : 4; // valgrind: two clusterings
	for (uint64_t seed = 0; seed < seeds; ++seed) {
		TU_CONTEXT("clustered build, seed %d", (int)seed);
		tu_rng rng = tu_rng_make(900 + seed);
		float centre[CLUSTERS][DIM];
		for (int k = 0; k < CLUSTERS; ++k)
			for (int d = 0; d < DIM; ++d) centre[k][d] = tu_float(&rng, 0.0f, 250.0f);
		float spread = tu_float(&rng, 3.0f, 8.0f); // the benchmark's clustered scene: 1,250 boxes in a 10-wide square
		for (int i = 0; i < N; ++i) {
			float h = tu_float(&rng, 0.25f, 1.0f);
			for (int d = 0; d < DIM; ++d) {
				float c = centre[i % CLUSTERS][d] + tu_float(&rng, -spread, spread);
				b[i].min[d] = c - h;
				b[i].max[d] = c + h;
			}
		}
		def_t def = TU(tree_default_def)();
		def.placement = ORT_PLACEMENT_LEAVES;
		def.use_region = true;
		def.region = tu_cube(-10.0f, 260.0f);
		tree_t *t = NULL;
		assert_int_equal(TU(tree_create)(&def, &t), ORT_OK);
		ort_handle *h = malloc(sizeof *h * N);
		assert_int_equal(TU(tree_build)(t, b, NULL, N, h), ORT_OK);
		tu_check_valid(t);
		model m;
		tu_model_init(&m, N);
		for (int i = 0; i < N; ++i) tu_model_add(&m, h[i], b[i]);
		tu_check_pairs(t, &m);
		tu_check_box_query(t, &m, b[N / 2]);
		for (int i = 0; i < N; i += 7) { // every item moves out of the form the build gave it
			box_t nb = b[i];
			for (int d = 0; d < DIM; ++d) nb.min[d] += 0.5f, nb.max[d] += 0.5f;
			assert_int_equal(TU(tree_move)(t, h[i], nb), ORT_OK);
			m.box[i] = nb; // the model holds item i at i (added in order)
		}
		tu_check_valid(t);
		tu_check_pairs(t, &m);
		tu_model_free(&m);
		free(h);
		TU(tree_destroy)(t);
	}
	free(b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
	    cmocka_unit_test(test_cap_work),
	    cmocka_unit_test(test_cap_left_capped),
	    cmocka_unit_test(test_cap_churn),
	    cmocka_unit_test(test_build_peak),
	    cmocka_unit_test(test_build_clusters),
	};
	return cmocka_run_group_tests_name(TU_GROUP("leafcap"), tests, NULL, NULL);
}
