// query_knn.c: the k nearest items to a point (ortN_tree_nearest), best-first
// over one frontier that holds both the tree's nodes and the groups of its big
// own lists' indexes (tree_ownidx.h).
//
// The frontier is in (squared distance, least id) order, in two heaps
// (knn_heap.h: KNN_HEAP), the nearer top popped first:
//
//   nodes           at the distance of a subtree's bound (least id 0: none
//                   known), as small records, the only ones a uniform scene
//                   makes;
//   own-list parts  a node's tail (the unindexed chunks of an indexed own
//                   list) at the node's distance with the tail's least id,
//                   and index groups at their bound's distance with their
//                   least id.
//
// Popping a node tests an unindexed own list whole and offers the rest to the
// frontier: its tail, its index's runs (their top groups) and its children.
// Popping a group offers the OWN_GROUP below it, or tests the chunk's entries. The
// results are ordered by reported distance, then id (knn_heap.h: knn_best).
//
// Why one frontier, ordered by id too: boxes that all hold the query point
// are all at distance 0 from it, so only their ids tell the k results apart.
// Popped in order of least id, the groups give up the least ids first, and
// once k are found a group no nearer than the k-th whose least id is above
// the k-th's is dropped (knn_tie_lost) — so such a pile costs about k groups a
// level, not every chunk. Walking each node's index on its own, depth first,
// found the least ids late and opened most groups of the pile; a node's tail
// tested when the node was popped cost every node holding the point its
// whole tail. (Near-ties at other distances — thin boxes through one point,
// seen from afar — lean on the index's layout instead: tree_ownidx.c cuts
// where the sides' bounds shrink most, on the thin axes.)
//
// leaves placement: an entry is reported only from the leaf owning the point
// it is measured to (query.c: leaf_owns), so every copy but one is skipped.
#include "knn_heap.h"
#include "tree_int.h"
#include "tree_ownidx.h"

#ifdef ORTHANT_COUNT_WORK
/// What a search's share of work_box_tests went to (a test-only build counts
/// it; tests/test_adversarial.c prints it): nodes, index groups, and entries
/// of own lists without an index (tested whole). The rest are entries of
/// index chunks and tails.
extern uint64_t ORTHANT_NAME(work_knn_nodes), ORTHANT_NAME(work_knn_groups), ORTHANT_NAME(work_knn_list);
uint64_t ORTHANT_NAME(work_knn_nodes), ORTHANT_NAME(work_knn_groups), ORTHANT_NAME(work_knn_list);
#define WORK_KNN(what, n) (ORTHANT_NAME(work_knn_##what) += (uint64_t)(n))
#else
#define WORK_KNN(what, n) ((void)0)
#endif

/// A part of a node's own list on the frontier: group (level, pos) of run
/// `run` of its index, or (level KNN_TAIL) its tail.
typedef struct knn_part {
	double d2;      ///< a lower bound of the squared distance of what it holds
	uint32_t least; ///< a lower bound of the ids it holds
	uint32_t node;
	uint32_t pos;
	uint16_t run, level;
} knn_part;

#define KNN_TAIL UINT16_MAX

static inline bool knn_part_before(const knn_part *a, const knn_part *b)
{
	return a->d2 < b->d2 || (a->d2 == b->d2 && a->least < b->least);
}

KNN_HEAP(knn_parts, knn_part, knn_part_before)

typedef struct knn_search {
	const tree_t *t;
	const float *point;
	uint64_t mask;
	double limit2;
	double beyond; ///< knn_beyond of the worst of k found: nothing that far can enter
	knn_best *best; ///< the k best so far, a max-heap: best[0] the worst of them
	int n, k;
	bool leaves;
	knn_heap nodes;
	knn_parts parts;
} knn_search;

/// Whether nothing at squared distance d2 or more, of ids `least` or more,
/// can rank before the k-th found: (float)sqrt is monotone, so all of it is
/// reported at the k-th's distance or beyond, and an equal distance loses on
/// the id.
static inline bool knn_tie_lost(const knn_search *s, double d2, uint32_t least)
{
	return s->n == s->k && least > s->best[0].id && (float)sqrt(d2) >= s->best[0].dist;
}

/// Whether something at squared distance d2 or more, of ids `least` or more,
/// may still enter the k best.
static inline bool knn_may_enter(const knn_search *s, double d2, uint32_t least)
{
	return d2 <= s->limit2 && d2 < s->beyond && !knn_tie_lost(s, d2, least);
}

