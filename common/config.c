/*
 * Configuration: one table of GPROF_* variables, parsed strictly from their defaults, the
 * GPROF_CONFIG JSON file and the environment (in that order); the same table prints the README's.
 */
#include <ctype.h>
#include <errno.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <sys/stat.h>
#include <fcntl.h>
#include <unistd.h>

#include <jansson.h>

#include "common/compiler.h"
#include "common/config.h"
#include "common/log.h"

extern char **environ;

enum var_type {
	VAR_SCHEDULE,
	VAR_STRING, /* non-empty text that fits its field */
	VAR_OUTPUT, /* VAR_STRING whose % escapes must be known ones */
	VAR_ACTIVITIES,
	VAR_UINT, /* decimal integer within [min, max] */
	VAR_LOG_LEVEL,
	VAR_CUPTI_LIB, /* "auto" or a path */
	VAR_BOOL,
	VAR_CONFIG,  /* GPROF_CONFIG itself: names the file, has no field */
	VAR_CHOICE,  /* one of the row's words, stored as its value (an int) */
	VAR_SECONDS, /* a decimal number of seconds, stored as struct gprof_seconds */
};

struct word {
	const char *name;
	unsigned value;
};

static const struct word trigger_words[] = {
#define X(name, word, help, mode, start, steps, source, hint) {word, GPROF_TRIGGER_##name},
    GPROF_TRIGGER_TABLE(X)
#undef X
};

static const char *const trigger_help[] = {
#define X(name, word, help, mode, start, steps, source, hint) help,
    GPROF_TRIGGER_TABLE(X)
#undef X
};

