/// @file cli_test.c
/// Tests of the `orthant` command-line tool: they run the built binary on
/// generated scene files and compare what it prints with a brute-force oracle
/// computed here, byte for byte (rays and kNN fall back to a comparison with a
/// tolerance on the printed number), and check every error class with its line
/// number and exit status.
///
/// usage: cli_test GROUP ORTHANT WORKDIR   (GROUP: parse errors usage pairs query
///                                          ray knn stats render limits
///                                          threads)
///        cli_test gen COUNT DIM FILE      (write a large scene, for timing)
#define _DEFAULT_SOURCE // wait4, for the child's peak memory
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <math.h>
#include <spawn.h>
#include <stdarg.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <signal.h>
#include <sys/resource.h>
#include <sys/stat.h>
#include <sys/time.h>
#include <sys/wait.h>
#include <unistd.h>

#include "scene_file.h"

extern char **environ;

// ---------------------------------------------------------------------------
// The harness

static int t_failures, t_checks;
static const char *t_bin, *t_dir;
static char t_context[512]; // what is being run, printed with a failure

#define CHECK(cond, ...) t_check((cond), __FILE__, __LINE__, __VA_ARGS__)

static bool t_check(bool ok, const char *file, int line, const char *fmt, ...)
{
	t_checks++;
	if (ok)
		return true;
	t_failures++;
	if (t_failures <= 30) {
		va_list ap;
		va_start(ap, fmt);
		fprintf(stderr, "%s:%d: FAILED: ", file, line);
		vfprintf(stderr, fmt, ap);
		fprintf(stderr, "\n  while running: %s\n", t_context);
		va_end(ap);
	}
	return false;
}

/// A file in WORKDIR (the current directory while the tests run).
static char *t_path(const char *name) { return (char *)name; }

static char *t_slurp(const char *path, size_t *len)
{
	FILE *f = fopen(path, "rb");
	size_t cap = 4096, n = 0;
	char *s = malloc(cap + 1);
	if (f) {
		size_t got;
		while ((got = fread(s + n, 1, cap - n, f)) > 0) {
			n += got;
			if (n == cap)
				s = realloc(s, (cap *= 2) + 1);
		}
		fclose(f);
	}
	s[n] = '\0';
	if (len)
		*len = n;
	return s;
}

typedef struct t_run {
	int status;
	char *out, *err;
	size_t out_len, err_len;
} t_run;

static void t_run_free(t_run *r)
{
	free(r->out);
	free(r->err);
}