/// Test the fill entries of chunk c of node nd. (The search's state in
/// locals: stores through best[] would make the compiler reload it per entry.)
static inline void knn_chunk(knn_search *s, const node *nd, uint32_t c, uint32_t fill, uint32_t skip)
{
	const tree_t *t = s->t;
	const float *point = s->point;
	const uint64_t mask = s->mask;
	const double limit2 = s->limit2;
	double beyond = s->beyond;
	knn_best *best = s->best;
	int n = s->n;
	const int k = s->k;
	WORK_TESTS(fill);
	for (const entry *e = t->chunks[c].e, *end = e + fill; e < end; ++e) {
		if (skip >> (e - t->chunks[c].e) & 1) continue; // a foreign slot, given on its own
		if (mask != ORT_MASK_ALL && !(item_cat(t, e->item) & mask)) continue;
		double d2 = dist2_point_bounds(point, e->box.min, e->box.max);
		const sphere_t *sph = t->spheres ? item_sphere(t, e->item) : NULL;
		if (sph) {
			double gap = sqrt(dist2_points(point, sph->c)) - sph->r;
			d2 = gap > 0.0 ? gap * gap : 0.0;
		}
		if (d2 > limit2 || d2 >= beyond) continue;
		knn_best v = knn_make(d2, e->item + 1);
		if (n == k && !knn_before(&v, &best[0])) continue;
		if (s->leaves) {
			float p[DIM];
			clamp_point(point, &e->box, p);
			if (!leaf_owns(nd, p)) continue;
		}
		knn_offer(best, &n, k, v);
		if (n == k) beyond = knn_beyond(best[0].dist);
	}
	s->n = n;
	s->beyond = beyond;
}

/// Offer v to the frontier if what it holds may enter; false when the
/// frontier could not grow.
static inline bool knn_offer_part(knn_search *s, knn_part v)
{
	if (!knn_may_enter(s, v.d2, v.least)) return true;
	return knn_parts_push(&s->t->alloc, &s->parts, v);
}

/// Offer group (level, pos) of run r of node ni's index to the frontier.
static inline bool knn_offer_group(knn_search *s, uint32_t ni, const struct ownidx *ix, uint32_t r, uint32_t level,
                            uint32_t pos)
{
	size_t at = own_group_at(ix, r, level, pos);
	const box_t *b = &s->t->own_bounds[at];
	WORK_TESTS(1);
	WORK_KNN(groups, 1);
	if (box_inverted(b)) return true; // a released chunk
	double d2 = dist2_point_bounds(s->point, b->min, b->max);
	return knn_offer_part(s, (knn_part){d2, s->t->own_least[at], ni, pos, (uint16_t)r, (uint16_t)level});
}

/// Node ni, at squared distance d2: an unindexed own list tested, the rest to
/// the frontier.
static inline bool knn_visit_node(knn_search *s, uint32_t ni, double d2)
{
	const tree_t *t = s->t;
	const node *nd = &t->nodes[ni];
	WORK_TESTS(1);
	WORK_KNN(nodes, 1);
	if (!(nd->flags & NODE_OWNIDX)) {
		for (uint32_t c = nd->head, fill = head_fill(nd->count); c != NIL; c = t->chunks[c].next, fill = CHUNK_CAP)
			knn_chunk(s, nd, c, fill, 0);
		WORK_KNN(list, nd->count);
	} else {
		const struct ownidx *ix = own_get(t, ni);
		if ((ix->tail || ix->ftail) && !knn_offer_part(s, (knn_part){d2, ix->tail_least, ni, 0, 0, KNN_TAIL}))
			return false;
		for (uint32_t r = own_run_first(ix); r != OWN_NO_RUN; r = own_run_next(ix, r))
			if (own_run_at(ix, r)->live && !knn_offer_group(s, ni, ix, r, own_run_at(ix, r)->levels - 1, 0)) return false;
	}
	for (int c = 0; c < NCHILD; ++c) {
		uint32_t ci = nd->child[c];
		if (ci == NIL || t->nodes[ci].total == 0 || !(node_cats(t, ci) & s->mask)) continue;
		// Both the bound and (leaves) the cell hold the point an entry is
		// measured to, so the farther of the two is a lower bound.
		const node *cn = &t->nodes[ci];
		double dc = dist2_point_bounds(s->point, cn->bound.min, cn->bound.max);
		if (s->leaves) {
			double dl = dist2_point_bounds(s->point, cn->lo, cn->hi);
			if (dl > dc) dc = dl;
		}
		// A node's least id is 0: only its distance can rule it out.
		if (dc > s->limit2 || dc >= s->beyond) continue;
		if (!knn_heap_push(&t->alloc, &s->nodes, (knn_node){dc, ci})) return false;
	}
	return true;
}