/* What the checks and the description go by, of each GPROF_TRIGGER_TABLE row. */
static const struct trigger_facts {
	bool from_start;   /* with GPROF_DELAY or GPROF_DURATION: a time window */
	bool counts_steps; /* GPROF_SCHEDULE's counts mean something */
} trigger_facts[GPROF_TRIGGER_COUNT] = {
#define X(name, word, help, mode, start, steps, source, hint) \
	[GPROF_TRIGGER_##name] = {.from_start = start, .counts_steps = steps},
    GPROF_TRIGGER_TABLE(X)
#undef X
};

static const struct word api_calls_words[] = {
    {"lean", GPROF_API_CALLS_LEAN},
    {"all", GPROF_API_CALLS_ALL},
};

static const struct word torch_words[] = {
    {"off", GPROF_TORCH_OFF},
    {"steps", GPROF_TORCH_STEPS},
    {"on", GPROF_TORCH_ON},
};

static const struct word torch_shapes_words[] = {
    {"0", 0},
    {"1", 1},
};

struct var {
	const char *name;
	enum var_type type;
	const char *dflt;     /* parsed like a user's value; NULL: none */
	const char *doc_dflt; /* the README's default cell when it isn't `dflt` */
	const char *help;
	const char *form;      /* the accepted form, in messages and the README (NULL: the words) */
	const char *form_tail; /* appended to form: a list made from a table; NULL: none */
	size_t offset;	       /* of the field in struct gprof_config */
	size_t size;
	unsigned min, max;	  /* VAR_UINT; VAR_SECONDS: max seconds, min 1 for "more than 0" */
	const struct word *words; /* VAR_CHOICE */
	size_t n_words;
	const char *const *word_help; /* VAR_CHOICE: what each word does, after help; or NULL */
};

/*
 * GPROF_ACTIVITIES' default (",kernel,memcpy...") and accepted words (", kernel, memcpy...")
 * from common/activity.h, each with a separator in front.
 */
#define ACTIVITY_ON_ON(word) "," word
#define ACTIVITY_ON_OFF(word)
#define ACTIVITY_ON(name, word, dflt, note)   ACTIVITY_ON_##dflt(word)
#define ACTIVITY_FORM(name, word, dflt, note) ", " word note
#define ACTIVITIES_ON			      GPROF_ACTIVITY_TABLE(ACTIVITY_ON)
#define ACTIVITIES_FORM			      GPROF_ACTIVITY_TABLE(ACTIVITY_FORM)

#define FIELD(f) \
	.offset = offsetof(struct gprof_config, f), .size = sizeof(((struct gprof_config *)0)->f)

/* Every variable; a new one is a row here (and a parser if its type is new). */
static const struct var vars[] = {
    {
	.name = "GPROF_SCHEDULE",
	.type = VAR_SCHEDULE,
	.dflt = "wait=1,warmup=1,active=3,repeat=1",
	.help = "which steps to record, as torch.profiler.schedule: repeat=0 repeats until exit, "
		"all records everything from start to exit",
	.form = "all, or comma-separated key=count with keys skip_first, wait, warmup, "
		"active (at least 1), repeat",
	FIELD(schedule),
    },
    {
	.name = "GPROF_STEP_MARKER",
	.type = VAR_STRING,
	.dflt = "step",
	.help = "NVTX mark or range-start message that ends one step and begins the next "
		"(\"step\", \"step 12\", \"step#12\" all count)",
	.form = "a non-empty message of at most 255 bytes",
	FIELD(step_marker),
    },
    {
	.name = "GPROF_OUTPUT",
	.type = VAR_OUTPUT,
	.dflt = "./gprof_traces",
	.help = "folder for trace files, created if missing",
	.form = "a path; %h is the host, %p the pid, %r the rank, %q{VAR} the variable VAR, "
		"%% a percent sign",
	FIELD(output),
    },
    {
	.name = "GPROF_ACTIVITIES",
	.type = VAR_ACTIVITIES,
	.dflt = ACTIVITIES_ON + 1, /* past the first comma */
	.help = "what to record",
	.form = "all, or comma-separated ",
	.form_tail = ACTIVITIES_FORM + 2, /* past the first ", " */
	FIELD(activities),
    },
    {
	.name = "GPROF_GZIP_LEVEL",
	.type = VAR_UINT,
	.dflt = "1",
	.help = "gzip compression level of trace files",
	.form = "an integer 0..9",
	FIELD(gzip_level),
	.min = 0,
	.max = 9,
    },
    {
	.name = "GPROF_BUFFER_MB",
	.type = VAR_UINT,
	.dflt = "64",
	.help = "cap on memory held for records not yet written (beyond it records are "
		"dropped and counted)",
	.form = "an integer 1..65536 (MiB)",
	FIELD(buffer_mb),
	.min = 1,
	.max = 65536,
    },
    {
	.name = "GPROF_WRITER_THREADS",
	.type = VAR_UINT,
	.dflt = "1",
	.help =
	    "compressor threads the trace writer may start beside itself, only while it "
	    "falls behind (a big window written at once); 0: it compresses alone (as under "
	    "ulimit -v, where a thread's start would cost the writer a malloc arena). On a 2-core "
	    "machine 1 uses the second core; more pays only where cores are idle",
	.form = "an integer 0..16",
	FIELD(writer_threads),
	.min = 0,
	.max = 16,
    },
    {
	.name = "GPROF_API_CALLS",
	.type = VAR_CHOICE,
	.dflt = "lean",
	.help = "with api in GPROF_ACTIVITIES, which runtime and driver calls traces hold: lean "
		"leaves out the calls that queue no GPU work and only ask for or set state "
		"(cudaGetDevice, cudaGetLastError, cuDevicePrimaryCtxGetState, stream-capture "
		"queries; README's list), which frameworks make by the thousand per step, as "
		"Kineto does (the trace's gprof.left_out counts them); all keeps every call",
	FIELD(api_calls),
	.words = api_calls_words,
	.n_words = ARRAY_SIZE(api_calls_words),
    },
    {
	.name = "GPROF_SUMMARY",
	.type = VAR_STRING,
	.dflt = "stderr",
	.help = "where the end-of-window summary goes",
	.form = "stderr, off, or a file path",
	FIELD(summary),
    },
    {
	.name = "GPROF_LOG",
	.type = VAR_LOG_LEVEL,
	.dflt = "warn",
	.help = "messages printed on stderr (every line starts with gprof:)",
	.form = "error, warn, info or debug",
	FIELD(log_level),
    },
    {
	.name = "GPROF_CUPTI_LIB",
	.type = VAR_CUPTI_LIB,
	.dflt = "auto",
	.doc_dflt = "auto",
	.help = "libcupti to load",
	.form = "auto (search for it) or the path of a libcupti",
	FIELD(cupti_lib),
    },
    {
	.name = "GPROF_DISABLE",
	.type = VAR_BOOL,
	.dflt = "0",
	.help = "1 makes the library inert",
	.form = "0 or 1",
	FIELD(disable),
    },
    {
	.name = "GPROF_SIGNALS",
	.type = VAR_BOOL,
	.dflt = "0",
	.help = "1: on SIGTERM or SIGINT (when the program leaves them at their default), "
		"the window in progress is written before the process ends by the signal",
	.form = "0 or 1",
	FIELD(signals),
    },
    {
	.name = "GPROF_TRIGGER",
	.type = VAR_CHOICE,
	.dflt = "steps",
	.help = "what begins and ends windows (docs/TRIGGERS.md)",
	FIELD(trigger),
	.words = trigger_words,
	.n_words = ARRAY_SIZE(trigger_words),
	.word_help = trigger_help,
    },
    {
	.name = "GPROF_TORCH",
	.type = VAR_CHOICE,
	.dflt = "off",
	.help = "PyTorch without code change (what gprof-run --torch-steps and --torch set, and "
		"what a launcher that passes only environment gives each process): steps, a step "
		"at every step of the first optimizer that steps; on, that and, in warmup and "
		"active steps, every operator as a cpu_op with its inputs, linked to the "
		"calls and GPU work it made, each module's forward and the GPU tensors' memory, "
		"as torch.profiler writes them (README: --torch)",
	FIELD(torch),
	.words = torch_words,
	.n_words = ARRAY_SIZE(torch_words),
    },
    {
	.name = "GPROF_TORCH_SHAPES",
	.type = VAR_CHOICE,
	.dflt = "1",
	.help = "with GPROF_TORCH=on: 1 writes each operator's inputs as torch.profiler's "
		"record_shapes does (\"Input Dims\", \"Input type\", \"Input Strides\", "
		"\"Concrete Inputs\"), 0 leaves them out",
	FIELD(torch_shapes),
	.words = torch_shapes_words,
	.n_words = ARRAY_SIZE(torch_shapes_words),
    },
    {
	.name = "GPROF_DELAY",
	.type = VAR_SECONDS,
	.doc_dflt = "unset",
	.help = "no window starts before this many seconds after the first CUDA call; with "
		"GPROF_TRIGGER=steps it makes a time window of its own, from then to "
		"GPROF_DURATION or exit, as Nsight Systems' --delay",
	.form = "seconds such as 30 or 2.5 (at most 9 decimals, at most 100000000)",
	FIELD(delay),
	.max = 100000000,
    },
    {
	.name = "GPROF_DURATION",
	.type = VAR_SECONDS,
	.doc_dflt = "unset",
	.help = "a window records at most this many seconds (whatever started it); with "
		"GPROF_TRIGGER=steps it makes a time window of its own, from the first CUDA call "
		"(or GPROF_DELAY) on, as Nsight Systems' --duration",
	.form = "seconds more than 0 such as 10 or 0.5 (at most 9 decimals, at most 100000000)",
	FIELD(duration),
	.min = 1,
	.max = 100000000,
    },
    {
	.name = "GPROF_CONFIG",
	.type = VAR_CONFIG,
	.doc_dflt = "unset",
	.help = "JSON file with the same settings, which the environment overrides",
	.form = "the path of a readable regular file of at most 1 MiB holding one JSON object "
		"whose keys are the names without GPROF_ in lowercase",
    },
};

/* Keys not given in GPROF_SCHEDULE take these values (they match the row's default). */
static const struct gprof_schedule schedule_default = {
    .skip_first = 0,
    .wait = 1,
    .warmup = 1,
    .active = 3,
    .repeat = 1,
};

/* GPROF_SCHEDULE's keys; the value is the field's offset. */
static const struct word sched_keys[] = {
    {"skip_first", offsetof(struct gprof_schedule, skip_first)},
    {"wait", offsetof(struct gprof_schedule, wait)},
    {"warmup", offsetof(struct gprof_schedule, warmup)},
    {"active", offsetof(struct gprof_schedule, active)},
    {"repeat", offsetof(struct gprof_schedule, repeat)},
};

static const struct word activity_words[] = {
#define ACTIVITY_WORD(name, word, ...) {word, GPROF_ACT_##name},
    GPROF_ACTIVITY_TABLE(ACTIVITY_WORD)
#undef ACTIVITY_WORD
};

static const struct word log_words[] = {
    {"error", GPROF_LOG_ERROR},
    {"warn", GPROF_LOG_WARN},
    {"info", GPROF_LOG_INFO},
    {"debug", GPROF_LOG_DEBUG},
};

/* Room for "what is wrong"; with two quoted strings and a form, a line fits GPROF_LOG_LINE_MAX. */
#define WHY_MAX	  160
#define QUOTE_MAX 80
#define KEY_MAX	  32
#define FILE_MAX  (1 << 20) /* bytes of GPROF_CONFIG's file */

struct quoted {
	char s[QUOTE_MAX + sizeof("...")];
};

/*
 * Makes s[0..len) safe to print on one line: printable ASCII as is except the bytes of
 * `special`, which get a backslash, every other byte as \xNN; beyond QUOTE_MAX characters it
 * ends with "...".
 */
static const char *escape(struct quoted *q, const char *s, size_t len, const char *special)
{
	size_t n = 0;

	for (size_t i = 0; i < len; i++) {
		unsigned char c = (unsigned char)s[i];
		char esc[5];

		if (c && strchr(special, c))
			snprintf(esc, sizeof(esc), "\\%c", c);
		else if (c >= 0x20 && c < 0x7f)
			snprintf(esc, sizeof(esc), "%c", c);
		else
			snprintf(esc, sizeof(esc), "\\x%02x", c);
		if (n + strlen(esc) > QUOTE_MAX) {
			memcpy(q->s + n, "...", 3);
			n += 3;
			break;
		}
		memcpy(q->s + n, esc, strlen(esc));
		n += strlen(esc);
	}
	q->s[n] = '\0';
	return q->s;
}

/* For text printed inside '...'. */
static const char *quote(struct quoted *q, const char *s, size_t len)
{
	return escape(q, s, len, "'\\");
}

static int GPROF_PRINTF(2, 3) bad(char *why, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(why, WHY_MAX, fmt, ap);
	va_end(ap);
	return -EINVAL;
}

/* Decimal digits only (no sign, no space), at most max; -ERANGE beyond it. */
static int parse_uint(const char *s, size_t len, uint64_t max, uint64_t *out)
{
	uint64_t v = 0;

	if (!len)
		return -EINVAL;
	for (size_t i = 0; i < len; i++) {
		if (!isdigit((unsigned char)s[i]))
			return -EINVAL;
		v = v * 10 + (uint64_t)(s[i] - '0');
		if (v > max)
			return -ERANGE;
	}
	*out = v;
	return 0;
}

static const struct word *find_word(const struct word *words, size_t n, const char *s, size_t len)
{
	for (size_t i = 0; i < n; i++)
		if (strlen(words[i].name) == len && !memcmp(words[i].name, s, len))
			return &words[i];
	return NULL;
}

typedef int (*item_fn)(void *ctx, const char *item, size_t len, char *why);

/* Calls fn on each comma-separated item of s; an empty item is an error. */
static int split_items(const char *s, item_fn fn, void *ctx, char *why)
{
	const char *item = s;

	for (;;) {
		size_t len = strcspn(item, ",");
		int err;

		if (!len)
			return bad(why, "empty item at byte %zu", (size_t)(item - s));
		err = fn(ctx, item, len, why);
		if (err || !item[len])
			return err;
		item += len + 1;
	}
}

struct sched_ctx {
	struct gprof_schedule sc;
	unsigned given; /* bit i: sched_keys[i] seen */
};

static int sched_item(void *ctx, const char *item, size_t len, char *why)
{
	struct sched_ctx *c = ctx;
	const char *eq = memchr(item, '=', len);
	size_t klen = eq ? (size_t)(eq - item) : len;
	const struct word *k = find_word(sched_keys, ARRAY_SIZE(sched_keys), item, klen);
	unsigned bit = k ? 1u << (k - sched_keys) : 0;
	struct quoted q;
	uint64_t count;

	if (!k)
		return bad(why, "unknown key '%s'", quote(&q, item, klen));
	if (!eq)
		return bad(why, "%s has no =count", k->name);
	if (c->given & bit)
		return bad(why, "%s given twice", k->name);
	c->given |= bit;
	if (parse_uint(eq + 1, len - klen - 1, UINT32_MAX, &count))
		return bad(why, "%s='%s' is not a count 0..%u", k->name,
			   quote(&q, eq + 1, len - klen - 1), UINT32_MAX);
	*(unsigned *)((char *)&c->sc + k->value) = (unsigned)count;
	return 0;
}

static int parse_schedule(const struct var *v, const char *s, void *dst, char *why)
{
	struct sched_ctx c = {.sc = schedule_default};
	int err = 0;

	(void)v;
	if (!strcmp(s, "all"))
		c.sc.all = true;
	else
		err = split_items(s, sched_item, &c, why);
	if (!err && !c.sc.active)
		err = bad(why, "active=0 records nothing");
	if (!err)
		memcpy(dst, &c.sc, sizeof(c.sc));
	return err;
}

static int parse_string(const struct var *v, const char *s, void *dst, char *why)
{
	size_t len = strlen(s);

	if (len >= v->size)
		return bad(why, "too long (%zu bytes, at most %zu)", len, v->size - 1);
	memcpy(dst, s, len + 1);
	return 0;
}

static int parse_cupti_lib(const struct var *v, const char *s, void *dst, char *why)
{
	return parse_string(v, strcmp(s, "auto") ? s : "", dst, why);
}

/* Accepts %h %p %r %% and %q{NAME}; the export module expands them. */
static int parse_output(const struct var *v, const char *s, void *dst, char *why)
{
	static const char name_chars[] =
	    "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_";
	struct quoted q;

	for (const char *p = strchr(s, '%'); p; p = strchr(p, '%')) {
		size_t at = (size_t)(p - s), n;

		p++;
		if (*p && strchr("hpr%", *p)) {
			p++;
			continue;
		}
		if (*p != 'q')
			return bad(why, "unknown escape '%%%s' at byte %zu", quote(&q, p, !!*p),
				   at);
		n = p[1] == '{' ? strspn(p + 2, name_chars) : 0;
		if (!n || p[2 + n] != '}')
			return bad(why, "%%q at byte %zu needs {NAME} with NAME a variable name",
				   at);
		p += 3 + n;
	}
	return parse_string(v, s, dst, why);
}

static int activity_item(void *ctx, const char *item, size_t len, char *why)
{
	unsigned *bits = ctx;
	const struct word *w = find_word(activity_words, ARRAY_SIZE(activity_words), item, len);
	struct quoted q;

	if (!w)
		return bad(why, "unknown activity '%s'", quote(&q, item, len));
	if (*bits & w->value)
		return bad(why, "%s given twice", w->name);
	*bits |= w->value;
	return 0;
}

static int parse_activities(const struct var *v, const char *s, void *dst, char *why)
{
	unsigned bits = 0;
	int err = 0;

	(void)v;
	if (!strcmp(s, "all")) {
		for (size_t i = 0; i < ARRAY_SIZE(activity_words); i++)
			bits |= activity_words[i].value;
	} else {
		err = split_items(s, activity_item, &bits, why);
	}
	if (!err)
		*(unsigned *)dst = bits;
	return err;
}

static int parse_uint_var(const struct var *v, const char *s, void *dst, char *why)
{
	uint64_t n;
	int err = parse_uint(s, strlen(s), v->max, &n);

	if (err == -EINVAL)
		return bad(why, "not a decimal integer");
	if (err || n < v->min)
		return bad(why, "out of range");
	*(unsigned *)dst = (unsigned)n; /* the int fields hold 0..INT_MAX just as well */
	return 0;
}

static int parse_log_level(const struct var *v, const char *s, void *dst, char *why)
{
	const struct word *w = find_word(log_words, ARRAY_SIZE(log_words), s, strlen(s));

	(void)v;
	if (!w)
		return bad(why, "unknown log level");
	*(int *)dst = (int)w->value;
	return 0;
}

static int parse_bool(const struct var *v, const char *s, void *dst, char *why)
{
	(void)v;
	if (strcmp(s, "0") && strcmp(s, "1"))
		return bad(why, "neither 0 nor 1");
	*(bool *)dst = s[0] == '1';
	return 0;
}

static int parse_choice(const struct var *v, const char *s, void *dst, char *why)
{
	const struct word *w = find_word(v->words, v->n_words, s, strlen(s));

	if (!w)
		return bad(why, "unknown value");
	*(int *)dst = (int)w->value;
	return 0;
}

#define NS_DIGITS 9 /* decimals of a second that fit in ns */

/* "30", "2.5", "0.001": digits, then optionally '.' and 1..9 digits; no sign, exponent or unit. */
static int parse_seconds(const struct var *v, const char *s, void *dst, char *why)
{
	size_t whole = strspn(s, "0123456789"), frac = 0;
	struct gprof_seconds *out = dst;
	uint64_t secs, ns = 0;

	if (s[whole] == '.')
		frac = strspn(s + whole + 1, "0123456789");
	if (!whole || (s[whole] == '.' && !frac) || s[whole + (frac ? frac + 1 : 0)])
		return bad(why, "not a number of seconds");
	if (frac > NS_DIGITS)
		return bad(why, "more than %d decimals", NS_DIGITS);
	if (parse_uint(s, whole, v->max, &secs))
		return bad(why, "out of range");
	for (size_t i = 0; i < NS_DIGITS; i++)
		ns = ns * 10 + (i < frac ? (uint64_t)(s[whole + 1 + i] - '0') : 0);
	ns += secs * 1000000000u;
	if (ns > (uint64_t)v->max * 1000000000u)
		return bad(why, "out of range");
	if (ns < v->min)
		return bad(why, "0 records nothing");
	*out = (struct gprof_seconds){.ns = ns, .set = true};
	return 0;
}

typedef int (*parse_fn)(const struct var *v, const char *s, void *dst, char *why);

/* How each type is parsed and which JSON values a config file may give it besides strings. */
static const struct var_kind {
	parse_fn parse;
	bool json_int;	/* a JSON integer, written in decimal */
	bool json_bool; /* true and false, as 1 and 0 */
} kinds[] = {
    [VAR_SCHEDULE] = {.parse = parse_schedule},
    [VAR_STRING] = {.parse = parse_string},
    [VAR_OUTPUT] = {.parse = parse_output},
    [VAR_ACTIVITIES] = {.parse = parse_activities},
    [VAR_UINT] = {.parse = parse_uint_var, .json_int = true},
    [VAR_LOG_LEVEL] = {.parse = parse_log_level},
    [VAR_CUPTI_LIB] = {.parse = parse_cupti_lib},
    [VAR_BOOL] = {.parse = parse_bool, .json_int = true, .json_bool = true},
    [VAR_CONFIG] = {.parse = NULL},
    [VAR_CHOICE] = {.parse = parse_choice},
    [VAR_SECONDS] = {.parse = parse_seconds, .json_int = true},
};

/* The file key of a variable: its name without GPROF_, in lowercase. */
static const char *var_key(const struct var *v, char key[KEY_MAX])
{
	size_t i;

	for (i = 0; v->name[6 + i] && i < KEY_MAX - 1; i++)
		key[i] = (char)tolower((unsigned char)v->name[6 + i]);
	key[i] = '\0';
	return key;
}

static const struct var *find_var(const char *s, size_t len, bool as_key)
{
	char key[KEY_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *name = as_key ? var_key(&vars[i], key) : vars[i].name;

		if (strlen(name) == len && !memcmp(name, s, len))
			return &vars[i];
	}
	return NULL;
}

#define DIST_MAX 64

static bool same_letter(char a, char b)
{
	return tolower((unsigned char)a) == tolower((unsigned char)b);
}

/* Edit distance ignoring case, where swapping two neighbours is one edit. */
static size_t distance(const char *a, size_t la, const char *b)
{
	size_t lb = strnlen(b, DIST_MAX), d[3][DIST_MAX + 1];

	la = la < DIST_MAX ? la : DIST_MAX;
	for (size_t j = 0; j <= lb; j++)
		d[0][j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t *cur = d[i % 3], *up = d[(i - 1) % 3], *up2 = d[(i + 1) % 3];

		cur[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t best = up[j - 1] + !same_letter(a[i - 1], b[j - 1]);

			best = up[j] + 1 < best ? up[j] + 1 : best;
			best = cur[j - 1] + 1 < best ? cur[j - 1] + 1 : best;
			if (i > 1 && j > 1 && same_letter(a[i - 1], b[j - 2]) &&
			    same_letter(a[i - 2], b[j - 1]))
				best = up2[j - 2] + 1 < best ? up2[j - 2] + 1 : best;
			cur[j] = best;
		}
	}
	return d[la % 3][lb];
}

/*
 * The variable whose file key is nearest to s (a key, or a name without GPROF_): a key that
 * starts with s or that s starts with ("gzip", "disabled") counts as one edit away.
 */
static const struct var *closest(const char *s, size_t len)
{
	const struct var *best = &vars[0];
	size_t best_d = SIZE_MAX;
	char key[KEY_MAX];

	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		size_t klen = strlen(var_key(&vars[i], key)), d = distance(s, len, key);
		size_t common = len < klen ? len : klen;

		if (common >= 3 && !strncasecmp(s, key, common) && d > 1)
			d = 1;
		if (d < best_d) {
			best = &vars[i];
			best_d = d;
		}
	}
	return best;
}

