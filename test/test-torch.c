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
#include "export/internal.h"
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
	ASSERT(gprof_torch_op_user_scope("nccl:all_reduce", 15));
	ASSERT(gprof_torch_op_user_scope("gloo:broadcast", 14));
	ASSERT(!gprof_torch_op_user_scope("nccl", 4));
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

/* torch-app replaying the stream under libgprof, on the simulated GPU and CUPTI: one trace. */
static void run_stream(struct e2e_run *r, const char *stream, const char *const *env)
{
	const char *argv[] = {proc_build_path("test/apps/torch-app"), proc_src_path(stream), NULL};

	e2e_run(r, argv, e2e_cupti(true), env, true);
	ASSERT_EQ(r->res.status, 0);
	ASSERT_EQ(r->n_traces, 1);
}

static void run_replay(struct e2e_run *r, const char *const *env)
{
	run_stream(r, "test/apps/torch-nvtx.txt", env);
}

/* The operator or record_function scope with External id `id`, or NULL. */
static json_t *op_named_by(const struct trace *t, long long id)
{
	json_t *ev;
	size_t i;

	json_array_foreach(t->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat");

		if ((!strcmp(cat, "cpu_op") || !strcmp(cat, "user_annotation")) &&
		    e2e_arg_int(ev, "External id") == id)
			return ev;
	}
	return NULL;
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
	const char *env[] = {"GPROF_SUMMARY=off", NULL};
	static struct stream s;
	struct e2e_run r;
	const struct trace *t;
	long long main_tid;
	int kernels = 0, ops = 0, flows = 0, modules = 0;
	json_t *ev;
	size_t i;

	load_stream(&s);
	run_replay(&r, env);
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

/*
 * Tensor memory as --torch's hook hands it over (the stream's memory lines): [memory] events
 * with the allocator's totals, those of the recorded steps only, and the summary's line.
 */
TEST(e2e_torch_tensor_memory)
{
	const char *env[] = {"GPROF_TORCH=on", NULL};
	static const long long want[][3] = {
	    {1024, 70001024, 90000000}, {2048, 70003072, 90000000}, {-1024, 70002048, 90000000}};
	int seen[3] = {0}, n = 0;
	struct e2e_run r;
	json_t *ev;
	size_t i;

	run_replay(&r, env);
	json_array_foreach(r.traces[0].events, i, ev)
	{
		if (strcmp(trace_str(ev, "name"), "[memory]"))
			continue;
		ASSERT_EQ(e2e_arg_int(ev, "Device Type"), 1);
		for (int k = 0; k < 3; k++)
			if (e2e_arg_int(ev, "Bytes") == want[k][0]) {
				ASSERT_EQ(e2e_arg_int(ev, "Total Allocated"), want[k][1]);
				ASSERT_EQ(e2e_arg_int(ev, "Total Reserved"), want[k][2]);
				seen[k]++;
			}
		n++;
	}
	ASSERT_EQ(n, 3 * RECORDED);
	for (int k = 0; k < 3; k++)
		ASSERT_EQ(seen[k], RECORDED);
	ASSERT_STR_CONTAINS(r.res.err,
			    "PyTorch's tensors: peak 66.76 MiB allocated, 85.83 MiB reserved");
	e2e_free(&r);
}

/*
 * PyTorch's own profiler under --torch (test/apps/torch-kineto.txt): libgprof keeps CUPTI,
 * each operator PyTorch's profiler pushes becomes an event with the name and args the hook
 * hands over and an External id of libgprof's that its GPU work carries, a backward operator
 * is linked to its forward one, a step marker inside optimizer.step's scope counts at its end,
 * the host's tensor memory is written as PyTorch writes it, and text that is no array of
 * operators changes nothing and is said once.
 */
TEST(e2e_torch_kineto_operators)
{
	const char *env[] = {"GPROF_TORCH=on", NULL};
	/* the operator each of the iteration's first four launches is in */
	static const char *const launched_in[] = {"aten::addmm", "record_param_comms",
						  "AddmmBackward0", "aten::add_"};
	struct e2e_run r;
	struct trace *t;
	json_t *ev;
	size_t i;
	int kernels = 0, linked = 0, flows = 0, host_memory = 0;

	run_stream(&r, "test/apps/torch-kineto.txt", env);
	t = &r.traces[0];
	ASSERT_EQ(text_count(r.res.err, "gprof: --torch: the window's operators are not written: "
					"not a JSON array of [id, user, name, {args}, ts, dur, "
					"tid, fwd] operators"),
		  1);
	ASSERT(!strstr(r.res.err, "handed it over"));
	/* the summary names them too: the 8 operators and scopes of each recorded step */
	ASSERT_STR_CONTAINS(r.res.err, "gprof:   top 8 of 8 operators by GPU time of their work");
	ASSERT(strstr(r.res.err, "          3 ") &&
	       strstr(strstr(r.res.err, "operators by GPU time"), "  aten::addmm\n"));
	json_array_foreach(t->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat");

		if (!strcmp(cat, "kernel")) {
			json_t *op = op_named_by(t, e2e_arg_int(ev, "External id"));
			kernels++;
			for (size_t j = 0; op && j < ARRAY_SIZE(launched_in); j++)
				linked += !strcmp(trace_str(op, "name"), launched_in[j]);
		} else if (!strcmp(cat, "fwdbwd")) {
			json_t *op = op_named_by(t, json_integer_value(json_object_get(ev, "id")));

			ASSERT(op);
			ASSERT_STR_EQ(trace_str(op, "name"), "AddmmBackward0");
			flows++;
		} else if (!strcmp(trace_str(ev, "name"), "[memory]") &&
			   e2e_arg_int(ev, "Device Type") == 0) {
			ASSERT_EQ(e2e_arg_int(ev, "Device Id"), -1);
			ASSERT_EQ(e2e_arg_int(ev, "Bytes"), 64);
			host_memory++;
		}
	}
	ASSERT_EQ(kernels, 5 * RECORDED);
	ASSERT_EQ(linked, 4 * RECORDED);
	ASSERT_EQ(flows, 2 * RECORDED);
	ASSERT_EQ(host_memory, RECORDED);
	ASSERT_EQ(e2e_count(t, "cpu_op", "aten::linear"), RECORDED);
	ASSERT_EQ(e2e_count(t, "cpu_op", "not this one"), 0);
	ASSERT_EQ(e2e_count(t, "user_annotation", "nccl:all_reduce"), RECORDED);
	/* begun in the step before the first recorded one: not the window's */
	ASSERT_EQ(e2e_count(t, "user_annotation", "across"), RECORDED - 1);
	/* optimizer.step's scope (the marker inside it counted at its end) has its GPU span */
	ASSERT_EQ(e2e_count(t, "user_annotation", "Optimizer.step#AdamW.step"), RECORDED);
	ASSERT_EQ(e2e_count(t, "gpu_user_annotation", "Optimizer.step#AdamW.step"), RECORDED);
	ASSERT_EQ(e2e_count(t, "gpu_user_annotation", "nccl:all_reduce"), 0);
	json_array_foreach(t->events, i, ev)
	{
		json_t *args = json_object_get(ev, "args");

		if (strcmp(trace_str(ev, "name"), "aten::linear"))
			continue;
		ASSERT_EQ(e2e_arg_int(ev, "Sequence number"), 32);
		ASSERT_EQ(json_array_size(json_object_get(args, "Input Dims")), 3);
		ASSERT(!json_object_get(args, "Ev Idx"));
	}
	e2e_free(&r);
}

/* ---- the summary's operator tables ---- */

struct op_inst {
	const char *name;
	long long tid, ts, end, child, gpu, external;
};

static int inst_order(const void *a, const void *b)
{
	const struct op_inst *x = a, *y = b;

	if (x->tid != y->tid)
		return x->tid < y->tid ? -1 : 1;
	if (x->ts != y->ts)
		return x->ts < y->ts ? -1 : 1;
	return (x->end < y->end) - (x->end > y->end);
}

static long long ns_at(const struct trace *t, const json_t *ev, const char *key)
{
	return (long long)(json_number_value(json_object_get(ev, key)) * 1000.0 + 0.5) +
	       json_integer_value(json_object_get(t->root, "baseTimeNanoseconds"));
}

/* The trace's operators (cpu_op, and user_annotation with a RecordFunction), with their GPU ns. */
static struct op_inst *trace_ops(const struct trace *t, size_t *n)
{
	struct op_inst *ops = calloc(json_array_size(t->events) + 1, sizeof(*ops));
	size_t i, k = 0, *stack, depth = 0;
	json_t *ev;

	ASSERT(ops);
	json_array_foreach(t->events, i, ev)
	{
		if (strcmp(trace_str(ev, "ph"), "X") ||
		    (strcmp(trace_str(ev, "cat"), "cpu_op") &&
		     !json_object_get(json_object_get(ev, "args"), "Record function id")))
			continue;
		ops[k++] = (struct op_inst){
		    .name = trace_str(ev, "name"),
		    .tid = json_integer_value(json_object_get(ev, "tid")),
		    .ts = ns_at(t, ev, "ts"),
		    .end =
			ns_at(t, ev, "ts") +
			(long long)(json_number_value(json_object_get(ev, "dur")) * 1000.0 + 0.5),
		    .external = e2e_arg_int(ev, "External id")};
	}
	json_array_foreach(t->events, i, ev)
	{
		const char *cat = trace_str(ev, "cat");
		long long id = e2e_arg_int(ev, "External id");

		if (strcmp(cat, "kernel") && strcmp(cat, "gpu_memcpy") && strcmp(cat, "gpu_memset"))
			continue;
		for (size_t j = 0; j < k && id > 0; j++)
			if (ops[j].external == id)
				ops[j].gpu +=
				    (long long)(json_number_value(json_object_get(ev, "dur")) *
						    1000.0 +
						0.5);
	}
	qsort(ops, k, sizeof(*ops), inst_order);
	stack = calloc(k + 1, sizeof(*stack));
	ASSERT(stack);
	for (i = 0; i < k; i++) {
		while (depth && (ops[stack[depth - 1]].tid != ops[i].tid ||
				 ops[stack[depth - 1]].end < ops[i].end))
			depth--;
		if (depth)
			ops[stack[depth - 1]].child += ops[i].end - ops[i].ts;
		stack[depth++] = i;
	}
	free(stack);
	*n = k;
	return ops;
}

/* calls, GPU, self and total ns of the operators named `name`. */
static void name_totals(const struct op_inst *ops, size_t n, const char *name, long long out[4])
{
	memset(out, 0, 4 * sizeof(out[0]));
	for (size_t i = 0; i < n; i++) {
		long long dur = ops[i].end - ops[i].ts;

		if (strcmp(ops[i].name, name))
			continue;
		out[0]++;
		out[1] += ops[i].gpu;
		out[2] += dur - (ops[i].child < dur ? ops[i].child : dur);
		out[3] += dur;
	}
}

/*
 * The table under "operators by <what>:" in text: each row's figures are those of its name in
 * the trace, rows in order of figure `by` (1 GPU, 2 self CPU), none left out larger than the
 * last shown; M of "top N of M" is the number of names. Returns the table's text.
 */
static char *check_op_table(const char *text, const char *what, int by, const struct op_inst *ops,
			    size_t n_ops)
{
	const char *at = strstr(text, what), *head, *line;
	size_t top, names;
	long long last = -1, f[4];
	char *table;

	ASSERT_MSG(at, "no table of operators by %s in:\n%s", what, text);
	for (head = at; head > text && head[-1] != '\n'; head--)
		;
	ASSERT_EQ(sscanf(head, "gprof: top %zu of %zu", &top, &names), 2);
	for (size_t i = 0; i < n_ops; i++) {
		bool first = true;

		for (size_t j = 0; j < i && first; j++)
			first = strcmp(ops[j].name, ops[i].name) != 0;
		names -= first;
	}
	ASSERT_EQ(names, 0);
	line = strchr(strchr(at, '\n') + 1, '\n') + 1; /* past the column heads */
	for (size_t r = 0; r < top; r++) {
		char name[256], want[3][32];
		unsigned long long calls;
		int off = 0;
		size_t len = strcspn(line, "\n");

		ASSERT_EQ(sscanf(line, "gprof: %llu %*s %*s %*s %*s %*s %*s %n", &calls, &off), 1);
		snprintf(name, sizeof(name), "%.*s", (int)(len - (size_t)off), line + off);
		name_totals(ops, n_ops, name, f);
		ASSERT_MSG(f[0] == (long long)calls, "%s: %llu calls, %lld in the trace", name,
			   calls, f[0]);
		for (int k = 0; k < 3; k++)
			gprof_summary_fmt_time(want[k], (uint64_t)f[k + 1]);
		ASSERT_MSG(strstr(line, want[0]) && strstr(line, want[1]) && strstr(line, want[2]),
			   "%.*s: want %s %s %s", (int)len, line, want[0], want[1], want[2]);
		ASSERT_MSG(last < 0 || f[by] <= last, "%.*s out of order", (int)len, line);
		last = f[by];
		line += len + 1;
	}
	/* nothing left out is larger than the last row shown */
	table = strndup(head, (size_t)(line - head));
	ASSERT(table);
	for (size_t i = 0; i < n_ops; i++) {
		char row_end[300];

		snprintf(row_end, sizeof(row_end), "  %s\n", ops[i].name);
		name_totals(ops, n_ops, ops[i].name, f);
		ASSERT_MSG(f[by] <= last || strstr(table, row_end), "%s (%lld) is not shown",
			   ops[i].name, f[by]);
	}
	return table;
}

/*
 * The end-of-window summary tabulates operators as key_averages does: calls, the GPU time of
 * the work tied to them, self and total CPU time, by GPU time and by self CPU time, the trace's
 * figures; gprof-summary prints the same tables from the file.
 */
TEST(summary_torch_operators)
{
	const char *tool[] = {proc_build_path("gprof-summary"), NULL, NULL};
	const char *no_preload[] = {"LD_PRELOAD", NULL};
	struct proc_result res = {0};
	struct op_inst *ops;
	struct e2e_run r;
	char *a, *b, *c, *d, path[PATH_MAX * 2];
	size_t n;

	run_replay(&r, NULL);
	ops = trace_ops(&r.traces[0], &n);
	ASSERT_GT(n, 0);
	a = check_op_table(r.res.err, "operators by GPU time of their work:", 1, ops, n);
	b = check_op_table(r.res.err, "operators by self CPU time:", 2, ops, n);
	snprintf(path, sizeof(path), "%s/%s", r.dir, trace_str(r.traces[0].root, "traceName"));
	tool[1] = path;
	ASSERT_EQ(proc_run(tool, no_preload, 120, &res), 0);
	c = check_op_table(res.out, "operators by GPU time of their work:", 1, ops, n);
	d = check_op_table(res.out, "operators by self CPU time:", 2, ops, n);
	ASSERT_STR_EQ(a, c);
	ASSERT_STR_EQ(b, d);
	free(a);
	free(b);
	free(c);
	free(d);
	free(ops);
	proc_result_free(&res);
	e2e_free(&r);
}
