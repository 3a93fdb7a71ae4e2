/*
 * PyTorch's operators from its profiler's NVTX mode (common/torchop.c, preload/torch.c): the
 * parser on messages as PyTorch writes them and on malformed ones, and test/apps/torch-app
 * replaying a stream of NVTX calls recorded from PyTorch 2.11 (test/apps/torch-nvtx.txt) on
 * the simulated GPU. The replay's expectations come from the stream alone: which operator each
 * launch ran inside, each operator's name, sequence number and sizes as its message says them.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "common/torchop.h"
#include "task.h"
#include "util/e2e.h"
#include "util/gtlog.h"
#include "util/text.h"

static void parse_one(const char *msg, bool is_op, const char *name, long long seq,
		      unsigned long long rf, const char *dims)
{
	struct gprof_torch_op op;

	ASSERT_MSG(gprof_torch_op_parse(msg, strlen(msg), &op) == is_op, "'%s'", msg);
	if (!is_op)
		return;
	ASSERT_EQ(op.name_len, strlen(name));
	ASSERT(!strncmp(msg, name, op.name_len));
	ASSERT_EQ(op.seq, seq);
	ASSERT_EQ(op.rf_id, rf);
	ASSERT_EQ(op.dims != NULL, dims != NULL);
	if (dims) {
		ASSERT_EQ(op.dims_len, strlen(dims));
		ASSERT(!strncmp(op.dims, dims, op.dims_len));
	}
}

TEST(torch_op_parse)
{
	parse_one("aten::addmm, seq = 8, op_id = 5, sizes = [[128], [32, 64], [64, 128], [], []], "
		  "input_op_ids = [(0,-1), (0,-1), (2,0), (0,-1), (0,-1)]",
		  true, "aten::addmm", 8, 5, "[[128], [32, 64], [64, 128], [], []]");
	parse_one("aten::empty, op_id = 12", true, "aten::empty", -1, 12, NULL);
	parse_one("autograd::engine::evaluate_function: MeanBackward0, op_id = 24", true,
		  "autograd::engine::evaluate_function: MeanBackward0", -1, 24, NULL);
	parse_one("aten::view, op_id = 3, sizes = [[-1, 8], []]", true, "aten::view", -1, 3,
		  "[[-1, 8], []]");
	parse_one("aten::cat, op_id = 4, sizes = [[[1], [2]], []]", true, "aten::cat", -1, 4,
		  "[[[1], [2]], []]");
	/* the name is what comes before the last op_id that ends well */
	parse_one("a, op_id = 1x, op_id = 2", true, "a, op_id = 1x", -1, 2, NULL);
	parse_one("a, seq = 9x, op_id = 2", true, "a, seq = 9x", -1, 2, NULL);
	/* sizes that are not the list PyTorch writes are left out, the operator stays */
	parse_one("a, op_id = 2, sizes = [[1, 2]", true, "a", -1, 2, NULL);
	parse_one("a, op_id = 2, sizes = [[1,2]]", true, "a", -1, 2, NULL);
	parse_one("a, op_id = 2, sizes = [[1], []], x", true, "a", -1, 2, NULL);
	parse_one("a, op_id = 2, sizes = [\"x\"]", true, "a", -1, 2, NULL);
	parse_one("a, op_id = 2, sizes = [[[[[[[[[[[[1]]]]]]]]]]]]", true, "a", -1, 2, NULL);
	/* not operators: user ranges */
	parse_one("nn.Module: Linear_0", false, NULL, 0, 0, NULL);
	parse_one("forward", false, NULL, 0, 0, NULL);
	parse_one(", op_id = 3", false, NULL, 0, 0, NULL);
	parse_one("a, op_id = ", false, NULL, 0, 0, NULL);
	parse_one("a, op_id = 99999999999999999999", false, NULL, 0, 0, NULL);
	parse_one("a, op_id = 3 and more", false, NULL, 0, 0, NULL);
	ASSERT(gprof_torch_op_user_scope("Optimizer.step#AdamW.step", 25));
	ASSERT(!gprof_torch_op_user_scope("aten::foo#bar", 13));
	ASSERT(!gprof_torch_op_user_scope("aten::mm", 8));
}