/* One call of gprof_config_load. */
struct load {
	struct gprof_config *cfg;
	char *const *env;
	const char *path;	      /* GPROF_CONFIG; NULL when unset */
	json_t *root;		      /* the file's value, NULL when not read */
	char err[GPROF_LOG_LINE_MAX]; /* the first error; printed at the end unless disabled */
};

static const char *env_get(char *const *env, const char *name)
{
	size_t len = strlen(name);

	for (; *env; env++)
		if (!strncmp(*env, name, len) && (*env)[len] == '=')
			return *env + len + 1;
	return NULL;
}

/* Records "GPROF_X='value'[ (from path)]: why; expected form" unless an error came first. */
static int fail_form(struct load *ld, const struct var *v, const char *value, bool from_file,
		     const char *why, const char *form)
{
	struct quoted qv, qp;

	if (ld->err[0])
		return -EINVAL;
	snprintf(ld->err, sizeof(ld->err), "%s='%s'%s%s%s: %s; expected %s", v->name,
		 quote(&qv, value, strlen(value)), from_file ? " (from " : "",
		 from_file ? quote(&qp, ld->path, strlen(ld->path)) : "", from_file ? ")" : "", why,
		 form);
	return -EINVAL;
}

#define FORM_MAX 1024

/* The accepted form: the row's, or a choice's words ("a, b or c"). */
static const char *form_of(const struct var *v, char buf[FORM_MAX])
{
	size_t n = 0;

	if (v->form) {
		snprintf(buf, FORM_MAX, "%s%s", v->form, v->form_tail ? v->form_tail : "");
		return buf;
	}
	buf[0] = '\0';
	for (size_t i = 0; i < v->n_words && n < FORM_MAX; i++) {
		const char *sep = i + 1 < v->n_words ? ", " : " or ";

		n +=
		    (size_t)snprintf(buf + n, FORM_MAX - n, "%s%s", i ? sep : "", v->words[i].name);
	}
	return buf;
}

