/*
 * PyTorch's operators as its profiler's NVTX mode names its ranges (torch.autograd.profiler
 * .emit_nvtx, or --torch's start-up hook around windows), one NVTX push per operator:
 * "<name>[, seq = <n>], op_id = <n>[, sizes = <dims>][, input_op_ids = <list>]".
 */
#ifndef GPROF_TORCHOP_H
#define GPROF_TORCHOP_H

#include <stdbool.h>
#include <stddef.h>
#include <stdint.h>

struct gprof_torch_op {
	size_t name_len;  /* the operator's name: the message's first name_len bytes */
	int64_t seq;	  /* autograd's sequence number; -1: none */
	uint64_t rf_id;	  /* op_id, the RecordFunction's handle */
	const char *dims; /* input sizes, "[[2, 3], []]", a valid JSON array; NULL: none */
	size_t dims_len;
};

/* Whether msg (len bytes, not NUL-terminated) names an operator; fills op when it does. */
bool gprof_torch_op_parse(const char *msg, size_t len, struct gprof_torch_op *op);

/*
 * Whether torch.profiler writes the range as user_annotation rather than cpu_op: the names
 * PyTorch gives its own record_function scopes, "Optimizer.step#AdamW.step",
 * "enumerate(DataLoader)#_SingleProcessDataLoaderIter.__next__", and its process groups'
 * collectives, "nccl:all_reduce", "gloo:broadcast" (NVTX carries no scope).
 */
bool gprof_torch_op_user_scope(const char *name, size_t len);
/*
 * Whether it is a process group's collective ("nccl:all_reduce"): a user scope whose span on
 * the GPU's streams is not written (TensorBoard's distributed view would take it, by its
 * External id, for the collective itself, without its sizes).
 */
bool gprof_torch_op_collective(const char *name, size_t len);

/*
 * Whether msg names a module's forward as PyTorch's profiler does, "nn.Module: Linear_0"
 * (--torch's hook pushes one around each): then op->name_len is the whole message and
 * op->rf_id the module's number among those of its class (the trailing digits).
 */
bool gprof_torch_module(const char *msg, size_t len, struct gprof_torch_op *op);

/* Whether the range is the autograd engine's wrapper of a backward node. */
bool gprof_torch_op_backward_wrapper(const char *name, size_t len);

#endif
