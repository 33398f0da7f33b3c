/// @file report.h
/// orthant_bench internals shared by main.c (the runners) and report.c (the
/// tables, CSV, SVG and target report): the result records and the globals.
#ifndef ORTHANT_BENCH_REPORT_H
#define ORTHANT_BENCH_REPORT_H

#include <stdio.h>

#include "bench.h"


#define BENCH_MAX_IMPLS 32
#define BENCH_MAX_ROUNDS 15
#define BENCH_MAX_CASES 24
#define BENCH_SEED 20240601u

enum { RES_OK = 0, RES_MISMATCH = 1 };

typedef struct bench_result {
	int ran;                       // rounds run
	double t[BENCH_MAX_ROUNDS];    // seconds per frame (or per phase), NAN when not run
	double bytes_per_obj;          // heap growth while the structure lived, per object
	double lib_bytes_per_obj;      // the structure's own count (orthant: stats.bytes), 0 if unknown
	double lib_pair_bytes_per_obj; // of which grow with the pairs (orthant: stats.bytes_pairs), 0 if unknown
	double per_unit;               // pairs per frame, hits per query...
	int status;
	int frames;                    // frames in the first round
} bench_result;

typedef struct bench_case {
	char id[24];
	char desc[128];
	int n, dim;
	int frames;
	const char *unit_label; // what per_unit counts
	bench_result res[BENCH_MAX_IMPLS];
	int used;
} bench_case;

typedef struct bench_opts {
	int quick;
	int rounds;
	const char *only;
	const char *impls; // --impls: only implementations whose name contains one of these words
	char machine[64];
	const char *csv;
	const char *svg;
	double run_budget;  // seconds one implementation may spend per run of a dynamic scene
	int brute_check_max; // largest n whose reference is checked by brute force
} bench_opts;

extern bench_impl g_impls[BENCH_MAX_IMPLS];
extern int g_nimpl;
extern bench_case g_cases[BENCH_MAX_CASES];
extern int g_ncases;
extern bench_opts g_opt;

/// The Markdown tables (report.c).
void print_tables(FILE *out);
/// The target report (report.c).
void print_targets(FILE *out);
/// Every result as CSV, and the plot as SVG (report.c).
void write_csv(const char *path);
void write_svg(const char *path);

#endif