static int fail(struct load *ld, const struct var *v, const char *value, bool from_file,
		const char *why)
{
	char form[FORM_MAX];

	return fail_form(ld, v, value, from_file, why, form_of(v, form));
}

static int set_value(struct load *ld, const struct var *v, const char *text, bool from_file)
{
	char why[WHY_MAX];
	int err;

	if (!text[0])
		err = bad(why, "empty value");
	else
		err = kinds[v->type].parse(v, text, (char *)ld->cfg + v->offset, why);
	return err ? fail(ld, v, text, from_file, why) : 0;
}

static const char *json_kind_name(const json_t *j)
{
	static const char *const names[] = {
	    [JSON_OBJECT] = "an object",   [JSON_ARRAY] = "an array",
	    [JSON_STRING] = "a string",	   [JSON_INTEGER] = "an integer",
	    [JSON_REAL] = "a real number", [JSON_TRUE] = "true",
	    [JSON_FALSE] = "false",	   [JSON_NULL] = "null",
	};

	return names[json_typeof(j)];
}

/* The text of a file's value, as if it came from the environment; NULL if of the wrong type. */
static const char *json_text(const struct var *v, const json_t *j, char buf[32])
{
	const struct var_kind *k = &kinds[v->type];

	if (json_is_string(j))
		return json_string_value(j);
	if (k->json_int && json_is_integer(j)) {
		snprintf(buf, 32, "%" JSON_INTEGER_FORMAT, json_integer_value(j));
		return buf;
	}
	if (k->json_bool && json_is_boolean(j))
		return json_is_true(j) ? "1" : "0";
	return NULL;
}

