/*
 * gprof-summary: the end-of-window summary of libgprof traces, read back from the files; a
 * per-kernel comparison of two traces (--compare); a self-contained web page (--html).
 */
#include <errno.h>
#include <getopt.h>
#include <stdlib.h>
#include <string.h>

#include "common/heap.h"
#include "common/log.h"
#include "scripts/summary/tool.h"

/*
 * The one format read: the Kineto JSON that export/trace.c writes (gprof_format_kineto,
 * shared/TRACE_FORMAT.md), gzipped or plain. A second format in export/ needs a reader here.
 */
#define TOOL_FORMAT "Kineto JSON"

static const char usage[] =
    "Usage: gprof-summary [--html OUT.html] TRACE...\n"
    "       gprof-summary --compare A B\n"
    "\n"
    "Prints, for each libgprof trace (" TOOL_FORMAT ", .pt.trace.json.gz or plain .json), the\n"
    "summary libgprof printed when it wrote that trace: steps, GPU busy time, top kernels,\n"
    "copies. A file that cannot be read gets one line on stderr; the others are still done.\n"
    "\n"
    "  --compare A B    per-kernel changes from trace A to trace B (calls, total and mean GPU\n"
    "                   time, share of GPU time), largest absolute change in total time\n"
    "                   first; the step times (median, mean, min, p90, max), a change of\n"
    "                   the median within the runs' own spread (p75 - p25) marked as noise;\n"
    "                   and the change in GPU busy time\n"
    "  --html OUT.html  also writes a page for the one TRACE: its header, a per-step chart of\n"
    "                   GPU busy and idle time, a top-kernels chart and the summary; it needs\n"
    "                   nothing from the network\n"
    "  -h, --help       this text\n"
    "\n"
    "A trace is read a piece at a time, in memory that does not grow with its events. The\n"
    "busy times that --compare, --html and the total of several windows print take a second\n"
    "reading of a trace whose GPU work leaves more than 65536 gaps on a device.\n"
    "\n"
    "A testing aid: GPROF_SUMMARY_CHUNK=BYTES sets the piece (262144 bytes of text).\n"
    "\n"
    "Exit status: 0 every file was read, 1 a file could not be read or written, 2 bad usage.\n";

struct options {
	bool compare;
	const char *html; /* NULL: no page */
	char **files;
	int n_files;
	struct tool_read read;
};

static int bad_usage(const char *what)
{
	fprintf(stderr, "gprof-summary: %s; see gprof-summary --help\n", what);
	return 2;
}

/* GPROF_SUMMARY_CHUNK (tests): 0, or 2 (said). */
static int chunk_of(const char *env, size_t *bytes)
{
	char *end;
	unsigned long long v;

	if (!env)
		return 0;
	errno = 0;
	v = strtoull(env, &end, 10);
	if (errno || end == env || *end || !v || v > TOOL_ITEM_MAX)
		return bad_usage("GPROF_SUMMARY_CHUNK is a number of bytes from 1 to 67108864");
	*bytes = (size_t)v;
	return 0;
}

/* 0, 1 to exit 0 (--help), or 2 (usage error, said). */
static int parse(int argc, char **argv, struct options *o)
{
	static const struct option longs[] = {
	    {"compare", no_argument, NULL, 'c'},
	    {"html", required_argument, NULL, 'H'},
	    {"help", no_argument, NULL, 'h'},
	    {0},
	};
	int c;

	opterr = 0;
	while ((c = getopt_long(argc, argv, "h", longs, NULL)) != -1) {
		if (c == 'h') {
			fputs(usage, stdout);
			return 1;
		}
		if (c == '?' || c == ':')
			return bad_usage("unknown option or missing value");
		o->compare |= c == 'c';
		o->html = c == 'H' ? optarg : o->html;
	}
	o->files = argv + optind;
	o->n_files = argc - optind;
	if (o->compare && (o->n_files != 2 || o->html))
		return bad_usage("--compare takes two traces, and no --html");
	if (o->html && o->n_files != 1)
		return bad_usage("--html takes one trace");
	if (!o->n_files)
		return bad_usage("no trace given");
	o->read.busy = o->compare || o->html || o->n_files > 1;
	return chunk_of(getenv("GPROF_SUMMARY_CHUNK"), &o->read.chunk_bytes);
}

static int load(const char *path, const struct tool_read *how, struct tool_trace *t)
{
	char why[512], clean[1024];

	if (!tool_load(path, how, t, why, sizeof(why)))
		return 0;
	/* jansson's reason may quote the file's bytes */
	fprintf(stderr, "gprof-summary: %s: %s\n", tool_clean(path),
		gprof_log_clean(clean, sizeof(clean), why, strlen(why)));
	tool_free(t);
	return 1;
}

/* Writes the page; 0 or an errno. */
static int write_html(const struct tool_trace *t, const char *text, const char *path)
{
	FILE *f = fopen(path, "w");
	int err;

	if (!f)
		return errno;
	tool_html(t, text, f);
	err = ferror(f) ? EIO : 0;
	if (fclose(f) && !err)
		err = errno;
	return err;
}

/*
 * The library's summary of a loaded trace, saying "read" where the library says "written": this
 * tool writes no trace. NULL when out of memory.
 */
static char *summary_of(const struct tool_trace *t)
{
	static const char written[] = "gprof: trace written: ", read[] = "gprof: trace read: ";
	char *text = gprof_export_summary_text(&t->result);

	if (text && !strncmp(text, written, sizeof(written) - 1)) {
		const char *rest = text + sizeof(written) - 1;

		memmove(text + sizeof(read) - 1, rest, strlen(rest) + 1);
		memcpy(text, read, sizeof(read) - 1);
	}
	return text;
}

/* The summary text of a loaded trace to stdout, and the page when asked. */
static int report(const struct tool_trace *t, const char *html)
{
	char *text = summary_of(t);
	int err = 0;

	if (text)
		fputs(text, stdout);
	if (html)
		err = write_html(t, text ? text : "", html);
	if (err)
		fprintf(stderr, "gprof-summary: cannot write %s: %s\n", tool_clean(html),
			strerror(err));
	gprof_free(text);
	return err ? 1 : 0;
}

int main(int argc, char **argv)
{
	struct tool_total total = {0};
	struct options o = {0};
	struct tool_trace t[2];
	int rc = parse(argc, argv, &o);

	if (rc)
		return rc == 1 ? 0 : rc;
	if (o.compare) { /* a trace not loaded is left zeroed: freeing it does nothing */
		rc = load(o.files[0], &o.read, &t[0]);
		rc |= load(o.files[1], &o.read, &t[1]);
		if (!rc)
			tool_compare(&t[0], &t[1], stdout);
		tool_free(&t[0]);
		tool_free(&t[1]);
	}
	for (int i = 0; !o.compare && i < o.n_files; i++) {
		if (load(o.files[i], &o.read, &t[0])) {
			rc = 1;
			continue;
		}
		tool_total_add(&total, &t[0], stdout);
		rc |= report(&t[0], o.html);
		tool_free(&t[0]);
	}
	tool_total_put(&total, stdout);
	if (fflush(stdout) || ferror(stdout))
		rc = 1;
	return rc;
}