/* ---- the replay ---- */

#define MAX_LINES  4096
#define ITERATIONS 6
#define RECORDED   3 /* the default schedule's active steps */

struct line {
	int thread;
	char verb[8];
	const char *msg;       /* push */
	unsigned long long rf; /* push of an operator: its op_id; 0: not an operator */
	long long seq;	       /* push: the message's sequence number, or its node's; -1: none */
	bool node;	       /* push: a backward node, right inside the engine's wrapper */
	unsigned long long in; /* launch: the innermost operator open on its thread; 0: none */
};

struct stream {
	char *text;
	struct line lines[MAX_LINES];
	int n, ops, launches, nodes;
};

static unsigned long long op_id_of(const char *msg)
{
	const char *p = strstr(msg, ", op_id = ");

	return p && isdigit((unsigned char)p[10]) ? strtoull(p + 10, NULL, 10) : 0;
}

static void load_stream(struct stream *s)
{
	int stack[2][64], depth[2] = {0, 0};
	size_t len;
	char *save = NULL;

	text_read_file(proc_src_path("test/apps/torch-nvtx.txt"), &s->text, &len);
	s->n = s->ops = s->launches = s->nodes = 0;
	for (char *t = strtok_r(s->text, "\n", &save); t; t = strtok_r(NULL, "\n", &save)) {
		struct line *l = &s->lines[s->n];
		int at = 0, th;

		if (t[0] == '#')
			continue;
		ASSERT(s->n < MAX_LINES && sscanf(t, "%d %7s %n", &l->thread, l->verb, &at) >= 2);
		th = l->thread;
		l->seq = -1;
		if (!strcmp(l->verb, "push")) {
			const char *seq;

			l->msg = t + at;
			l->rf = op_id_of(l->msg);
			seq = strstr(l->msg, ", seq = ");
			if (seq && isdigit((unsigned char)seq[8]))
				l->seq = strtoll(seq + 8, NULL, 10);
			s->ops += l->rf != 0;
			if (depth[th]) {
				struct line *up = &s->lines[stack[th][depth[th] - 1]];

				/* the node (with a number) among the wrapper's children */
				if (strstr(up->msg, "autograd::engine::evaluate_function: ") ==
					up->msg &&
				    l->seq >= 0) {
					l->node = true;
					up->seq = l->seq;
					s->nodes++;
				}
			}
			stack[th][depth[th]++] = s->n;
		} else if (!strcmp(l->verb, "pop")) {
			ASSERT(depth[th] > 0);
			depth[th]--;
		} else if (!strcmp(l->verb, "launch")) {
			for (int d = depth[th] - 1; d >= 0 && !l->in; d--)
				l->in = s->lines[stack[th][d]].rf;
			s->launches++;
		}
		s->n++;
	}
}

static const struct line *line_of(const struct stream *s, unsigned long long rf)
{
	for (int i = 0; i < s->n; i++)
		if (s->lines[i].rf == rf)
			return &s->lines[i];
	FAIL("no operator %llu in the stream", rf);
}

/* The operator event with External id `id`, or NULL. */
static json_t *op_event(const struct trace *t, long long id)
{
	json_t *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		if (strcmp(trace_str(ev, "ph"), "X") ||
		    !json_object_get(json_object_get(ev, "args"), "Record function id"))
			continue;
		if (e2e_arg_int(ev, "External id") == id)
			return ev;
	}
	return NULL;
}

