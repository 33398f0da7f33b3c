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

/// ORTHANT_TEST_SHRINK, as the library's tests read it (tests/testutil.h):
/// the sanitizer run sets 2, and every process it starts costs ten times more.
static int t_shrink = 1;

/// Whether a comparison runs configuration c: every packed one, so that the
/// packed tree meets every adversarial case, and of the tree placements those
/// from `from` in steps of `step` (all of them would make the run long).
/// Shrunk by k, a comparison runs one in k of each: which ones turns with
/// every comparison (a call with c == 0 starts one), so the group still
/// meets every configuration.
static bool t_config_picked(int c, int from, int step)
{
	static unsigned turn;
	if (c == 0) turn++;
	if (t_shrink > 1 && (unsigned)c % (unsigned)t_shrink != turn % (unsigned)t_shrink) return false;
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
// Groups: the answers (cli_test_answers.inc) and the input checks (cli_test_input.inc).

#include "cli_test_answers.inc"

#include "cli_test_input.inc"

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
	const char *shrink = getenv("ORTHANT_TEST_SHRINK");
	if (shrink && atoi(shrink) > 1) t_shrink = atoi(shrink);
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