static int fail_type(struct load *ld, const struct var *v, const json_t *j)
{
	const struct var_kind *k = &kinds[v->type];
	char *dump = json_dumps(j, JSON_ENCODE_ANY | JSON_COMPACT);
	char why[WHY_MAX];

	bad(why, "%s where %s is needed", json_kind_name(j),
	    k->json_bool  ? "0, 1, true, false or a string"
	    : k->json_int ? "an integer or a string"
			  : "a string");
	fail(ld, v, dump ? dump : "?", true, why);
	free(dump);
	return -EINVAL;
}

static int apply_file(struct load *ld)
{
	const struct var *config = find_var("GPROF_CONFIG", 12, false);
	const char *key;
	json_t *j;

	json_object_foreach(ld->root, key, j)
	{
		const struct var *v = find_var(key, strlen(key), true);
		char buf[32], why[WHY_MAX], k[KEY_MAX];
		const char *text;
		struct quoted q;

		if (!v || v->type == VAR_CONFIG) {
			bad(why, "unknown key '%s' (did you mean %s?)", quote(&q, key, strlen(key)),
			    var_key(closest(key, strlen(key)), k));
			return fail(ld, config, ld->path, false, why);
		}
		text = json_text(v, j, buf);
		if (!text)
			return fail_type(ld, v, j);
		if (set_value(ld, v, text, true))
			return -EINVAL;
	}
	return 0;
}