/* What the message says: name, sequence number, sizes, and the category PyTorch gives it. */
static void check_op(const json_t *ev, const struct line *l)
{
	const char *end = strstr(l->msg, ", op_id = "), *seq = strstr(l->msg, ", seq = ");
	const char *sizes = strstr(l->msg, ", sizes = ");
	json_t *args = json_object_get(ev, "args"), *want = NULL;
	char name[512];

	if (seq && seq < end && isdigit((unsigned char)seq[8]))
		end = seq;
	snprintf(name, sizeof(name), "%.*s", (int)(end - l->msg), l->msg);
	ASSERT_STR_EQ(trace_str(ev, "name"), name);
	ASSERT_STR_EQ(trace_str(ev, "cat"), strchr(name, '#') ? "user_annotation" : "cpu_op");
	ASSERT_MSG(e2e_arg_int(ev, "Sequence number") == l->seq, "%s: Sequence number %lld", l->msg,
		   e2e_arg_int(ev, "Sequence number"));
	if (sizes) {
		const char *tail = strstr(sizes, ", input_op_ids = ");
		int deepest = 0, d = 0;

		for (const char *p = sizes; *p && p != tail; p++) {
			d += *p == '[' ? 1 : *p == ']' ? -1 : 0;
			deepest = d > deepest ? d : deepest;
		}
		/* a list nested beyond reason is left out, as malformed ones are */
		if (deepest < 16)
			want = tail ? json_loadb(sizes + 10, (size_t)(tail - sizes - 10), 0, NULL)
				    : json_loads(sizes + 10, 0, NULL);
	}
	ASSERT_MSG(json_equal(json_object_get(args, "Input Dims"), want) ||
		       (!want && !json_object_get(args, "Input Dims")),
		   "Input Dims of '%s'", l->msg);
	json_decref(want);
}

/*
 * A module's forward: "Python module id" its number, its parent the module whose span holds
 * it on its thread (Sequential_0 for the stream's Linear modules), none for Sequential_0.
 */
static void check_module(const struct trace *t, const json_t *ev)
{
	const char *name = trace_str(ev, "name"), *digits = strrchr(name, '_');
	long long parent = e2e_arg_int(ev, "Python parent id");
	double ts = json_number_value(json_object_get(ev, "ts"));
	const json_t *up = NULL, *o;
	size_t i;

	ASSERT(digits);
	ASSERT_EQ(e2e_arg_int(ev, "Python module id"), atoll(digits + 1));
	ASSERT_GT(e2e_arg_int(ev, "Python id"), 0);
	if (!strcmp(name, "nn.Module: Sequential_0")) {
		ASSERT(
		    json_is_null(json_object_get(json_object_get(ev, "args"), "Python parent id")));
		return;
	}
	json_array_foreach(t->events, i, o)
	{
		double b = json_number_value(json_object_get(o, "ts"));

		if (!strcmp(trace_str(o, "name"), "nn.Module: Sequential_0") && b <= ts &&
		    ts <= b + json_number_value(json_object_get(o, "dur")))
			up = o;
	}
	ASSERT_MSG(up, "%s outside Sequential_0", name);
	ASSERT_EQ(parent, e2e_arg_int(up, "Python id"));
}

