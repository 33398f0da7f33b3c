/// @file cli_util.c
/// The command-line tool's plumbing: buffered output, the progress line, radix
/// sorting and ranking objects by ID.
#include "cli.h"

#include <stdarg.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

// ---------------------------------------------------------------------------
// Output

static char cli_out_buf[1 << 16];
static size_t cli_out_len;
static bool cli_out_failed;

static void cli_out_drain(void)
{
	if (cli_out_len && fwrite(cli_out_buf, 1, cli_out_len, stdout) != cli_out_len)
		cli_out_failed = true;
	cli_out_len = 0;
}

static void cli_out_bytes(const char *s, size_t n)
{
	if (cli_out_len + n > sizeof cli_out_buf)
		cli_out_drain();
	if (n > sizeof cli_out_buf) {
		if (fwrite(s, 1, n, stdout) != n)
			cli_out_failed = true;
		return;
	}
	memcpy(cli_out_buf + cli_out_len, s, n);
	cli_out_len += n;
}

void cli_out_u64(uint64_t v)
{
	char tmp[20];
	size_t i = sizeof tmp;
	do {
		tmp[--i] = (char)('0' + v % 10);
		v /= 10;
	} while (v);
	cli_out_bytes(tmp + i, sizeof tmp - i);
}

void cli_out_char(char c) { cli_out_bytes(&c, 1); }

void cli_out_str(const char *s) { cli_out_bytes(s, strlen(s)); }

void cli_out_g9(double v)
{
	char tmp[40];
	int n = snprintf(tmp, sizeof tmp, "%.9g", v);
	cli_out_bytes(tmp, (size_t)n);
}

bool cli_out_flush(void)
{
	cli_out_drain();
	if (fflush(stdout) != 0 || ferror(stdout))
		cli_out_failed = true;
	return !cli_out_failed;
}

// ---------------------------------------------------------------------------
// Progress

static struct {
	bool enabled; // stderr is a terminal
	bool shown;   // a line is on screen
	double start;
	double last;
} cli_prog;

double cli_now(void)
{
	struct timespec ts;
	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + (double)ts.tv_nsec * 1e-9;
}

void cli_progress_start(void)
{
	cli_prog.enabled = isatty(STDERR_FILENO) != 0;
	cli_prog.shown = false;
	cli_prog.start = cli_prog.last = cli_now();
}

void cli_progress(const char *fmt, ...)
{
	if (!cli_prog.enabled)
		return;
	double now = cli_now();
	// After the first second, redraw at most ten times a second.
	if (now - cli_prog.start < 1.0 || (cli_prog.shown && now - cli_prog.last < 0.1))
		return;
	cli_prog.last = now;
	cli_prog.shown = true;
	va_list ap;
	va_start(ap, fmt);
	fputs("\r\033[Korthant: ", stderr);
	vfprintf(stderr, fmt, ap);
	fprintf(stderr, " (%.1f s)", now - cli_prog.start);
	va_end(ap);
	fflush(stderr);
}

void cli_progress_end(void)
{
	if (cli_prog.shown)
		fputs("\r\033[K", stderr);
	cli_prog.shown = false;
}

void cli_progress_read(void *ctx, size_t objects)
{
	cli_progress("reading %s: %zu objects", (const char *)ctx, objects);
}

// ---------------------------------------------------------------------------
// Sorting

void cli_radix_sort(uint64_t *keys, uint32_t *vals, uint64_t *tmp_keys, uint32_t *tmp_vals, size_t n)
{
	enum { BITS = 11, BUCKETS = 1 << BITS, PASSES = (64 + BITS - 1) / BITS };
	static size_t count[PASSES][BUCKETS];
	if (n < 2)
		return;
	memset(count, 0, sizeof count);
	for (size_t i = 0; i < n; i++)
		for (int p = 0; p < PASSES; p++)
			count[p][(keys[i] >> (p * BITS)) & (BUCKETS - 1)]++;
	uint64_t *src_k = keys, *dst_k = tmp_keys;
	uint32_t *src_v = vals, *dst_v = tmp_vals;
	for (int p = 0; p < PASSES; p++) {
		size_t *c = count[p];
		// A digit every key shares reorders nothing: skip the pass.
		if (c[(src_k[0] >> (p * BITS)) & (BUCKETS - 1)] == n)
			continue;
		size_t sum = 0;
		for (int b = 0; b < BUCKETS; b++) {
			size_t t = c[b];
			c[b] = sum;
			sum += t;
		}
		for (size_t i = 0; i < n; i++) {
			size_t at = c[(src_k[i] >> (p * BITS)) & (BUCKETS - 1)]++;
			dst_k[at] = src_k[i];
			if (vals)
				dst_v[at] = src_v[i];
		}
		uint64_t *tk = src_k;
		src_k = dst_k;
		dst_k = tk;
		uint32_t *tv = src_v;
		src_v = dst_v;
		dst_v = tv;
	}
	if (src_k != keys) {
		memcpy(keys, src_k, n * sizeof *keys);
		if (vals)
			memcpy(vals, src_v, n * sizeof *vals);
	}
}

uint32_t *cli_rank_by_id(const sf_scene *scene)
{
	size_t n = scene->count;
	uint64_t *keys = malloc((n ? n : 1) * 2 * sizeof *keys);
	uint32_t *vals = malloc((n ? n : 1) * 2 * sizeof *vals);
	uint32_t *rank = malloc((n ? n : 1) * sizeof *rank);
	if (!keys || !vals || !rank) {
		free(keys);
		free(vals);
		free(rank);
		return NULL;
	}
	for (size_t i = 0; i < n; i++) {
		keys[i] = scene->ids[i];
		vals[i] = (uint32_t)i;
	}
	cli_radix_sort(keys, vals, keys + n, vals + n, n);
	for (size_t r = 0; r < n; r++)
		rank[vals[r]] = (uint32_t)r;
	free(keys);
	free(vals);
	return rank;
}