/* What a path that is not a regular file is, for the message. */
static const char *file_kind(mode_t mode)
{
	return S_ISFIFO(mode)	? "a pipe or FIFO (as <(...) and /dev/stdin often are)"
	       : S_ISDIR(mode)	? "a directory"
	       : S_ISCHR(mode)	? "a character device"
	       : S_ISSOCK(mode) ? "a socket"
				: "not a regular file";
}

/* Reads all of fd, which holds size bytes: 0, or a negative errno (-EFBIG: it grew). */
static int read_all(int fd, char *buf, size_t size)
{
	size_t len = 0;

	/* One byte more than expected: a file that grows is refused, not cut. */
	while (len <= size) {
		ssize_t n = read(fd, buf + len, size + 1 - len);

		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return n < 0 ? -errno : len == size ? 0 : -EIO;
		len += (size_t)n;
	}
	return -EFBIG;
}

/*
 * The file's text, read once. Only a regular file of at most FILE_MAX is opened
 * (a FIFO would block before main, a device or the program's stdin would lose its bytes), and
 * the descriptor is checked to be that file. 0, or -EINVAL with why.
 */
static int slurp(const char *path, char **text, size_t *len, char why[WHY_MAX])
{
	struct stat named, st;
	int fd, err;

	*text = NULL;
	if (stat(path, &named) != 0)
		return bad(why, "%s", strerror(errno));
	if (!S_ISREG(named.st_mode))
		return bad(why, "%s, not a regular file", file_kind(named.st_mode));
	fd = open(path, O_RDONLY | O_NONBLOCK | O_NOCTTY | O_CLOEXEC);
	if (fd < 0)
		return bad(why, "%s", strerror(errno));
	err = fstat(fd, &st) != 0 ? -errno : 0;
	if (!err && (st.st_ino != named.st_ino || st.st_dev != named.st_dev))
		err = bad(why, "replaced by another file while being opened");
	else if (!err && st.st_size > FILE_MAX)
		err = bad(why, "%lld bytes, more than the %d a settings file may have",
			  (long long)st.st_size, FILE_MAX);
	else if (!err && !(*text = malloc((size_t)st.st_size + 1)))
		err = -ENOMEM;
	if (!err)
		err = read_all(fd, *text, *len = (size_t)st.st_size);
	close(fd);
	if (err && err != -EINVAL)
		bad(why, "cannot read it: %s",
		    err == -EFBIG ? "it grew while being read"
		    : err == -EIO ? "it shrank while being read"
				  : strerror(-err));
	if (err) {
		free(*text);
		*text = NULL;
	}
	return err ? -EINVAL : 0;
}

