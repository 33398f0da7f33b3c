// packed.c: the packed tree's life and inspection — create, destroy, count,
// bounds, statistics, the node walk and validate. Build is in
// packed_build.c, queries in packed_query.c, pairs in packed_pairs.c.
#include <stdio.h>

#include "packed_int.h"

// ---- create / destroy ----------------------------------------------------------

pdef_t ORTHANT_NAME(packed_default_def)(void) { return (pdef_t){.bucket_size = 16, .max_depth = PK_MAX_DEPTH}; }

ort_result ORTHANT_NAME(packed_create)(const pdef_t *def, packed_t **out)
{
	if (out) *out = NULL;
	if (!def || !out) return ORT_ERROR_INVALID_ARGUMENT;
	if (def->bucket_size < 1 || def->bucket_size > 64 || def->max_depth < 1 || def->max_depth > PK_MAX_DEPTH)
		return ORT_ERROR_INVALID_ARGUMENT;
	if (!def->allocator.alloc != !def->allocator.free) return ORT_ERROR_INVALID_ARGUMENT;
	if (def->use_region && box_check(&def->region) != ORT_OK) return ORT_ERROR_INVALID_ARGUMENT;
	packed_t *p = allocator_alloc(&def->allocator, sizeof *p);
	if (!p) return ORT_ERROR_OUT_OF_MEMORY;
	memset(p, 0, sizeof *p);
	atomic_init(&p->readers, 0);
	atomic_init(&p->destroy_pending, false);
	atomic_init(&p->keys_taken, false);
	atomic_init(&p->keys_bytes, 0);
	p->def = *def;
	p->bounds = pk_empty_box();
	p->bytes = p->bytes_peak = sizeof *p;
	*out = p;
	return ORT_OK;
}

static void pk_destroy_now(packed_t *p)
{
	pk_free_items(p, p->boxes, p->ids, p->sort_a, p->sort_b, p->cap);
	pk_free(p, p->blocks, (size_t)p->block_cap * sizeof *p->blocks);
	if (p->keys) allocator_free(&p->def.allocator, p->keys, p->keys_cap * sizeof *p->keys);
	ort_allocator a = p->def.allocator;
	allocator_free(&a, p, sizeof *p);
}

void ORTHANT_NAME(packed_destroy)(packed_t *p)
{
	if (!p) return;
	if (atomic_load_explicit(&p->readers, memory_order_acquire) > 0) {
		// From a callback: the walk that called it still reads the arrays.
		atomic_store_explicit(&p->destroy_pending, true, memory_order_release);
		return;
	}
	pk_destroy_now(p);
}

void ORTHANT_NAME(packed_set_tasks)(packed_t *p, ort_tasks *tasks)
{
	if (p) p->def.tasks = tasks;
}

int ORTHANT_NAME(packed_count)(const packed_t *p) { return p ? (int)p->count : 0; }

box_t ORTHANT_NAME(packed_bounds)(const packed_t *p) { return p ? p->bounds : pk_empty_box(); }

// ---- stats and validation -------------------------------------------------------

static void pk_stats_walk(const packed_t *p, pk_ref x, int depth, ort_tree_stats *s)
{
	const pblock *b = &p->blocks[x.block];
	s->nodes++;
	if (depth > s->depth) s->depth = depth;
	s->items_per_level[depth < ORTHANT_STATS_LEVELS ? depth : ORTHANT_STATS_LEVELS - 1] += (int)b->own[x.lane];
	uint32_t ci = b->child[x.lane];
	if (ci == NIL) {
		s->leaves++;
		return;
	}
	for (uint32_t k = 0; k < p->blocks[ci].kids; ++k) pk_stats_walk(p, (pk_ref){ci, (int)k}, depth + 1, s);
}

