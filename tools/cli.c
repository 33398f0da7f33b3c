/// @file cli.c
/// `orthant`, the command-line tool: the command line, help texts, reading the
/// scene and handing it to the 2D or 3D subcommands (cli_dim.inc).
#include "cli.h"
#include "orthant/orthant.h" // ort2_/ort3_packed_default_def: the packed tree's depth limits

#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdarg.h>
#include <stdlib.h>
#include <string.h>

// ---------------------------------------------------------------------------
// Commands and their help

/// Options a command takes beyond the common ones, as bits.
enum {
	CLI_OPT_BOX = 1 << 0,
	CLI_OPT_SPHERE = 1 << 1,
	CLI_OPT_POINT = 1 << 2,
	CLI_OPT_ORIGIN = 1 << 3,
	CLI_OPT_DIR = 1 << 4,
	CLI_OPT_MAX = 1 << 5,
	CLI_OPT_K = 1 << 6,
	CLI_OPT_OUT = 1 << 7,
	CLI_OPT_WIDTH = 1 << 8,
	CLI_OPT_VIEW = 1 << 9,
	CLI_OPT_RAY = 1 << 10,
	CLI_OPT_THREADS = 1 << 11, ///< --threads and --timing
	CLI_OPT_MEMORY = 1 << 12,
};

/// --memory's default: 2 GiB (128M pairs a pass, each pair a key and its sort's copy).
#define CLI_MEMORY_DEFAULT ((size_t)2 << 30)

typedef struct cli_command_info {
	const char *name;
	unsigned options;
	const char *usage;   ///< after "usage: orthant "
	const char *summary; ///< one line for `orthant --help`
	const char *help;    ///< the rest of `orthant NAME --help`
} cli_command_info;