static int read_file(struct load *ld)
{
	const struct var *config = find_var("GPROF_CONFIG", 12, false);
	char why[WHY_MAX] = "";
	json_error_t jerr;
	struct quoted q;
	size_t len = 0;
	char *text;

	if (!ld->path[0])
		return fail(ld, config, "", false, "empty value");
	if (slurp(ld->path, &text, &len, why))
		return fail(ld, config, ld->path, false, why);
	ld->root = json_loadb(text, len, JSON_DECODE_ANY | JSON_REJECT_DUPLICATES, &jerr);
	free(text);
	if (!ld->root)
		bad(why, "malformed JSON at line %d, column %d: %s", jerr.line, jerr.column,
		    escape(&q, jerr.text, strlen(jerr.text), "\\"));
	else if (!json_is_object(ld->root))
		bad(why, "the file holds %s, not an object", json_kind_name(ld->root));
	else
		return apply_file(ld);
	return fail(ld, config, ld->path, false, why);
}

static bool schedule_is_default(const struct gprof_schedule *s)
{
	return !s->all && s->skip_first == schedule_default.skip_first &&
	       s->wait == schedule_default.wait && s->warmup == schedule_default.warmup &&
	       s->active == schedule_default.active && s->repeat == schedule_default.repeat;
}

/* The configuration's trigger's row (a value outside the table, which no word gives, reads as
 * the first). */
static const struct trigger_facts *trigger_of(const struct gprof_config *c)
{
	return &trigger_facts[c->trigger >= 0 && c->trigger < GPROF_TRIGGER_COUNT ? c->trigger : 0];
}

/* A trigger wanted from the start makes a time window of GPROF_DELAY and GPROF_DURATION. */
static bool time_window(const struct gprof_config *c)
{
	return trigger_of(c)->from_start && (c->delay.set || c->duration.set);
}

/*
 * Settings that are fine alone but not together: a step schedule (other than the default or
 * all) with a trigger that counts no steps (cudaProfilerStart/Stop) or a time window.
 */
static int check_combination(struct load *ld)
{
	const struct gprof_config *c = ld->cfg;
	const struct var *v = find_var("GPROF_SCHEDULE", 14, false);
	char text[GPROF_SCHEDULE_STR_MAX], why[WHY_MAX];

	if (c->schedule.all || schedule_is_default(&c->schedule) ||
	    (trigger_of(c)->counts_steps && !time_window(c)))
		return 0;
	if (!trigger_of(c)->counts_steps)
		bad(why, "GPROF_TRIGGER=%s does not count steps",
		    gprof_config_trigger_name(c->trigger));
	else
		bad(why, "%s%s%s makes a time window, which does not count steps",
		    c->delay.set ? "GPROF_DELAY" : "",
		    c->delay.set && c->duration.set ? " with " : "",
		    c->duration.set ? "GPROF_DURATION" : "");
	gprof_config_schedule_str(&c->schedule, text, sizeof(text));
	return fail_form(ld, v, text, false, why, "all or the default schedule with it");
}

