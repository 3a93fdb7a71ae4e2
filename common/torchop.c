/* Parsing PyTorch's NVTX operator ranges (common/torchop.h). */
#include <string.h>

#include "common/torchop.h"

#define OP_ID	       ", op_id = "
#define SEQ	       ", seq = "
#define SIZES	       ", sizes = "
#define INPUT_IDS      ", input_op_ids = "
#define BACKWARD       "autograd::engine::evaluate_function: "
#define MODULE	       "nn.Module: "
#define DIMS_MAX_DEPTH 8

static bool starts(const char *p, const char *end, const char *lit)
{
	size_t n = strlen(lit);

	return (size_t)(end - p) >= n && !memcmp(p, lit, n);
}

/* Decimal digits at *p (at least one): their value, and *p moved past them. */
static bool number(const char **p, const char *end, uint64_t *v)
{
	const char *q = *p;

	*v = 0;
	for (; q < end && *q >= '0' && *q <= '9' && q - *p < 19; q++)
		*v = *v * 10 + (uint64_t)(*q - '0');
	if (q == *p || (q < end && *q >= '0' && *q <= '9'))
		return false;
	*p = q;
	return true;
}

/* The end of the list at p, as shapesToStr writes it ("[]", "[2, 3]", "[[1], []]"), or NULL. */
static const char *dims_end(const char *p, const char *end, int depth)
{
	uint64_t v;

	if (p == end || *p != '[' || depth > DIMS_MAX_DEPTH)
		return NULL;
	if (++p < end && *p == ']')
		return p + 1;
	for (;;) {
		if (p < end && *p == '[') {
			p = dims_end(p, end, depth + 1);
		} else {
			if (p < end && *p == '-')
				p++;
			if (!number(&p, end, &v))
				return NULL;
		}
		if (!p || p == end)
			return NULL;
		if (*p == ']')
			return p + 1;
		if (!starts(p, end, ", "))
			return NULL;
		p += 2;
	}
}

/* The ", op_id = N" that ends the name: followed by the end, the sizes or the input ids. */
static const char *find_op_id(const char *s, const char *end, uint64_t *id, const char **tail)
{
	for (const char *p = s; p < end; p++) {
		const char *q = p + strlen(OP_ID);

		if (starts(p, end, OP_ID) && number(&q, end, id) &&
		    (q == end || starts(q, end, SIZES) || starts(q, end, INPUT_IDS))) {
			*tail = q;
			return p;
		}
	}
	return NULL;
}

bool gprof_torch_op_parse(const char *msg, size_t len, struct gprof_torch_op *op)
{
	const char *end = msg + len, *tail, *name_end = find_op_id(msg, end, &op->rf_id, &tail);
	uint64_t seq;

	if (!name_end || name_end == msg)
		return false;
	op->seq = -1;
	/* ", seq = N" just before: the last ", seq = " of the name, digits to its end */
	for (const char *p = name_end; p > msg; p--) {
		const char *q = p + strlen(SEQ);

		if (starts(p, name_end, SEQ)) {
			if (number(&q, name_end, &seq) && q == name_end) {
				op->seq = (int64_t)seq;
				name_end = p;
			}
			break;
		}
	}
	op->name_len = (size_t)(name_end - msg);
	op->dims = NULL;
	op->dims_len = 0;
	if (starts(tail, end, SIZES)) {
		const char *d = tail + strlen(SIZES), *e = dims_end(d, end, 0);

		/* a message cut at NVTX's length limit leaves no valid list: no sizes then */
		if (e && (e == end || starts(e, end, INPUT_IDS))) {
			op->dims = d;
			op->dims_len = (size_t)(e - d);
		}
	}
	return op->name_len > 0;
}

bool gprof_torch_op_collective(const char *name, size_t len)
{
	return starts(name, name + len, "nccl:") || starts(name, name + len, "gloo:");
}

bool gprof_torch_op_user_scope(const char *name, size_t len)
{
	const char *hash = memchr(name, '#', len);

	if (gprof_torch_op_collective(name, len))
		return true;

	for (size_t i = 0; hash && i + 1 < len; i++)
		if (name[i] == ':' && name[i + 1] == ':')
			return false;
	return hash != NULL;
}

bool gprof_torch_module(const char *msg, size_t len, struct gprof_torch_op *op)
{
	const char *end = msg + len, *p = end;
	uint64_t index;

	if (!starts(msg, end, MODULE))
		return false;
	while (p > msg && p[-1] >= '0' && p[-1] <= '9')
		p--;
	/* a class name, '_', the index */
	if (p == end || p[-1] != '_' || p - 1 == msg + strlen(MODULE) || !number(&p, end, &index))
		return false;
	*op = (struct gprof_torch_op){.name_len = len, .seq = -1, .rf_id = index};
	return true;
}

bool gprof_torch_op_backward_wrapper(const char *name, size_t len)
{
	return starts(name, name + len, BACKWARD);
}