static const cli_command_info cli_commands[CLI_COMMAND_COUNT] = {
	[CLI_PAIRS] = {"pairs", CLI_OPT_THREADS | CLI_OPT_MEMORY, "pairs [OPTIONS] FILE",
	               "every overlapping pair, as `A B` with A < B",
	               "Print every pair of overlapping objects once, as `A B` with A < B, sorted\n"
	               "by A then B. Boxes are closed: touching boxes overlap.\n"
	               "  --memory SIZE            most memory the pairs being sorted hold, 16 bytes\n"
	               "                           a pair (SIZE in bytes, or with K, M or G; default\n"
	               "                           2G): past it the pairs are found again in passes,\n"
	               "                           each printing those of a range of A\n"},
	[CLI_QUERY] = {"query", CLI_OPT_BOX | CLI_OPT_SPHERE | CLI_OPT_POINT | CLI_OPT_THREADS,
	               "query (--box X0,Y0[,Z0],X1,Y1[,Z1] | --sphere CX,CY[,CZ],R | --point X,Y[,Z]) [OPTIONS] FILE",
	               "the IDs of the objects a box, sphere or point touches",
	               "Print the IDs of the objects that overlap the query, ascending.\n"
	               "  --box X0,Y0,X1,Y1        a box (3D: X0,Y0,Z0,X1,Y1,Z1), min then max\n"
	               "  --sphere CX,CY,R         a circle (3D: a sphere CX,CY,CZ,R): objects at\n"
	               "                           distance <= R from the centre\n"
	               "  --point X,Y              a point (3D: X,Y,Z): objects containing it\n"},
	[CLI_RAY] = {"ray", CLI_OPT_ORIGIN | CLI_OPT_DIR | CLI_OPT_MAX | CLI_OPT_THREADS,
	             "ray --origin X,Y[,Z] --dir DX,DY[,DZ] [--max T] [OPTIONS] FILE",
	             "`ID T` for every object a ray or segment touches",
	             "Print `ID T` for every object the segment origin + t*dir, t in [0, T],\n"
	             "touches; T is the entry parameter (0 when the origin is inside). Sorted by\n"
	             "T, then ID; T printed with 9 significant digits.\n"
	             "  --origin X,Y[,Z]         where the ray starts\n"
	             "  --dir DX,DY[,DZ]         its direction; need not be normalised, zero\n"
	             "                           components are allowed\n"
	             "  --max T                  stop at t = T (default: infinity)\n"},
	[CLI_KNN] = {"knn", CLI_OPT_POINT | CLI_OPT_K | CLI_OPT_THREADS, "knn --point X,Y[,Z] --k K [OPTIONS] FILE",
	             "`ID D` for the K objects nearest a point",
	             "Print `ID D` for the K objects nearest the point, D being the Euclidean\n"
	             "distance from the point to the box (0 inside); sorted by D, then ID.\n"
	             "  --point X,Y[,Z]          the point\n"
	             "  --k K                    how many (K >= 1; fewer when the file has fewer)\n"},
	[CLI_STATS] = {"stats", 0, "stats [OPTIONS] FILE", "the tree's shape: items, nodes, depth, bytes",
	               "Print the tree's shape as `key value` lines: dimension, placement, items,\n"
	               "entries, nodes, leaves, depth, items_per_level (one number per level from\n"
	               "the root), bytes and bytes_peak. The shape depends on the options; the\n"
	               "other commands' answers do not.\n"},
	[CLI_RENDER] = {"render", CLI_OPT_BOX | CLI_OPT_SPHERE | CLI_OPT_POINT | CLI_OPT_RAY | CLI_OPT_MAX |
	                              CLI_OPT_OUT | CLI_OPT_WIDTH | CLI_OPT_VIEW,
	                "render -o OUT.png|OUT.svg [--box B] [--sphere S] [--point P] [--ray R [--max T]] [OPTIONS] FILE",
	                "draw the objects and the tree's cells as PNG or SVG",
	                "Draw the objects (blue), the tree's cells (grey) and, if given, a query\n"
	                "(orange) with the objects it finds (red). 3D scenes are drawn as their\n"
	                "projection on two axes. With --placement packed the cells drawn are the\n"
	                "packed tree's node bounds (a packed node keeps no cell).\n"
	                "  -o OUT                   the picture; .png or .svg\n"
	                "  --box, --sphere, --point a query, as for `orthant query`\n"
	                "  --ray X,Y[,Z],DX,DY[,DZ] a ray: origin then direction (as `orthant ray`)\n"
	                "  --max T                  the ray's end (default: infinity)\n"
	                "  --width W                picture width in pixels (default 800)\n"
	                "  --view xy|xz|yz          the axes drawn, for 3D (default xy)\n"},
};

static const char cli_common_help[] =
	"Common options:\n"
	"  --placement tight|leaves|loose|packed\n"
	"                           where the tree keeps objects (default loose);\n"
	"                           packed: the library's packed tree, built whole in\n"
	"                           one pass and read from flat arrays; the fastest on\n"
	"                           large scenes\n"
	"  --bucket N               objects a cell holds before it splits (default 16;\n"
	"                           packed: 1..64)\n"
	"  --max-depth N            level where splitting stops, 0..32 (default 8; a\n"
	"                           pile of many distinct boxes splits deeper);\n"
	"                           packed: the deepest level, 1..13 in 2D, 1..9 in\n"
	"                           3D, default the most\n"
	"  -h, --help               this help\n"
	"  --version                the version\n"
	"FILE holds one object per line, `ID MINX MINY MAXX MAXY` (2D) or\n"
	"`ID MINX MINY MINZ MAXX MAXY MAXZ` (3D), separated by spaces or tabs, at\n"
	"most 4096 bytes a line; `-` reads standard input. Query values are rounded\n"
	"to floats, as the file's coordinates are.\n"
	"A bad line is reported as FILE:LINE: reason (exit 1); a bad command line\n"
	"exits 2. See orthant(1).\n";

static const char cli_threads_help[] =
	"  --threads N              workers for building and finding pairs, 1..256\n"
	"                           (default 1); the answer is the same for any N\n"
	"  --timing                 print `timing: read R ms, build B ms, pairs P ms`\n"
	"                           (query, ray, knn: `query Q ms`) to standard error\n";