/// Own-list part v, popped from the frontier: opened or tested.
static inline bool knn_visit_part(knn_search *s, const knn_part *v)
{
	const tree_t *t = s->t;
	const struct ownidx *ix = own_get(t, v->node);
	const node *nd = &t->nodes[v->node];
	if (v->level == KNN_TAIL) {
		uint32_t c = nd->head, fill = head_fill(nd->count);
		for (uint32_t left = ix->tail; left > 0; --left, c = t->chunks[c].next, fill = CHUNK_CAP) knn_chunk(s, nd, c, fill, 0);
		for (uint32_t f = 0, at = own_ftail_start(ix); f < ix->ftail; ++f) { // the foreign tail
			uint32_t a = t->own_ids[at + f];
			knn_chunk(s, nd, a / CHUNK_CAP, a % CHUNK_CAP + 1, (1u << (a % CHUNK_CAP)) - 1u);
		}
		return true;
	}
	if (v->level == 0) {
		uint32_t fill, skip, c = own_group_chunk(t, ix, v->node, v->run, v->pos, &fill, &skip);
		knn_chunk(s, nd, c, fill, skip);
		return true;
	}
	uint32_t p, end;
	own_group_below(ix, v->run, v->level, v->pos, &p, &end);
	for (; p < end; ++p)
		if (!knn_offer_group(s, v->node, ix, v->run, v->level - 1u, p)) return false;
	return true;
}

ort_result ORTHANT_NAME(tree_nearest)(const tree_t *t, const float point[DIM], int k, float max_distance,
                                      uint64_t mask, ORTHANT_NAME(neighbor) * out, int *found)
{
	if (found) *found = 0;
	if (!t || !point || !found || k < 0 || (k > 0 && !out)) return ORT_ERROR_INVALID_ARGUMENT;
	if (point_check(point) != ORT_OK || isnan(max_distance) || max_distance < 0.0f) return ORT_ERROR_INVALID_BOX;
	ort_result attached = detached_read(t);
	if (attached != ORT_OK) return attached;
	if (k == 0 || t->root == NIL) return ORT_OK;
	if ((uint32_t)k > t->live) k = (int)t->live;
	if (k == 0) return ORT_OK;
	knn_best local_best[64];
	// Field by field: an initializer would clear the heaps' local arrays.
	knn_search s;
	s.t = t;
	s.point = point;
	s.mask = mask;
	s.limit2 = isinf(max_distance) ? INFINITY : (double)max_distance * max_distance;
	s.beyond = INFINITY;
	s.best = k <= 64 ? local_best : query_alloc(t, (size_t)k * sizeof *s.best);
	s.n = 0;
	s.k = k;
	s.leaves = t->def.placement == ORT_PLACEMENT_LEAVES;
	if (!s.best) return ORT_ERROR_OUT_OF_MEMORY;
	knn_heap_init(&s.nodes);
	knn_parts_init(&s.parts);
	ort_result result = ORT_OK;
	knn_heap_push(&t->alloc, &s.nodes, (knn_node){0.0, t->root});
	for (;;) {
		bool ok;
		// The nearer top first; of equal distances the node (least id 0).
		if (s.parts.n > 0 && (s.nodes.n == 0 || s.parts.data[0].d2 < s.nodes.data[0].d2)) {
			knn_part v = knn_parts_pop(&s.parts);
			// Nothing after it is nearer. Equal distances are still visited:
			// they may hold a tie with a lower id.
			if (v.d2 > s.limit2 || v.d2 >= s.beyond) break;
			if (knn_tie_lost(&s, v.d2, v.least)) continue; // the k-th found since it was offered
			ok = knn_visit_part(&s, &v);
		} else if (s.nodes.n > 0) {
			knn_node v = knn_heap_pop(&s.nodes);
			if (v.d2 > s.limit2 || v.d2 >= s.beyond) break;
			ok = knn_visit_node(&s, v.node, v.d2);
		} else {
			break;
		}
		if (!ok) {
			result = ORT_ERROR_OUT_OF_MEMORY;
			goto done;
		}
	}
	knn_heap_sort(s.best, s.n);
	for (int i = 0; i < s.n; ++i) {
		uint32_t item_index = s.best[i].id - 1;
		out[i] = (ORTHANT_NAME(neighbor)){make_handle(t, item_index), t->items[item_index].user, s.best[i].dist};
	}
	*found = s.n;
done:
	knn_heap_free(&t->alloc, &s.nodes);
	knn_parts_free(&t->alloc, &s.parts);
	if (s.best != local_best) query_free(t, s.best, (size_t)k * sizeof *s.best);
	return result;
}