/// Run the binary with args (NULL-terminated), stdin from in_path (or /dev/null).
static t_run t_exec(const char *in_path, const char *const *args)
{
	char *argv[64];
	int n = 0;
	argv[n++] = (char *)t_bin;
	size_t used = 0;
	t_context[0] = '\0';
	used += (size_t)snprintf(t_context, sizeof t_context, "orthant");
	for (; *args && n < 63; args++) {
		argv[n++] = (char *)*args;
		if (used < sizeof t_context)
			used += (size_t)snprintf(t_context + used, sizeof t_context - used, " %s", *args);
	}
	argv[n] = NULL;
	char *out_path = t_path("stdout.txt"), *err_path = t_path("stderr.txt");
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_addopen(&fa, 0, in_path ? in_path : "/dev/null", O_RDONLY, 0);
	posix_spawn_file_actions_addopen(&fa, 1, out_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, err_path, O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	t_run r = {.status = -1};
	int e = posix_spawn(&pid, t_bin, &fa, NULL, argv, environ);
	posix_spawn_file_actions_destroy(&fa);
	if (e != 0) {
		fprintf(stderr, "cannot run %s: %s\n", t_bin, strerror(e));
		exit(2);
	}
	int ws;
	while (waitpid(pid, &ws, 0) < 0 && errno == EINTR) {
	}
	r.status = WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
	r.out = t_slurp(out_path, &r.out_len);
	r.err = t_slurp(err_path, &r.err_len);
	return r;
}

#define RUN(...) t_exec(NULL, (const char *const[]){__VA_ARGS__, NULL})
#define RUN_STDIN(path, ...) t_exec(path, (const char *const[]){__VA_ARGS__, NULL})

static void t_write_file(const char *path, const char *text);
static void t_expect_output(t_run *r, const char *want);

/// Run args (NULL-terminated, stdin from in_path) as given, then again with
/// --placement packed right after the command (so that options given later
/// still apply), and expect want from both.
static void t_expect_each_tree(const char *in_path, const char *want, const char *const *args)
{
	const char *packed[64] = {args[0], "--placement=packed"};
	for (int i = 1; args[i - 1] && i < 62; i++)
		packed[i + 1] = args[i];
	const char *const *runs[2] = {args, packed};
	for (int k = 0; k < 2; k++) {
		t_run r = t_exec(in_path, runs[k]);
		t_expect_output(&r, want);
		t_run_free(&r);
	}
}

#define EXPECT_EACH(want, ...) t_expect_each_tree(NULL, want, (const char *const[]){__VA_ARGS__, NULL})
#define EXPECT_EACH_STDIN(path, want, ...) t_expect_each_tree(path, want, (const char *const[]){__VA_ARGS__, NULL})

/// Keep the scene of the first failure as failed-scene.txt, to replay by hand.
static void t_keep_scene(void)
{
	static bool kept;
	if (kept)
		return;
	kept = true;
	size_t len;
	char *text = t_slurp("scene.txt", &len);
	t_write_file("failed-scene.txt", text);
	free(text);
}

/// A run that must succeed with an empty stderr and print exactly `want`.
static void t_expect_output(t_run *r, const char *want)
{
	CHECK(r->status == 0, "exit status %d, stderr: %s", r->status, r->err);
	CHECK(r->err_len == 0, "stderr not empty: %s", r->err);
	if (!CHECK(strcmp(r->out, want) == 0, "output differs from the oracle")) {
		// Show the first differing line.
		const char *a = r->out, *b = want;
		int line = 1;
		while (*a && *a == *b) {
			if (*a == '\n')
				line++;
			a++, b++;
		}
		fprintf(stderr, "  first difference on line %d: got '%.60s' want '%.60s'\n", line, a, b);
		t_keep_scene();
	}
}

// ---------------------------------------------------------------------------
// Growing strings

typedef struct t_str {
	char *s;
	size_t len, cap;
} t_str;

static void t_printf(t_str *b, const char *fmt, ...)
{
	for (;;) {
		va_list ap;
		va_start(ap, fmt);
		size_t room = b->s ? b->cap - b->len : 0;
		char none[1];
		int n = vsnprintf(b->s ? b->s + b->len : none, b->s ? room : 0, fmt, ap);
		va_end(ap);
		if ((size_t)n < room) {
			b->len += (size_t)n;
			return;
		}
		b->cap = (b->cap + (size_t)n + 1) * 2;
		b->s = realloc(b->s, b->cap);
	}
}

static const char *t_cstr(t_str *b)
{
	if (!b->s)
		t_printf(b, "%s", "");
	return b->s;
}

static void t_write_file(const char *path, const char *text)
{
	FILE *f = fopen(path, "wb");
	if (!f) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
	fputs(text, f);
	fclose(f);
}

// ---------------------------------------------------------------------------
// Random numbers (splitmix64)

static uint64_t t_seed = 0x243f6a8885a308d3ULL;

static uint64_t t_next(void)
{
	uint64_t z = (t_seed += 0x9e3779b97f4a7c15ULL);
	z = (z ^ (z >> 30)) * 0xbf58476d1ce4e5b9ULL;
	z = (z ^ (z >> 27)) * 0x94d049bb133111ebULL;
	return z ^ (z >> 31);
}

static int t_int(int lo, int hi) { return lo + (int)(t_next() % (uint64_t)(hi - lo + 1)); }

static double t_unit(void) { return (double)(t_next() >> 11) * (1.0 / 9007199254740992.0); }

// ---------------------------------------------------------------------------
// Scenes

typedef struct t_scene {
	int dim;
	size_t n;
	uint64_t *ids;
	float (*b)[6]; // min[0..dim) then max[0..dim)
} t_scene;

static void t_scene_free(t_scene *s)
{
	free(s->ids);
	free(s->b);
}

typedef enum t_variant {
	T_GRID,     ///< small integer grid: touching edges, centre lines, duplicates, points
	T_FAR_POS,  ///< the grid shifted to near +1e6 (float spacing 0.0625 there)
	T_FAR_NEG,  ///< near -1e6, with huge boxes across the origin
	T_RANDOM,   ///< random floats, a few huge boxes
	T_VARIANT_COUNT
} t_variant;

/// Unique IDs spread over the whole u64 range, 0 and UINT64_MAX included, in
/// no order.
static uint64_t t_id(size_t i)
{
	if (i == 0)
		return UINT64_MAX;
	if (i == 1)
		return 0;
	if (i % 3 == 0)
		return (uint64_t)i * 7 + 3; // small
	uint64_t z = (uint64_t)i * 0x9e3779b97f4a7c15ULL; // odd multiplier: a bijection
	z ^= z >> 29;
	return z | (1ULL << 63); // large: cannot collide with the small ones
}

static void t_scene_make(t_scene *s, int dim, size_t n, t_variant v)
{
	s->dim = dim;
	s->n = n;
	s->ids = malloc(n * sizeof *s->ids);
	s->b = malloc(n * sizeof *s->b);
	double unit = v == T_GRID ? 1.0 : 0.5, offset = v == T_FAR_POS ? 1e6 - 8 : v == T_FAR_NEG ? -1e6 + 8 : 0;
	for (size_t i = 0; i < n; i++) {
		s->ids[i] = t_id(i);
		float *b = s->b[i];
		int kind = t_int(0, 19);
		if (i > 0 && kind == 0) { // an exact duplicate box of an earlier one
			memcpy(b, s->b[t_int(0, (int)i - 1)], sizeof s->b[0]);
			continue;
		}
		for (int a = 0; a < dim; a++) {
			double lo, hi;
			if (v == T_RANDOM && kind > 2) {
				lo = t_unit() * 200 - 100;
				hi = lo + t_unit() * t_unit() * 30;
			} else {
				int g0 = t_int(-16, 16), len = kind == 1 ? 0 : t_int(0, 6); // kind 1: a point
				if (kind == 2 && a == 0)
					len = 0; // a flat box
				lo = offset + g0 * unit;
				hi = lo + len * unit;
			}
			if (kind == 19 || (v == T_FAR_NEG && kind == 18)) { // a huge box
				lo = v == T_FAR_NEG ? -1.5e6 : -1e5 * (1 + a);
				hi = v == T_FAR_NEG ? 2e5 : 3e5;
			}
			b[a] = (float)lo;
			b[dim + a] = (float)hi;
		}
	}
}

/// Write the scene with comments, blank lines, mixed separators and CRLF.
static void t_scene_write(const t_scene *s, const char *path)
{
	FILE *f = fopen(path, "wb");
	fprintf(f, "# a generated %dD scene of %zu objects\n\n", s->dim, s->n);
	for (size_t i = 0; i < s->n; i++) {
		if (i % 17 == 5)
			fprintf(f, "   # a comment\n");
		if (i % 23 == 7)
			fprintf(f, "\t\n");
		fprintf(f, "%" PRIu64, s->ids[i]);
		for (int k = 0; k < 2 * s->dim; k++)
			fprintf(f, "%s%.9g", (i + (size_t)k) % 5 == 0 ? "\t" : (i % 7 == 0 ? "  " : " "), s->b[i][k]);
		fputs(i % 11 == 3 ? " \r\n" : "\n", f);
	}
	fclose(f);
}

static bool t_overlap(const t_scene *s, size_t i, size_t j)
{
	for (int a = 0; a < s->dim; a++)
		if (s->b[i][s->dim + a] < s->b[j][a] || s->b[j][s->dim + a] < s->b[i][a])
			return false;
	return true;
}

static int t_u64_cmp(const void *pa, const void *pb)
{
	uint64_t a = *(const uint64_t *)pa, b = *(const uint64_t *)pb;
	return (a > b) - (a < b);
}

static int t_pair_cmp(const void *pa, const void *pb)
{
	const uint64_t *a = pa, *b = pb;
	if (a[0] != b[0])
		return (a[0] > b[0]) - (a[0] < b[0]);
	return (a[1] > b[1]) - (a[1] < b[1]);
}

// ---------------------------------------------------------------------------
// The oracle

static void t_oracle_pairs(const t_scene *s, t_str *out)
{
	size_t cap = 1024, n = 0;
	uint64_t(*p)[2] = malloc(cap * sizeof *p);
	for (size_t i = 0; i < s->n; i++)
		for (size_t j = i + 1; j < s->n; j++)
			if (t_overlap(s, i, j)) {
				if (n == cap)
					p = realloc(p, (cap *= 2) * sizeof *p);
				uint64_t a = s->ids[i], b = s->ids[j];
				p[n][0] = a < b ? a : b;
				p[n][1] = a < b ? b : a;
				n++;
			}
	qsort(p, n, sizeof *p, t_pair_cmp);
	for (size_t i = 0; i < n; i++)
		t_printf(out, "%" PRIu64 " %" PRIu64 "\n", p[i][0], p[i][1]);
	free(p);
}

/// Squared distance from p to box i, as the tool computes it.
static double t_dist2(const t_scene *s, size_t i, const double *p)
{
	double sum = 0;
	for (int a = 0; a < s->dim; a++) {
		double d = 0;
		if (p[a] < s->b[i][a])
			d = (double)s->b[i][a] - p[a];
		else if (p[a] > s->b[i][s->dim + a])
			d = p[a] - (double)s->b[i][s->dim + a];
		sum += d * d;
	}
	return sum;
}

/// The IDs of the boxes a query touches: shape 'b' (lo, hi), 's' (centre, r), 'p'.
static void t_oracle_query(const t_scene *s, char shape, const double *v, t_str *out)
{
	uint64_t *ids = malloc((s->n + 1) * sizeof *ids);
	size_t n = 0;
	int d = s->dim;
	for (size_t i = 0; i < s->n; i++) {
		bool hit = true;
		if (shape == 's') {
			hit = t_dist2(s, i, v) <= v[d] * v[d];
		} else {
			const double *lo = v, *hi = shape == 'b' ? v + d : v;
			for (int a = 0; a < d; a++)
				if (s->b[i][d + a] < lo[a] || s->b[i][a] > hi[a])
					hit = false;
		}
		if (hit)
			ids[n++] = s->ids[i];
	}
	qsort(ids, n, sizeof *ids, t_u64_cmp);
	for (size_t i = 0; i < n; i++)
		t_printf(out, "%" PRIu64 "\n", ids[i]);
	free(ids);
}

typedef struct t_hit {
	uint64_t id;
	double value;
} t_hit;

static int t_hit_cmp(const void *pa, const void *pb)
{
	const t_hit *a = pa, *b = pb;
	if (a->value != b->value)
		return a->value < b->value ? -1 : 1;
	return (a->id > b->id) - (a->id < b->id);
}

/// The entry parameter of the segment o + t*d, t in [0, tmax], into box i.
static bool t_ray_enter(const t_scene *s, size_t i, const float *o, const float *dir, double tmax, double *t)
{
	double t0 = 0, t1 = tmax;
	for (int a = 0; a < s->dim; a++) {
		double lo = s->b[i][a], hi = s->b[i][s->dim + a];
		if (dir[a] == 0) {
			if (o[a] < lo || o[a] > hi)
				return false;
			continue;
		}
		double x = (lo - o[a]) / dir[a], y = (hi - o[a]) / dir[a];
		if (x > y) {
			double z = x;
			x = y;
			y = z;
		}
		t0 = x > t0 ? x : t0;
		t1 = y < t1 ? y : t1;
		if (t0 > t1)
			return false;
	}
	*t = t0;
	return true;
}

static void t_print_hits(t_hit *h, size_t n, size_t limit, t_str *out)
{
	qsort(h, n, sizeof *h, t_hit_cmp);
	for (size_t i = 0; i < n && i < limit; i++)
		t_printf(out, "%" PRIu64 " %.9g\n", h[i].id, h[i].value);
}

static void t_oracle_ray(const t_scene *s, const float *o, const float *dir, double tmax, t_str *out)
{
	t_hit *h = malloc((s->n + 1) * sizeof *h);
	size_t n = 0;
	for (size_t i = 0; i < s->n; i++)
		if (t_ray_enter(s, i, o, dir, tmax, &h[n].value))
			h[n++].id = s->ids[i];
	t_print_hits(h, n, SIZE_MAX, out);
	free(h);
}

static void t_oracle_knn(const t_scene *s, const double *p, size_t k, t_str *out)
{
	t_hit *h = malloc((s->n + 1) * sizeof *h);
	for (size_t i = 0; i < s->n; i++) {
		h[i].id = s->ids[i];
		h[i].value = sqrt(t_dist2(s, i, p));
	}
	t_print_hits(h, s->n, k, out);
	free(h);
}

/// Compare `ID VALUE` lists: the same IDs, each value within a relative
/// tolerance, the tool's list sorted by its printed value. For when float and
/// double arithmetic may legitimately order near-ties differently.
static bool t_close_lists(const char *got, const char *want, double tol, char *why, size_t why_size)
{
	t_hit g[4096], w[4096];
	size_t ng = 0, nw = 0;
	int used;
	for (const char *p = got; ng < 4096 && sscanf(p, "%" SCNu64 " %lf\n%n", &g[ng].id, &g[ng].value, &used) == 2;
	     p += used)
		ng++;
	for (const char *p = want; nw < 4096 && sscanf(p, "%" SCNu64 " %lf\n%n", &w[nw].id, &w[nw].value, &used) == 2;
	     p += used)
		nw++;
	if (ng != nw) {
		snprintf(why, why_size, "%zu lines, want %zu", ng, nw);
		return false;
	}
	for (size_t i = 0; i < ng; i++) {
		if (i > 0 && g[i].value < g[i - 1].value) {
			snprintf(why, why_size, "line %zu not sorted", i + 1);
			return false;
		}
		if (fabs(g[i].value - w[i].value) > tol * (1 + fabs(w[i].value))) {
			snprintf(why, why_size, "line %zu: value %.9g, want %.9g", i + 1, g[i].value, w[i].value);
			return false;
		}
		bool found = false;
		for (size_t j = 0; j < nw && !found; j++)
			found = w[j].id == g[i].id && fabs(g[i].value - w[j].value) <= tol * (1 + fabs(w[j].value));
		if (!found) {
			snprintf(why, why_size, "line %zu: ID %" PRIu64 " not expected with %.9g", i + 1, g[i].id, g[i].value);
			return false;
		}
	}
	return true;
}

/// A run that must succeed with an empty stderr and print want, or (where
/// float and double may order near-ties differently) a list close to it.
static void t_expect_close(t_run *r, const char *want, const char *what)
{
	CHECK(r->status == 0 && r->err_len == 0, "status %d, stderr: %s", r->status, r->err);
	char why[200];
	if (strcmp(r->out, want) != 0 && !CHECK(t_close_lists(r->out, want, 1e-6, why, sizeof why), "%s output: %s",
	                                        what, why))
		t_keep_scene();
}

// ---------------------------------------------------------------------------
// The configurations every answer must not depend on

typedef struct t_config {
	const char *placement, *bucket, *depth; ///< depth NULL: no --max-depth
} t_config;

/// The tree placements first, then the packed tree's (depths it takes in 2D
/// and 3D alike, and its default: 13 in 2D, 9 in 3D).
static const t_config t_configs[] = {
	{"loose", "16", "8"},   {"tight", "16", "8"},  {"leaves", "16", "8"},
	{"loose", "1", "32"},   {"tight", "2", "12"},  {"leaves", "1", "10"},
	{"loose", "4", "0"},    {"tight", "3", "3"},   {"leaves", "4", "3"},
	{"packed", "16", NULL}, {"packed", "1", NULL}, {"packed", "64", "1"},
	{"packed", "2", "5"},   {"packed", "4", "9"},
};
enum { T_CONFIG_COUNT = sizeof t_configs / sizeof t_configs[0], T_TREE_CONFIGS = 9 };

/// Whether a comparison runs configuration c: every packed one, so that the
/// packed tree meets every adversarial case, and of the tree placements those
/// from `from` in steps of `step` (all of them would make the run long).
static bool t_config_picked(int c, int from, int step)
{
	return c >= T_TREE_CONFIGS || (c >= from && (c - from) % step == 0);
}

/// The deepest level cfg allows in dim dimensions.
static long t_config_depth(const t_config *cfg, int dim)
{
	return cfg->depth ? atol(cfg->depth) : dim == 2 ? 13 : 9;
}

/// Run args (NULL-terminated) under configuration cfg, on the file path.
static t_run t_exec_config(const t_config *cfg, const char *path, const char *const *args)
{
	const char *argv[64];
	int n = 0;
	for (; *args && n < 56; args++)
		argv[n++] = *args;
	argv[n++] = "--placement";
	argv[n++] = cfg->placement;
	argv[n++] = "--bucket";
	argv[n++] = cfg->bucket;
	if (cfg->depth) {
		argv[n++] = "--max-depth";
		argv[n++] = cfg->depth;
	}
	argv[n++] = path;
	argv[n] = NULL;
	return t_exec(NULL, argv);
}

#define RUN_CONFIG(cfg, path, ...) t_exec_config(cfg, path, (const char *const[]){__VA_ARGS__, NULL})

/// Format floats as the tool's option values.
static const char *t_list(char *buf, size_t size, const float *v, int n)
{
	size_t used = 0;
	for (int i = 0; i < n; i++)
		used += (size_t)snprintf(buf + used, size - used, "%s%.9g", i ? "," : "", v[i]);
	return buf;
}

// Each scene of the run: 2D and 3D, every variant.
#define T_FOR_EACH_SCENE(s, path, n)                                                                           \
	for (int dim_ = 2; dim_ <= 3; dim_++)                                                                  \
		for (int var_ = 0; var_ < T_VARIANT_COUNT; var_++)                                             \
			for (int once_ = (t_scene_make(&s, dim_, n, (t_variant)var_), t_scene_write(&s, path), 1); \
			     once_; once_ = 0, t_scene_free(&s))

// ---------------------------------------------------------------------------
// Groups

static void t_group_pairs(void)
{
	t_scene s;
	char *path = t_path("scene.txt");
	T_FOR_EACH_SCENE(s, path, 400)
	{
		t_str want = {0};
		t_oracle_pairs(&s, &want);
		for (int c = 0; c < T_CONFIG_COUNT; c++) {
			t_run r = RUN_CONFIG(&t_configs[c], path, "pairs");
			t_expect_output(&r, t_cstr(&want));
			t_run_free(&r);
		}
		free(want.s);
	}
	// A larger scene, through standard input.
	for (int dim = 2; dim <= 3; dim++) {
		t_scene_make(&s, dim, 3000, T_RANDOM);
		t_scene_write(&s, path);
		t_str want = {0};
		t_oracle_pairs(&s, &want);
		EXPECT_EACH_STDIN(path, t_cstr(&want), "pairs", "-");
		free(want.s);
		t_scene_free(&s);
	}
}

/// A few query points of a scene: on grid lines, inside, outside, on a box's corner.
static void t_pick_point(const t_scene *s, float *p)
{
	size_t i = (size_t)t_int(0, (int)s->n - 1);
	for (int a = 0; a < s->dim; a++) {
		switch (t_int(0, 3)) {
		case 0: p[a] = s->b[i][a]; break;
		case 1: p[a] = s->b[i][s->dim + a]; break;
		case 2: p[a] = (float)((s->b[i][a] + (double)s->b[i][s->dim + a]) / 2); break;
		default: p[a] = s->b[t_int(0, (int)s->n - 1)][a] - 1.0f; break;
		}
	}
}

static void t_group_query(void)
{
	t_scene s;
	char *path = t_path("scene.txt");
	T_FOR_EACH_SCENE(s, path, 300)
	{
		int d = s.dim;
		for (int q = 0; q < 12; q++) {
			float p[3], e[3], v[7];
			double dv[7];
			char arg[256];
			t_pick_point(&s, p);
			t_pick_point(&s, e);
			char shape = "bsp"[q % 3];
			int nv;
			if (shape == 'b') {
				for (int a = 0; a < d; a++) {
					v[a] = p[a] < e[a] ? p[a] : e[a];
					v[d + a] = p[a] < e[a] ? e[a] : p[a];
				}
				nv = 2 * d;
			} else if (shape == 's') {
				memcpy(v, p, sizeof p);
				v[d] = (float)t_int(0, 4) * (q % 2 ? 0.5f : 1.0f); // radius 0 too
				nv = d + 1;
			} else {
				memcpy(v, p, sizeof p);
				nv = d;
			}
			for (int i = 0; i < nv; i++)
				dv[i] = v[i];
			t_list(arg, sizeof arg, v, nv);
			t_str want = {0};
			t_oracle_query(&s, shape, dv, &want);
			const char *opt = shape == 'b' ? "--box" : shape == 's' ? "--sphere" : "--point";
			for (int c = 0; c < T_CONFIG_COUNT; c++) {
				if (!t_config_picked(c, 0, (q % 3) + 1))
					continue;
				t_run r = RUN_CONFIG(&t_configs[c], path, "query", opt, arg);
				t_expect_output(&r, t_cstr(&want));
				t_run_free(&r);
			}
			free(want.s);
		}
		// Values that are not floats: rounded as the file's coordinates are.
		if (s.dim == 2) {
			// Query coordinates are floats, like the file's.
			double box[4] = {0.1f, -0.1f, 2.3f, 4.7f}, sph[3] = {0.3f, 0.3f, 1.9f};
			t_str want = {0};
			t_oracle_query(&s, 'b', box, &want);
			EXPECT_EACH(t_cstr(&want), "query", "--box=0.1,-0.1,2.3,4.7", path);
			want.len = 0;
			t_oracle_query(&s, 's', sph, &want);
			EXPECT_EACH(t_cstr(&want), "query", "--sphere", "0.3,0.3,1.9", path);
			free(want.s);
		}
	}
}

static void t_group_ray(void)
{
	t_scene s;
	char *path = t_path("scene.txt");
	T_FOR_EACH_SCENE(s, path, 300)
	{
		int d = s.dim;
		for (int q = 0; q < 14; q++) {
			float o[3], dir[3] = {0, 0, 0};
			t_pick_point(&s, o);
			switch (q % 7) {
			case 0: dir[q % d] = 1; break;         // along a grid line
			case 1: dir[q % d] = -0.25f; break;
			case 2: dir[0] = dir[1] = 1; break;    // diagonal through corners
			case 3: break;                         // zero direction: the origin alone
			default:
				for (int a = 0; a < d; a++)
					dir[a] = (float)(t_unit() * 2 - 1);
			}
			double tmax = q % 4 == 1 ? (double)t_int(0, 12) : INFINITY;
			char oa[128], da[128], ma[32];
			t_list(oa, sizeof oa, o, d);
			t_list(da, sizeof da, dir, d);
			snprintf(ma, sizeof ma, "%g", tmax);
			t_str want = {0};
			t_oracle_ray(&s, o, dir, tmax, &want);
			for (int c = 0; c < T_CONFIG_COUNT; c++) {
				if (!t_config_picked(c, 0, 2))
					continue;
				const t_config *cfg = &t_configs[c];
				t_run r = isinf(tmax) ? RUN_CONFIG(cfg, path, "ray", "--origin", oa, "--dir", da)
				                      : RUN_CONFIG(cfg, path, "ray", "--origin", oa, "--dir", da, "--max", ma);
				t_expect_close(&r, t_cstr(&want), "ray");
				t_run_free(&r);
			}
			free(want.s);
		}
	}
}

static void t_group_knn(void)
{
	t_scene s;
	char *path = t_path("scene.txt");
	T_FOR_EACH_SCENE(s, path, 300)
	{
		int d = s.dim;
		for (int q = 0; q < 10; q++) {
			float p[3];
			double dp[3];
			t_pick_point(&s, p);
			for (int a = 0; a < d; a++)
				dp[a] = p[a];
			static const int ks[] = {1, 2, 5, 17, 64, 299, 300, 1000};
			int k = ks[q % 8];
			char pa[128], ka[16];
			t_list(pa, sizeof pa, p, d);
			snprintf(ka, sizeof ka, "%d", k);
			t_str want = {0};
			t_oracle_knn(&s, dp, (size_t)k, &want);
			for (int c = 0; c < T_CONFIG_COUNT; c++) {
				if (!t_config_picked(c, q % 3, 3))
					continue;
				t_run r = RUN_CONFIG(&t_configs[c], path, "knn", "--point", pa, "--k", ka);
				t_expect_close(&r, t_cstr(&want), "knn");
				t_run_free(&r);
			}
			free(want.s);
		}
	}
}

/// The number after "key " in stats output; -1 when missing.
static long t_stat(const char *out, const char *key)
{
	char pat[64];
	snprintf(pat, sizeof pat, "\n%s ", key);
	size_t len = strlen(pat);
	if (!strncmp(out, pat + 1, len - 1))
		return strtol(out + len - 1, NULL, 10);
	const char *p = strstr(out, pat);
	return p ? strtol(p + len, NULL, 10) : -1;
}

static void t_group_stats(void)
{
	t_scene s;
	char *path = t_path("scene.txt");
	T_FOR_EACH_SCENE(s, path, 500)
	{
		for (int c = 0; c < T_CONFIG_COUNT; c++) {
			t_run r = RUN_CONFIG(&t_configs[c], path, "stats");
			CHECK(r.status == 0 && r.err_len == 0, "status %d, stderr: %s", r.status, r.err);
			CHECK(t_stat(r.out, "dimension") == s.dim, "dimension: %s", r.out);
			char want_placement[64];
			snprintf(want_placement, sizeof want_placement, "placement %s\n", t_configs[c].placement);
			CHECK(strstr(r.out, want_placement) != NULL, "placement: %s", r.out);
			long items = t_stat(r.out, "items"), entries = t_stat(r.out, "entries"), nodes = t_stat(r.out, "nodes");
			long leaves = t_stat(r.out, "leaves"), depth = t_stat(r.out, "depth");
			CHECK(items == (long)s.n, "items %ld, want %zu", items, s.n);
			CHECK(strcmp(t_configs[c].placement, "leaves") ? entries == items : entries >= items,
			      "entries %ld for %ld items", entries, items);
			CHECK(nodes >= 1 && leaves >= 1 && leaves <= nodes, "nodes %ld leaves %ld", nodes, leaves);
			// max_depth bounds the packed tree; the tree splits a pile (more
			// than 8 buckets of boxes, not all one box) past it, down to where
			// floats run out (the library's tests check that rule).
			CHECK(depth >= 0 && (depth <= t_config_depth(&t_configs[c], s.dim) ||
			                     strcmp(t_configs[c].placement, "packed") != 0),
			      "depth %ld", depth);
			const char *lv = strstr(r.out, "items_per_level");
			long sum = 0, levels = 0;
			if (CHECK(lv != NULL, "no items_per_level")) {
				char *p = (char *)lv + strlen("items_per_level");
				while (*p == ' ') {
					sum += strtol(p, &p, 10);
					levels++;
				}
			}
			CHECK(sum == entries, "items_per_level sums to %ld, entries %ld", sum, entries);
			CHECK(levels == depth + 1, "%ld levels for depth %ld", levels, depth);
			CHECK(t_stat(r.out, "bytes") > 0 && t_stat(r.out, "bytes_peak") >= t_stat(r.out, "bytes"), "bytes");
			t_run_free(&r);
		}
	}
	// An empty scene.
	t_write_file(path, "# nothing\n\n");
	for (int packed = 0; packed < 2; packed++) {
		t_run r = packed ? RUN("stats", "--placement", "packed", path) : RUN("stats", path);
		CHECK(r.status == 0 && t_stat(r.out, "items") == 0 && t_stat(r.out, "dimension") == 2, "empty: %s", r.out);
		t_run_free(&r);
	}
}

static size_t t_count(const char *hay, const char *needle)
{
	size_t n = 0;
	for (const char *p = hay; (p = strstr(p, needle)) != NULL; p += strlen(needle))
		n++;
	return n;
}

static void t_group_render(void)
{
	t_scene s;
	char *path = t_path("scene.txt"), *png = t_path("out.png"), *svg = t_path("out.svg");
	T_FOR_EACH_SCENE(s, path, 200)
	{
		float p[3], e[3], v[6];
		t_pick_point(&s, p);
		t_pick_point(&s, e);
		for (int a = 0; a < s.dim; a++) {
			v[a] = p[a] < e[a] ? p[a] : e[a];
			v[s.dim + a] = p[a] < e[a] ? e[a] : p[a];
		}
		double dv[6];
		for (int i = 0; i < 2 * s.dim; i++)
			dv[i] = v[i];
		char box[256];
		t_list(box, sizeof box, v, 2 * s.dim);
		t_str hits = {0};
		t_oracle_query(&s, 'b', dv, &hits);
		size_t nhits = t_count(t_cstr(&hits), "\n");
		free(hits.s);

		remove(png);
		const char *ray = s.dim == 2 ? "0,0,1,0.5" : "0,0,0,1,0.5,0.25";
		t_run r = RUN("render", path, "-o", png, "--box", box, "--ray", ray, "--width", "300");
		CHECK(r.status == 0 && r.err_len == 0 && r.out_len == 0, "status %d, stderr: %s", r.status, r.err);
		size_t len;
		char *img = t_slurp(png, &len);
		CHECK(len > 33 && !memcmp(img, "\x89PNG\r\n\x1a\n", 8), "not a PNG (%zu bytes)", len);
		if (len > 24) {
			const unsigned char *u = (const unsigned char *)img;
			uint32_t w = (uint32_t)u[16] << 24 | (uint32_t)u[17] << 16 | (uint32_t)u[18] << 8 | u[19];
			CHECK(w == 300, "PNG width %u", (unsigned)w);
		}
		free(img);
		t_run_free(&r);

		// The same picture from the packed tree: its nodes' bounds stand for cells.
		for (int packed = 0; packed < 2; packed++) {
			const char *pl = packed ? "packed" : "loose";
			r = s.dim == 3 ? RUN("render", "--view", "xz", "--box", box, "--placement", pl, "-o", svg, path)
			               : RUN("render", "--box", box, "--placement", pl, "-o", svg, path);
			CHECK(r.status == 0 && r.err_len == 0, "status %d, stderr: %s", r.status, r.err);
			char *text = t_slurp(svg, &len);
			CHECK(strstr(text, "<svg") && strstr(text, "</svg>"), "not an SVG");
			size_t objects = t_count(text, "class=\"object\""), found = t_count(text, "class=\"hit\"");
			CHECK(objects + found == s.n, "%zu objects drawn, want %zu (%s)", objects + found, s.n, pl);
			CHECK(found == nhits, "%zu hits drawn, want %zu (%s)", found, nhits, pl);
			CHECK(s.n == 0 || t_count(text, "class=\"cell\"") >= 1, "no cells drawn (%s)", pl);
			free(text);
			t_run_free(&r);
		}
	}
}

/// A file whose line `bad_line` is `bad`, after good lines, comments and blanks.
static void t_error_case(const char *header, const char *bad, int dim, const char *reason, int line_offset)
{
	t_str text = {0};
	t_printf(&text, "%s", header);
	int line = 1;
	for (const char *p = header; *p; p++)
		line += *p == '\n';
	t_printf(&text, "%s\n", bad);
	t_printf(&text, dim == 2 ? "999 0 0 nan 1\n" : "999 0 0 0 nan 1 1\n"); // a later bad line: not reported
	char *path = t_path("bad.txt");
	t_write_file(path, t_cstr(&text));
	char want[256];
	snprintf(want, sizeof want, "%s:%d: ", path, line + line_offset);
	const char *cmds[][3] = {{"pairs", NULL, NULL}, {"query", "--box", dim == 2 ? "0,0,1,1" : "0,0,0,1,1,1"}};
	for (int c = 0; c < 2; c++) {
		t_run r = cmds[c][1] ? RUN(cmds[c][0], cmds[c][1], cmds[c][2], path) : RUN(cmds[c][0], path);
		CHECK(r.status == 1, "exit status %d for a bad line, want 1", r.status);
		CHECK(r.out_len == 0, "stdout not empty: %s", r.out);
		CHECK(!strncmp(r.err, want, strlen(want)), "stderr '%s' does not start with '%s'", r.err, want);
		CHECK(strstr(r.err, reason) != NULL, "stderr '%s' does not say '%s'", r.err, reason);
		CHECK(t_count(r.err, "\n") == 1, "more than one line on stderr: %s", r.err);
		t_run_free(&r);
	}
	// The same through standard input.
	t_run r = RUN_STDIN(path, "pairs", "-");
	snprintf(want, sizeof want, "<stdin>:%d: ", line + line_offset);
	CHECK(r.status == 1 && r.out_len == 0 && !strncmp(r.err, want, strlen(want)), "stdin: %d '%s'", r.status, r.err);
	t_run_free(&r);
	free(text.s);
}

static void t_group_errors(void)
{
	const char *h2 = "# header\n1 0 0 1 1\n\n2\t0 0 2 2\r\n   \n# more\n3 -1 -1 0 0\n";
	const char *h3 = "10 0 0 0 1 1 1\n# c\n11 1 1 1 2 2 2\n";
	struct {
		const char *header, *bad;
		int dim;
		const char *reason;
	} cases[] = {
		{h2, "4 nan 0 1 1", 2, "MINX is NaN"},
		{h2, "4 0 -NaN 1 1", 2, "MINY is NaN"},
		{h2, "4 0 0 inf 1", 2, "MAXX 'inf' is infinite"},
		{h2, "4 0 0 1 -Infinity", 2, "MAXY '-Infinity' is infinite"},
		{h2, "4 0 0 1 1e999", 2, "MAXY '1e999' is infinite"},
		{h2, "4 0 0 1e31 2e31", 2, "out of range"},
		{h2, "4 2 0 1 1", 2, "MINX 2 > MAXX 1"},
		{h2, "4 0 5 1 4.5", 2, "MINY 5 > MAXY 4.5"},
		{h3, "12 0 0 3 1 1 2", 3, "MINZ 3 > MAXZ 2"},
		{h2, "4 0 0 1", 2, "expected 5 columns, found 4"},
		{h2, "4 0 0 1 1 1", 2, "expected 5 columns, found 6"},
		{h2, "4 0 0 0 1 1 1", 2, "a 3D line (7 columns) in a 2D file"},
		{h3, "12 0 0 1 1", 3, "a 2D line (5 columns) in a 3D file"},
		{h3, "12 0 0 0 1 1 1 1", 3, "expected 7 columns, found 8"},
		{"", "1 0 0 0", 2, "expected 5 columns (2D) or 7 (3D), found 4"},
		{h2, "4 abc 0 1 1", 2, "MINX 'abc' is not a number"},
		{h2, "4 0 0x10 1 1", 2, "MINY '0x10' is not a number"},
		{h2, "4 0 0 1.5.5 2", 2, "MAXX '1.5.5' is not a number"},
		{h2, "4 0 0 1 1e", 2, "MAXY '1e' is not a number"},
		{h2, "4 0 0 1 1 # comment", 2, "a 3D line (7 columns) in a 2D file"},
		{h2, "4 . 0 1 1", 2, "MINX '.' is not a number"},
		{h2, "-4 0 0 1 1", 2, "ID '-4' is negative"},
		{h2, "18446744073709551616 0 0 1 1", 2, "ID '18446744073709551616' is larger than"},
		{h2, "99999999999999999999999 0 0 1 1", 2, "is larger than"},
		{h2, "4.5 0 0 1 1", 2, "ID '4.5' is not an unsigned integer"},
		{h2, "0x4 0 0 1 1", 2, "ID '0x4' is not an unsigned integer"},
		{h2, "+4 0 0 1 1", 2, "ID '+4' is not an unsigned integer"},
		{h2, "2 5 5 6 6", 2, "duplicate ID 2 (first on line 4)"},
		{h2, "0003 5 5 6 6", 2, "duplicate ID 3 (first on line 7)"},
		{h3, "10 5 5 5 6 6 6", 3, "duplicate ID 10 (first on line 1)"},
		// Only spaces and tabs separate fields; the rest is named with its column.
		{h2, "4 0,0 1 1", 2, "a comma at column 4: separate numbers with spaces"},
		{h2, "4 0 0 1,5 2", 2, "a comma at column 8: separate numbers with spaces"},
		{h2, "4\v0 0 1 1", 2, "a vertical tab (\\v) at column 2: only spaces and tabs separate fields"},
		{h2, "4 0 0 1\f1", 2, "a form feed (\\f) at column 8: only spaces and tabs separate fields"},
		{h2, "4 0 0 1 1\x1b", 2, "a control character (byte 0x1B) at column 10"},
		{h2, "4 0 0\r1 1", 2, "a carriage return (CR) at column 6 that does not end the line"},
		{h2, "# a comment\rwith a lone CR", 2, "a carriage return (CR) at column 12"},
		{h2, "\xEF\xBB\xBF" "4 0 0 1 1", 2, "a UTF-8 byte order mark at column 1 (allowed only at the start"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++)
		t_error_case(cases[i].header, cases[i].bad, cases[i].dim, cases[i].reason, 0);

	// A duplicate far into a large file (the hash set grows on the way).
	t_str big = {0};
	for (int i = 0; i < 20000; i++)
		t_printf(&big, "%d %d 0 %d 1\n", i * 3, i, i + 1);
	t_printf(&big, "%d 0 0 1 1\n", 3 * 12345);
	char *path = t_path("bad.txt");
	t_write_file(path, t_cstr(&big));
	t_run r = RUN("pairs", path);
	char want[256];
	snprintf(want, sizeof want, "%s:20001: duplicate ID 37035 (first on line 12346)\n", path);
	CHECK(r.status == 1 && r.out_len == 0 && !strcmp(r.err, want), "big duplicate: %d '%s'", r.status, r.err);
	t_run_free(&r);
	free(big.s);

	// A file that cannot be opened.
	r = RUN("pairs", t_path("no-such-file.txt"));
	CHECK(r.status == 1 && r.out_len == 0 && strstr(r.err, "cannot open"), "missing file: %d '%s'", r.status,
	      r.err);
	t_run_free(&r);
}

static void t_group_parse(void)
{
	// Good files in every spelling the format allows.
	char *path = t_path("good.txt");
	t_write_file(path, "  # leading comment\n\n\t\n"
	                   "18446744073709551615 -1e30 -1E+30 1e30 1.0e30\n"
	                   "0 .5 5e-1 +0.5 0.75\r\n"
	                   "007\t-0\t0\t0.5\t0.5\n"
	                   "42 0.1000000000000000055511151231257827021181583404541015625 0 1 1   \n"
	                   "43 0.5 0.5 0.5 0.5"); // no newline at the end
	EXPECT_EACH("0 7\n0 42\n0 43\n0 18446744073709551615\n7 42\n7 43\n7 18446744073709551615\n"
	            "42 43\n42 18446744073709551615\n43 18446744073709551615\n",
	            "pairs", path);
	EXPECT_EACH("0\n7\n42\n43\n18446744073709551615\n", "query", "--point", "0.5,0.5", path);

	// Empty and comment-only files answer nothing.
	t_write_file(path, "");
	EXPECT_EACH("", "pairs", path);
	EXPECT_EACH("", "query", "--box", "0,0,0,1,1,1", path);
	t_write_file(path, "# only\n#comments\n");
	EXPECT_EACH("", "knn", "--point", "0,0", "--k", "3", path);

	// A comment longer than the read buffer, then objects.
	t_str big = {0};
	t_printf(&big, "#");
	for (int i = 0; i < 300000; i++)
		t_printf(&big, "comment ");
	t_printf(&big, "\n1 0 0 1 1\n2 1 1 2 2\n");
	t_write_file(path, t_cstr(&big));
	EXPECT_EACH("1 2\n", "pairs", path);
	free(big.s);

	// The number parser against strtod, on spellings that take both paths.
	int bad = 0;
	for (int i = 0; i < 200000; i++) {
		char buf[64];
		double x = t_unit();
		switch (i % 6) {
		case 0: snprintf(buf, sizeof buf, "%.17g", (t_unit() - 0.5) * pow(10, t_int(-30, 30))); break;
		case 1: snprintf(buf, sizeof buf, "%.9g", (float)((x - 0.5) * pow(10, t_int(-8, 8)))); break;
		case 2: snprintf(buf, sizeof buf, "%d.%0*d", t_int(-99999, 99999), t_int(1, 9), t_int(0, 999999)); break;
		case 3: snprintf(buf, sizeof buf, "%de%d", t_int(0, 999999999), t_int(-40, 40)); break;
		case 4: snprintf(buf, sizeof buf, "%.25f", x); break;
		default: snprintf(buf, sizeof buf, "%.3e", (x - 0.5) * 1e300); break;
		}
		double got = -1, want = strtod(buf, NULL);
		sf_number k = sf_parse_double(buf, buf + strlen(buf), &got);
		if (k != SF_NUMBER_OK || got != want || (float)got != strtof(buf, NULL)) {
			if (bad++ < 5)
				CHECK(false, "sf_parse_double(%s) = %.17g (%d), strtod %.17g", buf, got, (int)k, want);
		}
	}
	CHECK(bad == 0, "%d numbers parsed differently from strtod", bad);
	static const char *const invalid[] = {"", "-", "+", ".", "e5", "1e", "1e+", "1..2", "1.2.3", "0x1p3", "1,5",
	                                      "1 ", " 1", "1f", "--1", "1e5.5", "nanx", "in"};
	for (size_t i = 0; i < sizeof invalid / sizeof invalid[0]; i++) {
		char buf[32];
		double v;
		snprintf(buf, sizeof buf, "%s", invalid[i]);
		CHECK(sf_parse_double(buf, buf + strlen(buf), &v) == SF_NUMBER_INVALID, "'%s' accepted", invalid[i]);
	}

	// The reader on its own: a stream in small pieces is read like a file.
	FILE *f = fopen(path, "wb");
	for (int i = 0; i < 100000; i++)
		fprintf(f, "%d %d %d %d %d\n", i, i, -i, i + 1, -i + 2);
	fclose(f);
	f = fopen(path, "rb");
	sf_scene sc;
	sf_error err;
	CHECK(sf_read(f, &sc, &err, NULL, NULL) == SF_OK, "sf_read: %s", err.message);
	fclose(f);
	CHECK(sc.count == 100000 && sc.dim == 2, "count %zu dim %d", sc.count, sc.dim);
	CHECK(sc.count == 100000 && sc.ids[99999] == 99999 && sc.coords[99999 * 4 + 1] == -99999.0f &&
	          sc.lines[99999] == 100000,
	      "last object");
	sf_scene_free(&sc);
}

static void t_group_usage(void)
{
	char *path = t_path("scene.txt"), *path3 = t_path("scene3.txt");
	t_write_file(path, "1 0 0 1 1\n2 1 1 2 2\n");
	t_write_file(path3, "1 0 0 0 1 1 1\n");
	struct {
		const char *args[8];
		const char *reason;
	} cases[] = {
		{{NULL}, "missing COMMAND"},
		{{"frobnicate", path}, "unknown command"},
		{{"pairs", "--frob", path}, "unknown option '--frob'"},
		{{"pairs", "--box", "0,0,1,1", path}, "unknown option '--box' for pairs"},
		{{"pairs"}, "missing FILE"},
		{{"pairs", path, path}, "one FILE only"},
		{{"pairs", "--placement", "sideways", path}, "--placement takes"},
		{{"pairs", "--bucket", "0", path}, "--bucket takes"},
		{{"pairs", "--bucket", "x", path}, "--bucket takes"},
		{{"pairs", "--max-depth", "33", path}, "--max-depth takes an integer from 0 to 32, not '33'"},
		// Integers are digits only: no sign, space, hex or emptiness, no overflow;
		// every message gives the range.
		{{"pairs", "--bucket", " 3", path}, "--bucket takes an integer from 1 to 1048576, not ' 3'"},
		{{"pairs", "--bucket", "+3", path}, "--bucket takes an integer from 1 to 1048576, not '+3'"},
		{{"pairs", "--bucket", "3 ", path}, "--bucket takes an integer from 1 to 1048576, not '3 '"},
		{{"pairs", "--bucket", "0x10", path}, "--bucket takes an integer from 1 to 1048576, not '0x10'"},
		{{"pairs", "--bucket", "", path}, "--bucket takes an integer from 1 to 1048576, not ''"},
		{{"pairs", "--bucket=", path}, "--bucket takes an integer from 1 to 1048576, not ''"},
		{{"pairs", "--bucket", "-1", path}, "--bucket takes an integer from 1 to 1048576"},
		{{"pairs", "--bucket", "1048577", path}, "--bucket takes an integer from 1 to 1048576"},
		{{"pairs", "--bucket", "99999999999999999999999", path}, "--bucket takes an integer from 1 to 1048576"},
		{{"pairs", "--max-depth", "-0", path}, "--max-depth takes an integer from 0 to 32"},
		{{"pairs", "--max-depth", "1e1", path}, "--max-depth takes an integer from 0 to 32"},
		{{"knn", "--point", "0,0", "--k", "+2", path}, "--k takes an integer from 1 to 2147483647, not '+2'"},
		{{"knn", "--point", "0,0", "--k", "2147483648", path}, "--k takes an integer from 1 to 2147483647"},
		{{"render", "-o", "x.png", "--width", " 100", path}, "--width takes an integer from 16 to 16384"},
		{{"render", "-o", "x.png", "--width", "16385", path}, "--width takes an integer from 16 to 16384"},
		{{"pairs", "--max-depth", path}, "--max-depth takes"},
		{{"pairs", path, "--max-depth"}, "--max-depth needs a value"},
		{{"query", path}, "exactly one of"},
		{{"query", "--box", "0,0,1,1", "--point", "0,0", path}, "exactly one of"},
		{{"query", "--box", "0,0,1", path}, "--box takes 4 values"},
		{{"query", "--box", "0,0,1,1,2,2,3,3", path}, "too many values"},
		{{"query", "--box", "0,0,x,1", path}, "not a list of finite numbers"},
		{{"query", "--box", "0,0,nan,1", path}, "not a list of finite numbers"},
		{{"query", "--box", "0,0,,1", path}, "not a list of finite numbers"},
		{{"query", "--box", "2,0,1,1", path}, "min > max"},
		{{"query", "--box", "0,0,0,1,1,1", path}, "the query is 3D but"},
		{{"query", "--box", "0,0,1,1", path3}, "the query is 2D but"},
		{{"query", "--sphere", "0,0,-1", path}, "negative radius"},
		{{"query", "--sphere", "0,0", path}, "--sphere takes"},
		{{"query", "--point", "0,0,0,0", path}, "--point takes"},
		{{"query", "--point", "1e31,0", path}, "out of range"},
		{{"ray", "--origin", "0,0", path}, "ray needs --origin and --dir"},
		{{"ray", "--origin", "0,0", "--dir", "1,0,0", path}, "--dir is 3D but --origin is 2D"},
		{{"ray", "--origin", "0,0", "--dir", "1,0", "--max", "-1", path}, "--max takes"},
		{{"knn", "--point", "0,0", path}, "knn needs --point and --k"},
		{{"knn", "--point", "0,0", "--k", "0", path}, "--k takes"},
		{{"knn", "--point", "0,0", "--k", "2x", path}, "--k takes"},
		{{"render", path}, "render needs -o"},
		{{"render", "-o", "x.jpg", path}, "-o must name a .png or .svg"},
		{{"render", "-o", "x.png", "--view", "xx", path}, "--view takes"},
		{{"render", "-o", "x.png", "--view", "xz", path}, "--view names the z axis"},
		{{"render", "-o", "x.png", "--ray", "0,0,1", path}, "--ray takes"},
		{{"render", "-o", "x.png", "--width", "5", path}, "--width takes"},
		// The packed tree's limits: bucket 1..64, depth 1..13 in 2D and 1..9 in 3D,
		// refused before the file is read unless the dimension decides.
		{{"pairs", "--placement", "packed", "--bucket", "65", path}, "--bucket with --placement packed takes 1 to 64"},
		{{"pairs", "--placement", "packed", "--max-depth", "14", path},
		 "--max-depth with --placement packed takes 1 to 13 (1 to 9 in 3D), not 14"},
		{{"pairs", "--max-depth=0", "--placement=packed", path}, "--max-depth with --placement packed takes 1 to 13"},
		{{"pairs", "--placement", "packed", "--max-depth", "14", "no-such-file.txt"}, "takes 1 to 13"},
		{{"pairs", "--placement", "packed", "--max-depth", "10", path3},
		 "--max-depth with --placement packed takes 1 to 9 in 3D (scene3.txt is 3D), not 10"},
		{{"query", "--point", "0,0,0", "--placement", "packed", "--max-depth", "13", path3}, "takes 1 to 9 in 3D"},
	};
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		const char *args[10] = {0};
		for (int k = 0; k < 8 && cases[i].args[k]; k++)
			args[k] = cases[i].args[k];
		t_run r = t_exec(NULL, args);
		CHECK(r.status == 2, "exit status %d for a usage error, want 2", r.status);
		CHECK(r.out_len == 0, "stdout not empty: %s", r.out);
		CHECK(strstr(r.err, "usage: orthant") != NULL, "no usage line: %s", r.err);
		CHECK(strstr(r.err, cases[i].reason) != NULL, "stderr '%s' does not say '%s'", r.err, cases[i].reason);
		t_run_free(&r);
	}

	// --help on every subcommand, and at the top.
	static const char *const commands[] = {"pairs", "query", "ray", "knn", "stats", "render"};
	for (size_t i = 0; i < 6; i++) {
		char want[64];
		snprintf(want, sizeof want, "usage: orthant %s", commands[i]);
		t_run r = RUN(commands[i], "--help");
		CHECK(r.status == 0 && r.err_len == 0 && !strncmp(r.out, want, strlen(want)), "%s --help: %d '%s'",
		      commands[i], r.status, r.out);
		t_run_free(&r);
		r = RUN(commands[i], "--bogus", "-h");
		CHECK(r.status == 0 && !strncmp(r.out, want, strlen(want)), "%s -h", commands[i]);
		t_run_free(&r);
	}
	t_run r = RUN("--help");
	CHECK(r.status == 0 && strstr(r.out, "usage: orthant COMMAND") && strstr(r.out, "render"), "--help");
	CHECK(strstr(r.out, "tight|leaves|loose|packed") != NULL, "--help does not name --placement packed");
	CHECK(strstr(r.out, "not for render") == NULL, "--help says render refuses packed; it draws it");
	t_run_free(&r);
	r = RUN("render", "--help");
	CHECK(r.status == 0 && strstr(r.out, "packed tree's node bounds") && !strstr(r.out, "Not with"),
	      "render --help on --placement packed: '%s'", r.out);
	t_run_free(&r);
	r = RUN("--version");
	CHECK(r.status == 0 && !strcmp(r.out, "orthant 0.1.0\n"), "--version: '%s'", r.out);
	t_run_free(&r);
	// Options after FILE, --name=value and `--` before a FILE starting with '-'.
	t_write_file("-scene.txt", "1 0 0 1 1\n2 1 1 2 2\n"); // in WORKDIR, the current directory
	r = RUN("query", path, "--box=0.5,0.5,0.9,0.9", "--placement=tight");
	t_expect_output(&r, "1\n");
	t_run_free(&r);
	EXPECT_EACH("1 2\n", "pairs", "--bucket", "1", "--", "-scene.txt");
	// The packed tree's deepest levels and fullest bucket are accepted.
	r = RUN("query", path, "--box=0.5,0.5,0.9,0.9", "--placement=packed", "--max-depth=13", "--bucket=64");
	t_expect_output(&r, "1\n");
	t_run_free(&r);
	r = RUN("query", path3, "--point=1,1,1", "--placement=packed", "--max-depth=9");
	t_expect_output(&r, "1\n");
	t_run_free(&r);
}

// ---------------------------------------------------------------------------
// Limits: bytes a text editor does not show, the line-length limit, memory.

/// Write len bytes to path (the text may hold NUL).
static void t_write_bytes(const char *path, const char *bytes, size_t len)
{
	FILE *f = fopen(path, "wb");
	if (!f || fwrite(bytes, 1, len, f) != len || fclose(f) != 0) {
		fprintf(stderr, "cannot write %s\n", path);
		exit(2);
	}
}

/// Expect `orthant pairs FILE` to refuse the file with exactly "FILE:LINE: reason...".
static void t_expect_refused(const char *path, int line, const char *reason)
{
	char want[256];
	snprintf(want, sizeof want, "%s:%d: %s", path, line, reason);
	t_run r = RUN("pairs", path);
	CHECK(r.status == 1, "exit status %d, want 1", r.status);
	CHECK(r.out_len == 0, "stdout not empty: %s", r.out);
	CHECK(!strncmp(r.err, want, strlen(want)), "stderr '%s' does not start with '%s'", r.err, want);
	CHECK(t_count(r.err, "\n") == 1, "more than one line on stderr: %s", r.err);
	t_run_free(&r);
}

/// One line of `ID 0 0 1 X` padded with zeros after X's point to exactly len bytes.
static void t_line_of(t_str *b, int id, size_t len)
{
	size_t start = b->len;
	t_printf(b, "%d 0 0 1 1.", id);
	while (b->len - start < len)
		t_printf(b, "0");
}

/// Run the binary with its standard input fed from a pipe, by `feed` writing
/// `total` bytes in pieces (so no file holds them); returns the exit status and
/// the child's peak resident memory in KiB (wait4's ru_maxrss).
static int t_exec_piped(const char *const *args, void (*feed)(char *chunk, size_t n, size_t at), size_t total,
                        long *maxrss_kib, char **err)
{
	int fds[2];
	if (pipe(fds) != 0) {
		perror("pipe");
		exit(2);
	}
	char *argv[16];
	int n = 0;
	argv[n++] = (char *)t_bin;
	snprintf(t_context, sizeof t_context, "orthant (stdin from a pipe, %zu bytes)", total);
	for (; *args && n < 15; args++)
		argv[n++] = (char *)*args;
	argv[n] = NULL;
	posix_spawn_file_actions_t fa;
	posix_spawn_file_actions_init(&fa);
	posix_spawn_file_actions_adddup2(&fa, fds[0], 0);
	posix_spawn_file_actions_addclose(&fa, fds[0]);
	posix_spawn_file_actions_addclose(&fa, fds[1]);
	posix_spawn_file_actions_addopen(&fa, 1, "stdout.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	posix_spawn_file_actions_addopen(&fa, 2, "stderr.txt", O_WRONLY | O_CREAT | O_TRUNC, 0644);
	pid_t pid;
	if (posix_spawn(&pid, t_bin, &fa, NULL, argv, environ) != 0) {
		fprintf(stderr, "cannot run %s\n", t_bin);
		exit(2);
	}
	posix_spawn_file_actions_destroy(&fa);
	close(fds[0]);
	signal(SIGPIPE, SIG_IGN); // the child may stop reading early: that is the point
	enum { CHUNK = 1 << 16 };
	static char chunk[CHUNK];
	for (size_t at = 0; at < total;) {
		size_t k = total - at < CHUNK ? total - at : CHUNK;
		feed(chunk, k, at);
		ssize_t w = write(fds[1], chunk, k);
		if (w <= 0)
			break; // EPIPE: the child has refused the input
		at += (size_t)w;
	}
	close(fds[1]);
	int ws;
	struct rusage ru;
	while (wait4(pid, &ws, 0, &ru) < 0 && errno == EINTR) {
	}
	*maxrss_kib = ru.ru_maxrss;
	*err = t_slurp("stderr.txt", NULL);
	return WIFEXITED(ws) ? WEXITSTATUS(ws) : 128 + (WIFSIGNALED(ws) ? WTERMSIG(ws) : 0);
}

static void t_feed_nul(char *chunk, size_t n, size_t at)
{
	(void)at;
	memset(chunk, 0, n);
}

static void t_feed_digits(char *chunk, size_t n, size_t at)
{
	for (size_t i = 0; i < n; i++)
		chunk[i] = (char)('0' + (at + i) % 10);
}

/// A comment of (nearly) the whole input, then one line ending it and two objects.
static size_t t_comment_total;
static void t_feed_comment(char *chunk, size_t n, size_t at)
{
	static const char tail[] = "\n1 0 0 1 1\n2 1 1 2 2\n";
	size_t body = t_comment_total - (sizeof tail - 1);
	for (size_t i = 0; i < n; i++) {
		size_t k = at + i;
		chunk[i] = k == 0 ? '#' : k < body ? 'c' : tail[k - body];
	}
}

static void t_group_limits(void)
{
	char *path = t_path("bytes.txt");

	// NUL bytes, in an object line and in a comment; the first bad line counts.
	t_write_bytes(path, "1 0 0 1 1\n2 0 0\0 1 1\n", 21);
	t_expect_refused(path, 2, "a NUL byte at column 6 (is this a text file?)");
	t_write_bytes(path, "# x\0y\n1 0 0 1 1\n", 16);
	t_expect_refused(path, 1, "a NUL byte at column 4");

	// A UTF-8 byte order mark is skipped at the start of the file, refused after it.
	t_write_file(path, "\xEF\xBB\xBF" "1 0 0 1 1\r\n2 1 1 2 2\r\n");
	EXPECT_EACH("1 2\n", "pairs", path);
	t_write_file(path, "\xEF\xBB\xBF# a comment first\n1 0 0 1 1\n");
	EXPECT_EACH("1\n", "query", "--point", "0,0", path);
	t_write_file(path, "1 0 0 1 1\n\xEF\xBB\xBF" "2 1 1 2 2\n");
	t_expect_refused(path, 2, "a UTF-8 byte order mark at column 1");
	t_write_file(path, "\xEF\xBB\xBF\xEF\xBB\xBF" "1 0 0 1 1\n");
	t_expect_refused(path, 1, "a UTF-8 byte order mark at column 1");

	// A classic Mac file (CR only) is one line with CRs in it: named, not misread.
	t_write_file(path, "1 0 0 1 1\r2 1 1 2 2\r");
	t_expect_refused(path, 1, "a carriage return (CR) at column 10 that does not end the line");
	// CRLF, and a file whose last line ends in a lone CR, are line ends.
	t_write_file(path, "1 0 0 1 1\r\n2 1 1 2 2\r");
	EXPECT_EACH("1 2\n", "pairs", path);

	// The line limit, 4096 bytes without the line end: exactly the limit is read
	// (with LF, CRLF, and as the last line), one byte more is refused.
	t_str text = {0};
	t_line_of(&text, 1, 4096);
	t_printf(&text, "\n");
	t_line_of(&text, 2, 4096);
	t_printf(&text, "\r\n");
	t_line_of(&text, 3, 4096);
	t_write_file(path, t_cstr(&text));
	EXPECT_EACH("1 2\n1 3\n2 3\n", "pairs", path);
	text.len = 0;
	t_printf(&text, "1 0 0 1 1\n");
	t_line_of(&text, 2, 4097);
	t_printf(&text, "\n");
	t_write_file(path, t_cstr(&text));
	t_expect_refused(path, 2, "the line is longer than 4096 bytes");
	text.len = 0;
	t_line_of(&text, 1, 4097); // the last line, without a newline
	t_write_file(path, t_cstr(&text));
	t_expect_refused(path, 1, "the line is longer than 4096 bytes");
	text.len = 0;
	t_printf(&text, "1 0 0 1 1\n2 0 0 1 1 ");
	for (int i = 0; i < 3000; i++)
		t_printf(&text, "\t "); // blanks count: a line of 6000+ bytes
	t_printf(&text, "\n");
	t_write_file(path, t_cstr(&text));
	t_expect_refused(path, 2, "the line is longer than 4096 bytes");
	free(text.s);

	// Huge lines through a pipe: refused (or, a comment, skipped) with the memory
	// of a small file. A run on a small file first gives the baseline; the reader
	// must stay within a few MiB of it, where buffering the line would take 50.
	const size_t huge = (size_t)50 << 20;
	long base_kib, kib;
	char *err;
	const char *const pairs_stdin[] = {"pairs", "-", NULL};
	int st = t_exec_piped(pairs_stdin, t_feed_digits, 0, &base_kib, &err);
	CHECK(st == 0, "empty input: status %d, stderr %s", st, err);
	free(err);
	struct {
		void (*feed)(char *, size_t, size_t);
		int status;
		const char *err;
	} cases[] = {
		{t_feed_nul, 1, "<stdin>:1: a NUL byte at column 1 (is this a text file?)\n"},
		{t_feed_digits, 1, "<stdin>:1: the line is longer than 4096 bytes\n"},
		{t_feed_comment, 0, ""},
	};
	t_comment_total = huge;
	for (size_t i = 0; i < sizeof cases / sizeof cases[0]; i++) {
		st = t_exec_piped(pairs_stdin, cases[i].feed, huge, &kib, &err);
		CHECK(st == cases[i].status && !strcmp(err, cases[i].err), "huge line %zu: status %d, stderr '%s'", i, st,
		      err);
		CHECK(kib < base_kib + 8 * 1024, "huge line %zu: peak memory %ld KiB, %ld KiB on an empty file", i, kib,
		      base_kib);
		printf("huge line %zu (%zu MiB through a pipe): exit %d, peak RSS %ld KiB (empty input: %ld KiB)\n", i,
		       huge >> 20, st, kib, base_kib);
		free(err);
	}
	char *out = t_slurp("stdout.txt", NULL);
	CHECK(!strcmp(out, "1 2\n"), "the objects after a 50 MiB comment: '%s'", out);
	free(out);
}

// ---------------------------------------------------------------------------

/// Whether stderr is exactly one --timing line for phase `what` ("pairs" or "query").
static bool t_timing_line(const char *err, const char *what)
{
	double r, b, q;
	char phase[16], tail[2];
	int n = sscanf(err, "timing: read %lf ms, build %lf ms, %15s %lf ms%1[\n]", &r, &b, phase, &q, tail);
	return n == 5 && !strcmp(phase, what) && r >= 0 && b >= 0 && q >= 0 && strchr(err, '\n') == err + strlen(err) - 1;
}

/// --threads: every tree gives the oracle's answer with 2 and 3 workers;
/// --timing: one line on stderr, the answer unchanged; both refused where
/// they do not belong.
static void t_group_threads(void)
{
	t_scene s;
	char *path = t_path("scene.txt");
	static const char *const workers[] = {"2", "3"};
	for (int dim = 2; dim <= 3; dim++) {
		t_scene_make(&s, dim, 12000, T_RANDOM); // several jobs: the work is really split
		t_scene_write(&s, path);
		t_str want = {0};
		t_oracle_pairs(&s, &want);
		for (int c = 0; c < T_CONFIG_COUNT; c++) {
			if (!t_config_picked(c, 0, 1) || (c >= 3 && c < T_CONFIG_COUNT - 2))
				continue; // the three placements and two packed configurations
			for (int w = 0; w < 2; w++) {
				t_run r = RUN_CONFIG(&t_configs[c], path, "pairs", "--threads", workers[w]);
				t_expect_output(&r, t_cstr(&want));
				t_run_free(&r);
			}
		}
		free(want.s);
		float p[3];
		t_pick_point(&s, p);
		char pa[128];
		t_list(pa, sizeof pa, p, dim);
		double pt[3] = {p[0], p[1], p[2]};
		t_str wq = {0};
		t_oracle_query(&s, 'p', pt, &wq);
		t_run r = RUN("query", "--point", pa, "--threads", "2", "--placement", "packed", "--timing", path);
		CHECK(r.status == 0 && !strcmp(r.out, t_cstr(&wq)), "query with --threads and --timing: %s", r.err);
		CHECK(t_timing_line(r.err, "query"), "not one timing line: '%s'", r.err);
		t_run_free(&r);
		free(wq.s);
		t_scene_free(&s);
	}
	t_scene_make(&s, 2, 300, T_RANDOM);
	t_scene_write(&s, path);
	t_str want = {0};
	t_oracle_pairs(&s, &want);
	t_run r = RUN("pairs", "--timing", path);
	CHECK(r.status == 0 && !strcmp(r.out, t_cstr(&want)), "pairs --timing: the answer changed");
	CHECK(t_timing_line(r.err, "pairs"), "not one timing line: '%s'", r.err);
	t_run_free(&r);
	free(want.s);
	t_scene_free(&s);
	static const char *const bad[][3] = {
		{"pairs", "--threads", "0"}, {"pairs", "--threads", "257"}, {"query", "--threads", "two"},
		{"stats", "--threads", "2"}, {"stats", "--timing", "-"},     {"render", "--timing", "-"},
	};
	for (size_t i = 0; i < sizeof bad / sizeof bad[0]; i++) {
		t_run e = RUN(bad[i][0], bad[i][1], bad[i][2], path);
		CHECK(e.status == 2 && e.out_len == 0, "%s %s %s: exit %d, want 2", bad[i][0], bad[i][1], bad[i][2],
		      e.status);
		t_run_free(&e);
	}
}

/// Write a large uniform scene (for timing `pairs`): boxes of side 0.5..2 spread
/// so each overlaps a few others.
static int t_generate(long n, int dim, const char *path)
{
	FILE *f = fopen(path, "wb");
	if (!f)
		return 1;
	double side = dim == 2 ? sqrt((double)n) * 1.6 : cbrt((double)n) * 1.3;
	for (long i = 0; i < n; i++) {
		fprintf(f, "%ld", i);
		double lo[3], len[3];
		for (int a = 0; a < dim; a++) {
			lo[a] = t_unit() * side;
			len[a] = 0.5 + t_unit() * 1.5;
		}
		for (int a = 0; a < dim; a++)
			fprintf(f, " %.4f", lo[a]);
		for (int a = 0; a < dim; a++)
			fprintf(f, " %.4f", lo[a] + len[a]);
		fputc('\n', f);
	}
	return fclose(f) != 0;
}

int main(int argc, char **argv)
{
	if (argc == 5 && !strcmp(argv[1], "gen"))
		return t_generate(atol(argv[2]), atoi(argv[3]), argv[4]);
	if (argc != 4) {
		fprintf(stderr, "usage: cli_test GROUP ORTHANT WORKDIR | cli_test gen COUNT DIM FILE\n");
		return 2;
	}
	t_bin = argv[2];
	t_dir = argv[3];
	mkdir(t_dir, 0755);
	if (chdir(t_dir) != 0) {
		fprintf(stderr, "cannot enter %s\n", t_dir);
		return 2;
	}
	static const struct {
		const char *name;
		void (*fn)(void);
	} groups[] = {
		{"parse", t_group_parse}, {"errors", t_group_errors}, {"usage", t_group_usage},
		{"pairs", t_group_pairs}, {"query", t_group_query},   {"ray", t_group_ray},
		{"knn", t_group_knn},     {"stats", t_group_stats},   {"render", t_group_render},
		{"limits", t_group_limits},
		{"threads", t_group_threads},
	};
	for (size_t i = 0; i < sizeof groups / sizeof groups[0]; i++) {
		if (strcmp(argv[1], groups[i].name))
			continue;
		groups[i].fn();
		printf("cli %s: %d checks, %d failed\n", argv[1], t_checks, t_failures);
		return t_failures ? 1 : 0;
	}
	fprintf(stderr, "unknown group %s\n", argv[1]);
	return 2;
}