void ORTHANT_NAME(packed_get_stats)(const packed_t *p, ort_tree_stats *out)
{
	if (!out) return;
	memset(out, 0, sizeof *out);
	if (!p) return;
	out->items = out->entries = (int)p->count;
	size_t keys = atomic_load_explicit(&((packed_t *)p)->keys_bytes, memory_order_relaxed);
	out->bytes = p->bytes + keys;
	out->bytes_peak = p->bytes_peak > out->bytes ? p->bytes_peak : out->bytes;
	if (p->block_count) pk_stats_walk(p, (pk_ref){0, 0}, 0, out);
}

static void pk_visit_node(const packed_t *p, pk_ref x, int depth, ORTHANT_NAME(node_fn) * fn, void *ctx)
{
	const pblock *b = &p->blocks[x.block];
	box_t bounds = pk_lane_box(b, x.lane);
	fn(ctx, &bounds, &bounds, depth, (int)b->own[x.lane]);
	uint32_t ci = b->child[x.lane];
	if (ci == NIL) return;
	for (uint32_t k = 0; k < p->blocks[ci].kids; ++k) pk_visit_node(p, (pk_ref){ci, (int)k}, depth + 1, fn, ctx);
}

void ORTHANT_NAME(packed_visit_nodes)(const packed_t *p, ORTHANT_NAME(node_fn) * fn, void *ctx)
{
	if (p && fn && p->block_count) pk_visit_node(p, (pk_ref){0, 0}, 0, fn, ctx);
}

static ort_result pk_fail(char *msg, size_t size, const char *what, uint32_t i)
{
	if (msg && size) snprintf(msg, size, "packed block %u: %s", (unsigned)i, what);
	return ORT_ERROR_CORRUPT;
}

static bool pk_box_holds(const box_t *outer, const box_t *inner)
{
	for (int d = 0; d < DIM; ++d)
		if (inner->min[d] < outer->min[d] || inner->max[d] > outer->max[d]) return false;
	return true;
}

