/*
 * A simulated libnccl.so.2: NCCL's host API with no communication. Each collective (and each
 * send or receive) launches one kernel through the CUDA runtime on the caller's stream, named
 * as NCCL's are (ncclDevKernel_AllReduce_RING_LL), so the simulated GPU's ground-truth log
 * holds it. Ranks never wait for each other; a group only counts its depth (work launches at
 * the call, not at ncclGroupEnd). Errors: a NULL comm is ncclInvalidArgument, as in NCCL.
 *
 * With FAKEGPU_LOG set, each call appends a line of its own to the simulated GPU's ground-truth
 * log: {"type":"nccl", "pid", "tid", "name", "count", "datatype" (ncclDataType_t), "start",
 * "end" (CLOCK_REALTIME ns around the call's work, its launch included), "result"}.
 */
#include <fcntl.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

#define API __attribute__((visibility("default")))

struct ncclComm {
	int nranks, rank;
};

/*
 * Kernel host stubs, exported: the runtime names a kernel it was not told about by its
 * symbol. Distinct bodies keep the linker from folding them into one address.
 */
static volatile int stub_calls;

#define STUB(name, k)              \
	API void name(void);       \
	void name(void)            \
	{                          \
		stub_calls += (k); \
	}
STUB(ncclDevKernel_AllReduce_RING_LL, 1)
STUB(ncclDevKernel_Broadcast_RING_LL, 2)
STUB(ncclDevKernel_Reduce_RING_LL, 3)
STUB(ncclDevKernel_AllGather_RING_LL, 4)
STUB(ncclDevKernel_ReduceScatter_RING_LL, 5)
STUB(ncclDevKernel_SendRecv, 6)

static __thread int group_depth;

static uint64_t now_ns(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return (uint64_t)ts.tv_sec * 1000000000u + (uint64_t)ts.tv_nsec;
}

/* The call's ground-truth line, one write(2) on an O_APPEND file, as gtlog.c writes. */
static void log_call(const char *name, size_t count, ncclDataType_t type, uint64_t start,
		     uint64_t end, ncclResult_t result)
{
	const char *path = getenv("FAKEGPU_LOG");
	char line[512];
	int fd, n;

	if (!path || !*path ||
	    (fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644)) < 0)
		return;
	n = snprintf(line, sizeof(line),
		     "{\"type\":\"nccl\",\"pid\":%d,\"tid\":%ld,\"name\":\"%s\",\"count\":%zu,"
		     "\"datatype\":%d,\"start\":%llu,\"end\":%llu,\"result\":%d}\n",
		     (int)getpid(), (long)syscall(SYS_gettid), name, count, (int)type,
		     (unsigned long long)start, (unsigned long long)end, (int)result);
	if (n > 0 && (size_t)n < sizeof(line) && write(fd, line, (size_t)n) < 0)
		n = 0;
	close(fd);
}

static ncclResult_t launch(const char *name, void (*stub)(void), size_t count, ncclComm_t comm,
			   ncclDataType_t type, cudaStream_t stream)
{
	dim3 grid = {2, 1, 1}, block = {512, 1, 1};
	void *args[] = {&comm};
	uint64_t start = now_ns();
	ncclResult_t r;

	if (!comm || (unsigned)type >= ncclNumTypes)
		r = ncclInvalidArgument;
	else if (cudaLaunchKernel((const void *)stub, grid, block, args, 0, stream) != cudaSuccess)
		r = ncclUnhandledCudaError;
	else
		r = ncclSuccess;
	log_call(name, count, type, start, now_ns(), r);
	return r;
}

API ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return ncclInvalidArgument;
	*version = 22703;
	return ncclSuccess;
}

API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	if (!id)
		return ncclInvalidArgument;
	memset(id, 0, sizeof(*id));
	return ncclSuccess;
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	(void)id;
	if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	*comm = malloc(sizeof(**comm));
	if (!*comm)
		return ncclSystemError;
	(*comm)->nranks = nranks;
	(*comm)->rank = rank;
	return ncclSuccess;
}

API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	free(comm);
	return ncclSuccess;
}

API ncclResult_t ncclCommCount(const ncclComm_t comm, int *count)
{
	if (!comm || !count)
		return ncclInvalidArgument;
	*count = comm->nranks;
	return ncclSuccess;
}

API ncclResult_t ncclCommUserRank(const ncclComm_t comm, int *rank)
{
	if (!comm || !rank)
		return ncclInvalidArgument;
	*rank = comm->rank;
	return ncclSuccess;
}

API const char *ncclGetErrorString(ncclResult_t result)
{
	return result == ncclSuccess ? "no error" : "simulated NCCL error";
}

API ncclResult_t ncclAllReduce(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
			       cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)op;
	return launch("ncclAllReduce", ncclDevKernel_AllReduce_RING_LL, count, comm, datatype,
		      stream);
}

API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)root;
	return launch("ncclBroadcast", ncclDevKernel_Broadcast_RING_LL, count, comm, datatype,
		      stream);
}

API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			    cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)op, (void)root;
	return launch("ncclReduce", ncclDevKernel_Reduce_RING_LL, count, comm, datatype, stream);
}

API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff;
	return launch("ncclAllGather", ncclDevKernel_AllGather_RING_LL, sendcount, comm, datatype,
		      stream);
}

API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				   cudaStream_t stream)
{
	(void)sendbuff, (void)recvbuff, (void)op;
	return launch("ncclReduceScatter", ncclDevKernel_ReduceScatter_RING_LL, recvcount, comm,
		      datatype, stream);
}

API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
			  ncclComm_t comm, cudaStream_t stream)
{
	(void)sendbuff, (void)peer;
	return launch("ncclSend", ncclDevKernel_SendRecv, count, comm, datatype, stream);
}

API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
			  ncclComm_t comm, cudaStream_t stream)
{
	(void)recvbuff, (void)peer;
	return launch("ncclRecv", ncclDevKernel_SendRecv, count, comm, datatype, stream);
}

API ncclResult_t ncclGroupStart(void)
{
	group_depth++;
	return ncclSuccess;
}

API ncclResult_t ncclGroupEnd(void)
{
	if (!group_depth)
		return ncclInvalidUsage;
	group_depth--;
	return ncclSuccess;
}
