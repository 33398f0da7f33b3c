/// @file peer_pairset.h
/// The persistent pair set the engine adapters keep (Box2D v3 and Jolt keep one
/// too: a hash set of pair keys beside a dense array of contacts). Keys are
/// (hi << 32 | lo) with lo < hi, so the all-ones word never is a key and marks
/// an empty slot. Linear probing with backward-shift deletion: no tombstones,
/// so a set that adds and drops pairs every frame never degrades.
///
/// The dense array `keys` lists the set in insertion order; the adapter walks
/// it each frame (its narrow phase), compacting away the pairs whose fat boxes
/// separated and calling bench_pairset_forget for each, as the engines drop a
/// contact whose fat boxes no longer overlap.
#ifndef BENCH_PEER_PAIRSET_H
#define BENCH_PEER_PAIRSET_H

#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "bench.h"

#define BENCH_PAIRSET_EMPTY (~(uint64_t)0)

typedef struct bench_pairset {
	uint64_t *slots; // hash table, power-of-two size
	size_t mask;     // slots - 1
	size_t live;     // keys in the table
	uint64_t *keys;  // dense array of the set (the contacts)
	size_t count, cap;
} bench_pairset;

static inline void bench_pairset_table(bench_pairset *s, size_t size)
{
	s->slots = (uint64_t *)malloc(sizeof(uint64_t) * size);
	if (!s->slots) abort();
	memset(s->slots, 0xff, sizeof(uint64_t) * size);
	s->mask = size - 1;
	s->live = 0;
}

static inline void bench_pairset_init(bench_pairset *s)
{
	memset(s, 0, sizeof *s);
	bench_pairset_table(s, 1024);
}

static inline void bench_pairset_free(bench_pairset *s)
{
	free(s->slots);
	free(s->keys);
	memset(s, 0, sizeof *s);
}

static inline int bench_pairset_insert_slot(bench_pairset *s, uint64_t key)
{
	size_t i = (size_t)bench_mix(key) & s->mask;
	while (s->slots[i] != BENCH_PAIRSET_EMPTY) {
		if (s->slots[i] == key) return 0;
		i = (i + 1) & s->mask;
	}
	s->slots[i] = key;
	s->live++;
	return 1;
}

/// Add key; returns 1 when it was new (and appends it to keys), 0 when present.
static inline int bench_pairset_add(bench_pairset *s, uint64_t key)
{
	if (2 * (s->live + 1) > s->mask + 1) { // keep the load under 1/2
		uint64_t *old = s->slots;
		size_t n = s->mask + 1;
		bench_pairset_table(s, 2 * n);
		for (size_t i = 0; i < n; ++i)
			if (old[i] != BENCH_PAIRSET_EMPTY) bench_pairset_insert_slot(s, old[i]);
		free(old);
	}
	if (!bench_pairset_insert_slot(s, key)) return 0;
	if (s->count == s->cap) {
		s->cap = s->cap ? 2 * s->cap : 1024;
		s->keys = (uint64_t *)realloc(s->keys, sizeof(uint64_t) * s->cap);
		if (!s->keys) abort();
	}
	s->keys[s->count++] = key;
	return 1;
}

/// Drop key from the hash table (the caller compacts it out of keys).
static inline void bench_pairset_forget(bench_pairset *s, uint64_t key)
{
	size_t i = (size_t)bench_mix(key) & s->mask;
	while (s->slots[i] != key) {
		if (s->slots[i] == BENCH_PAIRSET_EMPTY) return;
		i = (i + 1) & s->mask;
	}
	// Backward shift: pull later entries of the probe run into the hole.
	size_t hole = i;
	for (size_t j = (i + 1) & s->mask; s->slots[j] != BENCH_PAIRSET_EMPTY; j = (j + 1) & s->mask) {
		size_t home = (size_t)bench_mix(s->slots[j]) & s->mask;
		// Move j into the hole unless its home lies cyclically in (hole, j].
		if (((j - home) & s->mask) >= ((j - hole) & s->mask)) {
			s->slots[hole] = s->slots[j];
			hole = j;
		}
	}
	s->slots[hole] = BENCH_PAIRSET_EMPTY;
	s->live--;
}

static inline size_t bench_pairset_bytes(const bench_pairset *s)
{
	return sizeof(uint64_t) * (s->mask + 1 + s->cap);
}

#endif