ort_result ORTHANT_NAME(packed_validate)(const packed_t *p, char *msg, size_t msg_size)
{
	if (msg && msg_size) msg[0] = '\0';
	if (!p) return ORT_ERROR_INVALID_ARGUMENT;
	uint32_t nb = p->block_count, n = p->count;
	if (n > p->cap || nb > p->block_cap || (n == 0) != (nb == 0))
		return pk_fail(msg, msg_size, "counts past capacity", 0);
	if (n == 0) return ORT_OK;
	// Scratch: each block's item end, and one bit per block and per id.
	size_t bwords = ((size_t)nb + 63) / 64, iwords = ((size_t)n + 63) / 64;
	size_t size = (size_t)nb * sizeof(uint32_t) + (bwords + iwords) * sizeof(uint64_t);
	void *mem = allocator_alloc(&p->def.allocator, size);
	if (!mem) return ORT_ERROR_OUT_OF_MEMORY;
	memset(mem, 0, size);
	uint64_t *block_seen = mem, *id_seen = block_seen + bwords;
	uint32_t *end = (uint32_t *)(id_seen + iwords);
	ort_result res = ORT_OK;
	// Links: a block's children come later in the array (so there is no
	// cycle), and every block but the root's is some lane's children exactly once.
	if (p->blocks[0].kids != 1) res = pk_fail(msg, msg_size, "the root block holds more than the root", 0);
	for (uint32_t i = 0; i < nb && res == ORT_OK; ++i) {
		const pblock *b = &p->blocks[i];
		if (b->kids < 1 || b->kids > NCHILD) res = pk_fail(msg, msg_size, "lanes in use out of range", i);
		for (uint32_t k = 0; k < NCHILD && res == ORT_OK; ++k) {
			uint32_t c = b->child[k];
			box_t lb = pk_lane_box(b, (int)k);
			if (k >= b->kids) {
				if (c != NIL || b->own[k] != 0 || pk_overlap(&lb, &lb) || (b->ordered >> k & 1u))
					res = pk_fail(msg, msg_size, "an unused lane that is not empty", i);
				continue;
			}
			if (c != NIL && (c <= i || c >= nb)) {
				res = pk_fail(msg, msg_size, "children out of range", i);
				break;
			}
			if (c == NIL && b->own[k] == 0) res = pk_fail(msg, msg_size, "an empty leaf", i);
			if (c != NIL && !(b->ordered >> k & 1u)) res = pk_fail(msg, msg_size, "a node's own run not ordered", i);
			if (c != NIL && b->own[k] == 0 && p->blocks[c].kids == 1)
				res = pk_fail(msg, msg_size, "a node with one child and no items", i);
			if (c != NIL) {
				if (block_seen[c / 64] >> (c % 64) & 1u) res = pk_fail(msg, msg_size, "a block with two parents", c);
				block_seen[c / 64] |= (uint64_t)1 << (c % 64);
			}
		}
	}
	for (uint32_t i = 1; i < nb && res == ORT_OK; ++i)
		if (!(block_seen[i / 64] >> (i % 64) & 1u)) res = pk_fail(msg, msg_size, "a block no parent reaches", i);
	// Items: each block's lanes tile a run, each lane's children follow its own
	// items; bounds hold every box below them. Children come later, so a
	// backward pass sees them first.
	for (uint32_t i = nb; i-- > 0 && res == ORT_OK;) {
		const pblock *b = &p->blocks[i];
		uint32_t at = b->first[0];
		for (uint32_t k = 0; k < b->kids && res == ORT_OK; ++k) {
			box_t lb = pk_lane_box(b, (int)k);
			if (b->first[k] != at || b->first[k] > n || b->own[k] > n - b->first[k]) {
				res = pk_fail(msg, msg_size, "lanes do not tile the items", i);
				break;
			}
			at = b->first[k] + b->own[k];
			for (uint32_t e = b->first[k]; e < at && res == ORT_OK; ++e) {
				if (!pk_box_holds(&lb, &p->boxes[e])) res = pk_fail(msg, msg_size, "bounds miss an item", i);
				if (p->ids[e] < b->least[k]) res = pk_fail(msg, msg_size, "an item's id below its lane's least", i);
				if ((b->ordered >> k & 1u) && e > b->first[k] && p->ids[e] <= p->ids[e - 1])
					res = pk_fail(msg, msg_size, "an ordered lane's own ids not ascending", i);
			}
			uint32_t c = b->child[k];
			if (c == NIL || res != ORT_OK) continue;
			const pblock *cb = &p->blocks[c];
			if (cb->first[0] != at) res = pk_fail(msg, msg_size, "children do not follow their parent's items", i);
			for (uint32_t l = 0; l < cb->kids && res == ORT_OK; ++l) {
				box_t clb = pk_lane_box(cb, (int)l);
				if (!pk_box_holds(&lb, &clb)) res = pk_fail(msg, msg_size, "bounds miss a child", i);
				if (cb->least[l] < b->least[k]) res = pk_fail(msg, msg_size, "a child's least id below its parent's", i);
			}
			at = end[c];
		}
		end[i] = at;
	}
	if (res == ORT_OK && (p->blocks[0].first[0] != 0 || end[0] != n))
		res = pk_fail(msg, msg_size, "the root does not span the items", 0);
	// Ids: a permutation of 0..count-1.
	for (uint32_t k = 0; k < n && res == ORT_OK; ++k) {
		uint32_t id = p->ids[k];
		if (id >= n || (id_seen[id / 64] >> (id % 64) & 1u))
			res = pk_fail(msg, msg_size, "ids are not a permutation", k);
		else
			id_seen[id / 64] |= (uint64_t)1 << (id % 64);
		if (res == ORT_OK && box_check(&p->boxes[k]) != ORT_OK) res = pk_fail(msg, msg_size, "a bad box", k);
	}
	allocator_free(&p->def.allocator, mem, size);
	return res;
}