TEST(e2e_torch_operators_replayed)
{
	const char *argv[] = {proc_build_path("test/apps/torch-app"),
			      proc_src_path("test/apps/torch-nvtx.txt"), NULL};
	const char *env[] = {"GPROF_SUMMARY=off", NULL};
	static struct stream s;
	struct e2e_run r;
	const struct trace *t;
	long long main_tid;
	int kernels = 0, ops = 0, flows = 0, modules = 0;
	json_t *ev;
	size_t i;

	load_stream(&s);
	e2e_run(&r, argv, e2e_cupti(true), env, true);
	ASSERT_EQ(r.res.status, 0);
	ASSERT_EQ(r.n_traces, 1);
	ASSERT_MSG(!strstr(r.res.err, "gprof: "), "%s", r.res.err);
	t = &r.traces[0];
	main_tid = -1; /* the thread that marks steps */
	json_array_foreach(t->events, i, ev)
	{
		if (!strncmp(trace_str(ev, "name"), "ProfilerStep#", 13))
			main_tid = json_integer_value(json_object_get(ev, "tid"));
	}
	ASSERT_GT(main_tid, 0);
	json_array_foreach(t->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat");

		if (!strcmp(cat, "kernel")) {
			/* the launch's number is its grid; the ground truth has it by correlation */
			long long id = e2e_arg_int(ev, "External id");
			json_t *grid = json_object_get(json_object_get(ev, "args"), "grid");
			int k = (int)json_integer_value(json_array_get(grid, 0));
			const struct line *l = NULL;
			char match[96];

			snprintf(match, sizeof(match), "{\"type\":\"gpu\",\"corr\":%lld}",
				 e2e_arg_int(ev, "correlation"));
			ASSERT_EQ(gtlog_count(r.gt, match), 1);
			for (int j = 0, n = 0; j < s.n && !l; j++)
				if (!strcmp(s.lines[j].verb, "launch") && ++n == k)
					l = &s.lines[j];
			ASSERT_MSG(l, "a kernel of grid %d", k);
			if (!l->in) {
				ASSERT_EQ(id, -1);
			} else {
				json_t *op = op_event(t, id);

				ASSERT_MSG(op, "launch %d: no operator with External id %lld", k,
					   id);
				ASSERT_EQ(e2e_arg_int(op, "Record function id"), (long long)l->in);
			}
			kernels++;
		} else if (json_object_get(json_object_get(ev, "args"), "Record function id")) {
			const struct line *l =
			    line_of(&s, (unsigned long long)e2e_arg_int(ev, "Record function id"));

			check_op(ev, l);
			ASSERT_EQ(e2e_arg_int(ev, "Fwd thread id"),
				  l->seq < 0					      ? -1
				  : l->node || strstr(l->msg, "autograd::") == l->msg ? main_tid
										      : 0);
			ops++;
		} else if (!strcmp(cat, "python_function")) {
			check_module(t, ev);
			modules++;
		} else if (!strcmp(cat, "fwdbwd") && !strcmp(trace_str(ev, "ph"), "s")) {
			/* from a forward operator of the node's number, on the main thread */
			json_t *node = op_event(t, json_integer_value(json_object_get(ev, "id")));
			json_t *fwd = NULL, *o;
			size_t j;

			ASSERT(node);
			ASSERT_EQ(json_integer_value(json_object_get(ev, "tid")), main_tid);
			json_array_foreach(t->events, j, o)
			{
				if (json_equal(json_object_get(o, "ts"),
					       json_object_get(ev, "ts")) &&
				    e2e_arg_int(o, "Sequence number") ==
					e2e_arg_int(node, "Sequence number") &&
				    json_integer_value(json_object_get(o, "tid")) == main_tid)
					fwd = o;
			}
			ASSERT_MSG(fwd, "no forward operator where the link to %s starts",
				   trace_str(node, "name"));
			flows++;
		}
	}
	ASSERT_EQ(kernels, RECORDED * s.launches);
	/* each window step holds one iteration's operators, the last's optimizer.step open */
	ASSERT_EQ(ops, RECORDED * s.ops);
	ASSERT_EQ(flows, RECORDED * s.nodes);
	ASSERT_EQ(e2e_count(t, "user_annotation", "no digits, op_id = x"), RECORDED);
	/* the stream's modules: Sequential_0 holding Linear_0 and Linear_12; "_7" names none */
	ASSERT_EQ(modules, 3 * RECORDED);
	ASSERT_EQ(e2e_count(t, "user_annotation", "nn.Module: _7"), RECORDED);
	ASSERT_EQ(e2e_count(t, "fwdbwd", NULL), 2 * flows);
	free(s.text);
	e2e_free(&r);
}