static void cli_top_help(FILE *f)
{
	fprintf(f, "usage: orthant COMMAND [OPTIONS] FILE\n"
	           "Answer questions about the boxes in a scene file with a quadtree (2D) or an\n"
	           "octree (3D).\n\nCommands:\n");
	for (int i = 0; i < CLI_COMMAND_COUNT; i++)
		fprintf(f, "  %-8s %s\n", cli_commands[i].name, cli_commands[i].summary);
	fprintf(f, "\n`orthant COMMAND --help` describes one command.\n\n%s", cli_common_help);
}

int cli_usage_error(const cli_options *o, const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("orthant: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	if (o && o->command < CLI_COMMAND_COUNT)
		fprintf(stderr, "\nusage: orthant %s\nTry 'orthant %s --help'.\n", cli_commands[o->command].usage,
		        cli_commands[o->command].name);
	else
		fprintf(stderr, "\nusage: orthant COMMAND [OPTIONS] FILE\nTry 'orthant --help'.\n");
	return CLI_EXIT_USAGE;
}

int cli_fail(const char *fmt, ...)
{
	va_list ap;
	va_start(ap, fmt);
	fputs("orthant: ", stderr);
	vfprintf(stderr, fmt, ap);
	va_end(ap);
	fputc('\n', stderr);
	return CLI_EXIT_FAIL;
}

// ---------------------------------------------------------------------------
// Option values

/// Parse a comma-separated list of finite numbers into v. Returns false (and
/// *why) when a value is not a number or there are too many.
static bool cli_parse_values(const char *text, cli_values *v, const char **why)
{
	char buf[512];
	size_t len = strlen(text);
	if (len >= sizeof buf) {
		*why = "too long";
		return false;
	}
	memcpy(buf, text, len + 1);
	v->n = 0;
	char *s = buf;
	for (;;) {
		char *comma = strchr(s, ',');
		char *end = comma ? comma : s + strlen(s);
		if (v->n == (int)(sizeof v->v / sizeof v->v[0])) {
			*why = "too many values";
			return false;
		}
		double x;
		if (sf_parse_double(s, end, &x) != SF_NUMBER_OK) {
			*why = "not a list of finite numbers";
			return false;
		}
		if (fabs(x) > (double)ORTHANT_COORD_LIMIT) {
			*why = "a value is out of range (magnitude above 1e30)";
			return false;
		}
		// Coordinates on the command line are floats, like those in the file,
		// so the same text means the same point in both.
		v->v[v->n++] = (double)(float)x;
		if (!comma)
			return true;
		s = comma + 1;
	}
}

/// Parse a decimal integer in [lo, hi] (0 <= lo): digits only, so a sign, a
/// space, a hex prefix or an empty value is refused rather than read loosely.
static bool cli_parse_int(const char *s, long lo, long hi, int *out)
{
	long v = 0;
	if (!*s)
		return false;
	for (; *s; s++) {
		if (*s < '0' || *s > '9')
			return false;
		v = v * 10 + (*s - '0');
		if (v > hi)
			return false; // also stops the overflow of a long run of digits
	}
	if (v < lo)
		return false;
	*out = (int)v;
	return true;
}

/// Parse a size in bytes: digits, then at most one of K, M, G (binary
/// units), from 1K to 1T; refused like cli_parse_int otherwise.
static bool cli_parse_size(const char *s, size_t *out)
{
	uint64_t v = 0, limit = (uint64_t)1 << 40;
	const char *p = s;
	for (; *p >= '0' && *p <= '9'; p++) {
		v = v * 10 + (uint64_t)(*p - '0');
		if (v > limit)
			return false;
	}
	if (p == s)
		return false;
	int shift = *p == 'K' ? 10 : *p == 'M' ? 20 : *p == 'G' ? 30 : 0;
	if (shift)
		p++;
	if (*p || v > limit >> shift || (v << shift) < 1024)
		return false;
	*out = (size_t)(v << shift);
	return true;
}

/// Parse --placement's value: one of ortN_tree's placements, or "packed" (an
/// ortN_packed tree, which places as loose does). False when unknown.
static bool cli_parse_placement(const char *value, cli_options *o)
{
	o->packed = !strcmp(value, "packed");
	o->placement = ORT_PLACEMENT_LOOSE;
	for (int p = 0; p < ORT_PLACEMENT_COUNT && !o->packed; p++) {
		if (!strcmp(value, ort_placement_string((ort_placement)p))) {
			o->placement = (ort_placement)p;
			return true;
		}
	}
	return o->packed;
}

/// The most items a packed tree's leaf may hold (ortN_packed_def.bucket_size).
enum { CLI_PACKED_BUCKET_MAX = 64 };

/// Check --bucket and --max-depth against the packed tree's limits when it is
/// asked for, so that they are refused as usage errors rather than by the
/// library after the file is read. Its depth limit depends on the dimension:
/// with dim 0 (the file not read yet) only what neither allows is refused (2D
/// allows the deeper tree); called again with the scene's dimension.
static int cli_check_packed(const cli_options *o, int dim)
{
	if (!o->packed)
		return CLI_EXIT_OK;
	if (o->bucket > CLI_PACKED_BUCKET_MAX)
		return cli_usage_error(o, "--bucket with --placement packed takes 1 to %d, not %d", CLI_PACKED_BUCKET_MAX,
		                       o->bucket);
	int most2 = ort2_packed_default_def().max_depth, most3 = ort3_packed_default_def().max_depth;
	int most = dim == 3 ? most3 : most2;
	if (o->max_depth != 0 && o->max_depth <= most)
		return CLI_EXIT_OK;
	if (!dim)
		return cli_usage_error(o, "--max-depth with --placement packed takes 1 to %d (1 to %d in 3D), not %d", most2,
		                       most3, o->max_depth);
	return cli_usage_error(o, "--max-depth with --placement packed takes 1 to %d in %dD (%s is %dD), not %d", most, dim,
	                       o->name, dim, o->max_depth);
}

/// The dimension a list of n values gives, when it holds `a` per 2D or `b` per 3D.
static int cli_dim_of(int n, int a, int b) { return n == a ? 2 : n == b ? 3 : 0; }

/// Check every query value list for its count and shape and agree on one
/// dimension; *dim gets it (0 when no list was given).
static int cli_check_values(cli_options *o, int *dim)
{
	struct {
		const char *name;
		cli_values *v;
		int a, b;
		const char *want;
	} lists[] = {
		{"--box", &o->box, 4, 6, "4 values (X0,Y0,X1,Y1) or 6 (X0,Y0,Z0,X1,Y1,Z1)"},
		{"--sphere", &o->sphere, 3, 4, "3 values (CX,CY,R) or 4 (CX,CY,CZ,R)"},
		{"--point", &o->point, 2, 3, "2 values (X,Y) or 3 (X,Y,Z)"},
		{"--origin", &o->origin, 2, 3, "2 values (X,Y) or 3 (X,Y,Z)"},
		{"--dir", &o->dir, 2, 3, "2 values (DX,DY) or 3 (DX,DY,DZ)"},
	};
	*dim = 0;
	const char *first = NULL;
	for (size_t i = 0; i < sizeof lists / sizeof lists[0]; i++) {
		if (!lists[i].v->n)
			continue;
		int d = cli_dim_of(lists[i].v->n, lists[i].a, lists[i].b);
		if (!d)
			return cli_usage_error(o, "%s takes %s, not %d", lists[i].name, lists[i].want, lists[i].v->n);
		if (*dim && d != *dim)
			return cli_usage_error(o, "%s is %dD but %s is %dD", lists[i].name, d, first, *dim);
		*dim = d;
		first = lists[i].name;
	}
	if (o->box.n) {
		int d = o->box.n / 2;
		for (int i = 0; i < d; i++)
			if (o->box.v[i] > o->box.v[d + i])
				return cli_usage_error(o, "--box has min > max on axis %c", "xyz"[i]);
	}
	if (o->sphere.n && o->sphere.v[o->sphere.n - 1] < 0)
		return cli_usage_error(o, "--sphere has a negative radius (R takes 0 or more)");
	return CLI_EXIT_OK;
}

// ---------------------------------------------------------------------------
// The command line

static bool cli_is_help(const char *a) { return !strcmp(a, "--help") || !strcmp(a, "-h"); }

/// Parse argv[2..] for command o->command. Returns CLI_EXIT_OK, or the exit
/// status to end with (help printed, or a usage error).
static int cli_parse_args(int argc, char **argv, cli_options *o)
{
	const cli_command_info *info = &cli_commands[o->command];
	for (int i = 2; i < argc && strcmp(argv[i], "--"); i++) {
		if (cli_is_help(argv[i])) {
			printf("usage: orthant %s\n%s%s\n%s", info->usage, info->help,
			       (info->options & CLI_OPT_THREADS) ? cli_threads_help : "", cli_common_help);
			return -1;
		}
	}
	bool positional_only = false;
	for (int i = 2; i < argc; i++) {
		char *arg = argv[i];
		if (positional_only || arg[0] != '-' || !strcmp(arg, "-")) {
			if (o->file)
				return cli_usage_error(o, "unexpected argument '%s' (one FILE only)", arg);
			o->file = arg;
			continue;
		}
		if (!strcmp(arg, "--")) {
			positional_only = true;
			continue;
		}
		if (!strcmp(arg, "--version")) {
			printf("orthant %s\n", ORTHANT_VERSION_STRING);
			return -1;
		}
		if (!strcmp(arg, "--timing") && (info->options & CLI_OPT_THREADS)) {
			o->timing = true; // a flag: no value
			continue;
		}
		// --name=value or --name value (and -o value).
		char name[32];
		const char *value = NULL;
		const char *eq = strchr(arg, '=');
		size_t len = eq ? (size_t)(eq - arg) : strlen(arg);
		if (len >= sizeof name)
			return cli_usage_error(o, "unknown option '%s'", arg);
		memcpy(name, arg, len);
		name[len] = '\0';
		static const struct {
			const char *name;
			unsigned bit; // 0: common to every command
		} known[] = {
			{"--placement", 0}, {"--bucket", 0}, {"--max-depth", 0}, {"--box", CLI_OPT_BOX},
			{"--sphere", CLI_OPT_SPHERE}, {"--point", CLI_OPT_POINT}, {"--origin", CLI_OPT_ORIGIN},
			{"--dir", CLI_OPT_DIR}, {"--max", CLI_OPT_MAX}, {"--k", CLI_OPT_K}, {"-k", CLI_OPT_K},
			{"-o", CLI_OPT_OUT}, {"--output", CLI_OPT_OUT}, {"--width", CLI_OPT_WIDTH},
			{"--view", CLI_OPT_VIEW}, {"--ray", CLI_OPT_RAY}, {"--threads", CLI_OPT_THREADS},
			{"--memory", CLI_OPT_MEMORY},
		};
		int which = -1;
		for (int k = 0; k < (int)(sizeof known / sizeof known[0]); k++)
			if (!strcmp(name, known[k].name))
				which = k;
		if (which < 0 || (known[which].bit && !(info->options & known[which].bit)))
			return cli_usage_error(o, "unknown option '%s' for %s", name, info->name);
		if (eq) {
			value = eq + 1;
		} else {
			if (i + 1 >= argc)
				return cli_usage_error(o, "%s needs a value", name);
			value = argv[++i];
		}

		const char *why = "";
		unsigned bit = known[which].bit;
		if (!strcmp(name, "--placement")) {
			if (!cli_parse_placement(value, o))
				return cli_usage_error(o, "--placement takes tight, leaves, loose or packed, not '%s'", value);
		} else if (!strcmp(name, "--bucket")) {
			if (!cli_parse_int(value, 1, 1 << 20, &o->bucket))
				return cli_usage_error(o, "--bucket takes an integer from 1 to %d, not '%s'", 1 << 20, value);
		} else if (!strcmp(name, "--max-depth")) {
			if (!cli_parse_int(value, 0, ORTHANT_MAX_DEPTH, &o->max_depth))
				return cli_usage_error(o, "--max-depth takes an integer from 0 to %d, not '%s'", ORTHANT_MAX_DEPTH,
				                       value);
		} else if (bit == CLI_OPT_THREADS) {
			if (!cli_parse_int(value, 1, 256, &o->threads))
				return cli_usage_error(o, "--threads takes an integer from 1 to 256, not '%s'", value);
		} else if (bit == CLI_OPT_MEMORY) {
			if (!cli_parse_size(value, &o->memory))
				return cli_usage_error(o, "--memory takes a size from 1K to 1T (bytes, or with K, M or G), not '%s'",
				                       value);
		} else if (bit == CLI_OPT_K) {
			if (!cli_parse_int(value, 1, INT_MAX, &o->k))
				return cli_usage_error(o, "--k takes an integer from 1 to %d, not '%s'", INT_MAX, value);
		} else if (bit == CLI_OPT_WIDTH) {
			if (!cli_parse_int(value, 16, 16384, &o->width))
				return cli_usage_error(o, "--width takes an integer from 16 to 16384, not '%s'", value);
		} else if (bit == CLI_OPT_OUT) {
			o->out = value;
		} else if (bit == CLI_OPT_VIEW) {
			const char *axes = "xyz";
			const char *a = value[0] ? strchr(axes, value[0]) : NULL;
			const char *b = a && value[1] ? strchr(axes, value[1]) : NULL;
			if (!a || !b || a == b || value[2])
				return cli_usage_error(o, "--view takes two axes such as xy, xz or yz, not '%s'", value);
			o->view[0] = (int)(a - axes);
			o->view[1] = (int)(b - axes);
		} else if (bit == CLI_OPT_MAX) {
			char buf[64];
			double t = 0;
			size_t n = strlen(value);
			sf_number k = SF_NUMBER_INVALID;
			if (n < sizeof buf) {
				memcpy(buf, value, n + 1);
				k = sf_parse_double(buf, buf + n, &t);
			}
			if (k == SF_NUMBER_INFINITE && buf[0] != '-')
				t = INFINITY;
			else if (k != SF_NUMBER_OK || t < 0)
				return cli_usage_error(o, "--max takes a number >= 0, not '%s'", value);
			o->max_t = t;
		} else {
			cli_values *v = bit == CLI_OPT_BOX      ? &o->box
			                : bit == CLI_OPT_SPHERE ? &o->sphere
			                : bit == CLI_OPT_POINT  ? &o->point
			                : bit == CLI_OPT_ORIGIN ? &o->origin
			                : bit == CLI_OPT_DIR    ? &o->dir
			                                        : NULL;
			cli_values ray;
			if (!cli_parse_values(value, v ? v : &ray, &why))
				return cli_usage_error(o, "%s '%s': %s", name, value, why);
			if (bit == CLI_OPT_RAY) {
				// render's --ray: origin then direction, 4 (2D) or 6 (3D) values.
				if (ray.n != 4 && ray.n != 6)
					return cli_usage_error(o, "--ray takes 4 values (X,Y,DX,DY) or 6 (X,Y,Z,DX,DY,DZ), not %d",
					                       ray.n);
				o->origin.n = o->dir.n = ray.n / 2;
				memcpy(o->origin.v, ray.v, sizeof(double) * (size_t)(ray.n / 2));
				memcpy(o->dir.v, ray.v + ray.n / 2, sizeof(double) * (size_t)(ray.n / 2));
			}
		}
	}

	if (!o->file)
		return cli_usage_error(o, "missing FILE");
	switch (o->command) {
	case CLI_QUERY:
		if ((o->box.n > 0) + (o->sphere.n > 0) + (o->point.n > 0) != 1)
			return cli_usage_error(o, "query needs exactly one of --box, --sphere and --point");
		break;
	case CLI_RAY:
		if (!o->origin.n || !o->dir.n)
			return cli_usage_error(o, "ray needs --origin and --dir");
		break;
	case CLI_KNN:
		if (!o->point.n || !o->k)
			return cli_usage_error(o, "knn needs --point and --k");
		break;
	case CLI_RENDER: {
		size_t n = o->out ? strlen(o->out) : 0;
		if (!o->out)
			return cli_usage_error(o, "render needs -o OUT.png or -o OUT.svg");
		if (n < 4 || (strcmp(o->out + n - 4, ".png") && strcmp(o->out + n - 4, ".svg")))
			return cli_usage_error(o, "-o must name a .png or .svg file, not '%s'", o->out);
		break;
	}
	default: break;
	}
	return cli_check_packed(o, 0);
}

// ---------------------------------------------------------------------------

static int cli_main(int argc, char **argv)
{
	if (argc < 2)
		return cli_usage_error(NULL, "missing COMMAND");
	if (cli_is_help(argv[1])) {
		cli_top_help(stdout);
		return CLI_EXIT_OK;
	}
	if (!strcmp(argv[1], "--version")) {
		printf("orthant %s\n", ORTHANT_VERSION_STRING);
		return CLI_EXIT_OK;
	}
	cli_options o = {.command = CLI_COMMAND_COUNT, .placement = ORT_PLACEMENT_LOOSE, .max_depth = -1,
	                 .max_t = INFINITY, .width = 800, .view = {0, 1}, .threads = 1, .memory = CLI_MEMORY_DEFAULT};
	for (int i = 0; i < CLI_COMMAND_COUNT; i++)
		if (!strcmp(argv[1], cli_commands[i].name))
			o.command = (cli_command)i;
	if (o.command == CLI_COMMAND_COUNT)
		return cli_usage_error(NULL, "unknown command '%s'", argv[1]);
	int rc = cli_parse_args(argc, argv, &o);
	if (rc != CLI_EXIT_OK)
		return rc < 0 ? CLI_EXIT_OK : rc;
	int opt_dim;
	rc = cli_check_values(&o, &opt_dim);
	if (rc != CLI_EXIT_OK)
		return rc;

	bool is_stdin = !strcmp(o.file, "-");
	o.name = is_stdin ? "<stdin>" : o.file;
	FILE *in = is_stdin ? stdin : fopen(o.file, "rb");
	if (!in)
		return cli_fail("cannot open %s: %s", o.file, strerror(errno));
	cli_progress_start();
	sf_scene scene;
	sf_error err;
	double read_start = cli_now();
	sf_status st = sf_read(in, &scene, &err, cli_progress_read, (void *)o.name);
	o.read_ms = 1e3 * (cli_now() - read_start);
	if (!is_stdin)
		fclose(in);
	if (st == SF_ERROR_LINE) {
		cli_progress_end();
		fprintf(stderr, "%s:%llu: %s\n", o.name, (unsigned long long)err.line, err.message);
		return CLI_EXIT_FAIL;
	}
	if (st != SF_OK) {
		cli_progress_end();
		return cli_fail("cannot read %s: %s", o.name, st == SF_ERROR_IO ? strerror(err.errnum) : err.message);
	}

	int dim = scene.dim ? scene.dim : opt_dim ? opt_dim : 2;
	if (opt_dim && opt_dim != dim)
		rc = cli_usage_error(&o, "the query is %dD but %s is %dD", opt_dim, o.name, dim);
	else if (dim == 2 && (o.view[0] == 2 || o.view[1] == 2))
		rc = cli_usage_error(&o, "--view names the z axis but %s is 2D", o.name);
	else
		rc = cli_check_packed(&o, dim);
	if (rc == CLI_EXIT_OK)
		rc = dim == 2 ? cli2_run(&o, &scene) : cli3_run(&o, &scene);
	cli_progress_end();
	sf_scene_free(&scene);
	return rc;
}

int main(int argc, char **argv)
{
	int rc = cli_main(argc, argv);
	if (!cli_out_flush() && rc == CLI_EXIT_OK)
		rc = cli_fail("cannot write the output");
	return rc;
}