/* GPROF_DISABLE=1 from the environment, or from the file when the environment doesn't say. */
static bool disabled(const struct load *ld)
{
	const struct var *v = find_var("GPROF_DISABLE", 13, false);
	const char *text = env_get(ld->env, v->name);
	char buf[32];

	if (!text && json_is_object(ld->root)) {
		const json_t *j = json_object_get(ld->root, "disable");

		text = j ? json_text(v, j, buf) : NULL;
	}
	return text && !strcmp(text, "1");
}

/* Unknown GPROF_* variables are likely typos: say which name was probably meant. */
static void warn_unknown(const struct load *ld)
{
	if (ld->cfg->log_level < GPROF_LOG_WARN)
		return;
	for (char *const *e = ld->env; *e; e++) {
		size_t len = strcspn(*e, "=");
		struct quoted q;

		/* gprof-run's own, for the processes it runs (preload/run.c, preload/report.c) */
		if (strncmp(*e, "GPROF_", 6) || find_var(*e, len, false) ||
		    (len == 13 && !strncmp(*e, "GPROF_RUN_DIR", 13)) ||
		    (len == 17 && !strncmp(*e, "GPROF_TORCH_STEPS", 17)))
			continue;
		gprof_log(GPROF_LOG_WARN,
			  "%s is not a libgprof variable and is ignored; did you mean %s?",
			  quote(&q, *e, len), closest(*e + 6, len - 6)->name);
	}
}

int gprof_config_load(struct gprof_config *cfg, char *const *env)
{
	static char *const no_env[] = {NULL};
	struct load ld = {.cfg = cfg, .env = env ? env : environ ? environ : no_env};
	int err = 0;

	memset(cfg, 0, sizeof(*cfg));
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++)
		if (vars[i].dflt && set_value(&ld, &vars[i], vars[i].dflt, false))
			goto out;
	ld.path = env_get(ld.env, "GPROF_CONFIG");
	if (ld.path && read_file(&ld))
		goto out;
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const char *text = env_get(ld.env, vars[i].name);

		if (text && vars[i].type != VAR_CONFIG && set_value(&ld, &vars[i], text, false))
			goto out;
	}
	check_combination(&ld);
out:
	if (disabled(&ld)) {
		cfg->disable = true;
	} else if (ld.err[0]) {
		pr_err("%s", ld.err);
		err = -EINVAL;
	} else {
		warn_unknown(&ld);
	}
	json_decref(ld.root);
	return err;
}

int gprof_config_schedule_str(const struct gprof_schedule *s, char *buf, size_t len)
{
	int n;

	if (s->all)
		n = snprintf(buf, len, "all");
	else
		n = snprintf(buf, len, "skip_first=%u,wait=%u,warmup=%u,active=%u,repeat=%u",
			     s->skip_first, s->wait, s->warmup, s->active, s->repeat);
	return n >= 0 && (size_t)n < len ? 0 : -ENOSPC;
}

/* Seconds as the variables take them ("2.5", "30"), after "; key=", when set. */
static void append_seconds(char *buf, size_t len, const char *key, struct gprof_seconds t)
{
	char frac[16];
	size_t n = strlen(buf);
	int last = 9;

	snprintf(frac, sizeof(frac), ".%09llu", (unsigned long long)(t.ns % 1000000000u));
	while (last > 0 && frac[last] == '0')
		frac[last--] = '\0';
	if (!last)
		frac[0] = '\0';
	if (t.set)
		snprintf(buf + n, len - n, "; %s=%llu%s", key,
			 (unsigned long long)(t.ns / 1000000000u), frac);
}

void gprof_config_describe(const struct gprof_config *c, char *buf, size_t len)
{
	size_t n;

	buf[0] = '\0';
	if (trigger_of(c)->counts_steps)
		gprof_config_schedule_str(&c->schedule, buf, len);
	if (time_window(c) && !c->schedule.all)
		snprintf(buf, len, "time window");
	n = strlen(buf);
	if (c->trigger != GPROF_TRIGGER_STEPS)
		snprintf(buf + n, len - n, "%strigger=%s", n ? "; " : "",
			 gprof_config_trigger_name(c->trigger));
	append_seconds(buf, len, "delay", c->delay);
	append_seconds(buf, len, "duration", c->duration);
}

const char *gprof_config_trigger_name(int trigger)
{
	for (size_t i = 0; i < ARRAY_SIZE(trigger_words); i++)
		if ((int)trigger_words[i].value == trigger)
			return trigger_words[i].name;
	return "?";
}

void gprof_config_print_table(FILE *out)
{
	fputs("| variable | default | meaning |\n| --- | --- | --- |\n", out);
	for (size_t i = 0; i < ARRAY_SIZE(vars); i++) {
		const struct var *v = &vars[i];
		char form[FORM_MAX];

		fprintf(out, "| `%s` | %s%s%s | %s", v->name, v->doc_dflt ? "" : "`",
			v->doc_dflt ? v->doc_dflt : v->dflt, v->doc_dflt ? "" : "`", v->help);
		/* ": word, what it does; word, what it does" */
		for (size_t w = 0; v->word_help && w < v->n_words; w++)
			fprintf(out, "%s%s, %s", w ? "; " : ": ", v->words[w].name,
				v->word_help[w]);
		fprintf(out, "; accepted: %s |\n", form_of(v, form));
	}
}
