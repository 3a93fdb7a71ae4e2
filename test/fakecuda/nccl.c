/*
 * A simulated libnccl.so.2: NCCL's host API with no communication, wide enough for PyTorch's
 * ProcessGroupNCCL (every function its libtorch_cuda.so imports is here). Each collective (and
 * each send or receive) launches one kernel on the caller's stream, named as NCCL's are
 * (ncclDevKernel_AllReduce_RING_LL), through the driver as NCCL does (cuLaunchKernel, from a
 * PTX module that declares them), so the simulated GPU's ground-truth log holds it and the
 * process keeps its own CUDA runtime: this library links none (a PyTorch process has NVIDIA's,
 * a test program may have ours; both go to the same simulated driver). Ranks never wait for
 * each other's kernels; a group only counts its depth (work launches at the call, not at
 * ncclGroupEnd). The bytes do move, at the call (as the simulated GPU's copies move theirs):
 * ranks of a communicator made from one ncclGetUniqueId meet in a folder of that id (in
 * /dev/shm, else TMPDIR), where each call of a collective leaves the rank's buffer in a file
 * and reads the others' (so that PyTorch's checks across ranks see what the other ranks sent:
 * DDP compares the ranks' parameters); a send leaves a file its receive takes. An id of zeros,
 * which NCCL never gives, makes ranks that never meet (test programs that run one rank at a
 * time): their collectives move nothing. A rank that waits more than 120 s for another fails
 * the call with ncclSystemError and one line.
 * A split communicator keeps its parent's ranks (no rank can learn the others' colours); what
 * needs more than one process's say (shrinking, symmetric windows, device communicators) is
 * ncclInvalidUsage. Errors: a NULL comm is ncclInvalidArgument, as in NCCL.
 *
 * With FAKEGPU_LOG set, each call appends a line of its own to the simulated GPU's ground-truth
 * log: {"type":"nccl", "pid", "tid", "name", "count", "datatype" (ncclDataType_t), "start",
 * "end" (CLOCK_REALTIME ns around the call's work, its launch included), "result"}.
 */
#include <cuda.h>
#include <dirent.h>
#include <dlfcn.h>
#include <errno.h>
#include <fcntl.h>
#include <pthread.h>
#include <stdbool.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include "nccl.h"

#define API __attribute__((visibility("default")))

/* NCCL 2.28.9, as PyTorch's wheel carries it. */
#define NCCL_VERSION_CODE 22809

struct ncclComm {
	int nranks, rank;
	char dir[160];		/* where the ranks meet; "" for an id of zeros */
	uint64_t seq;		/* collectives called so far */
	uint64_t *sent, *recvd; /* per peer: sends and receives so far */
};

/* The kernels, one per collective, declared in PTX that the driver loads as a module. */
#define KERNELS(X)                                               \
	X(ALL_REDUCE, "ncclDevKernel_AllReduce_RING_LL")         \
	X(BROADCAST, "ncclDevKernel_Broadcast_RING_LL")          \
	X(REDUCE, "ncclDevKernel_Reduce_RING_LL")                \
	X(ALL_GATHER, "ncclDevKernel_AllGather_RING_LL")         \
	X(REDUCE_SCATTER, "ncclDevKernel_ReduceScatter_RING_LL") \
	X(SEND_RECV, "ncclDevKernel_SendRecv")

enum kernel {
#define ENUM(k, name) K_##k,
	KERNELS(ENUM)
#undef ENUM
	N_KERNELS
};

static const char *const kernel_names[] = {
#define NAME(k, name) name,
    KERNELS(NAME)
#undef NAME
};

static const char ptx[] = ".version 8.0\n.target sm_90\n.address_size 64\n"
#define ENTRY(k, name) ".visible .entry " name "(.param .u64 comm)\n{\n\tret;\n}\n"
    KERNELS(ENTRY)
#undef ENTRY
    ;

#define MAX_DEVICES 16

/*
 * The driver's entry points (libcuda.so.1 of the process, the simulated one), found once, and
 * each device's module and kernels, loaded on first use with the device's context current.
 */
static struct {
	CUresult (*ctx_device)(CUdevice *);
	CUresult (*load)(CUmodule *, const void *);
	CUresult (*function)(CUfunction *, CUmodule, const char *);
	CUresult (*launch)(CUfunction, unsigned, unsigned, unsigned, unsigned, unsigned, unsigned,
			   unsigned, CUstream, void **, void **);
	CUresult (*alloc)(CUdeviceptr *, size_t);
	CUresult (*free)(CUdeviceptr);
	CUfunction kernels[MAX_DEVICES][N_KERNELS];
} drv;
static pthread_once_t drv_once = PTHREAD_ONCE_INIT;
static pthread_mutex_t drv_lock = PTHREAD_MUTEX_INITIALIZER;

static void drv_find(void)
{
	void *cuda = dlopen("libcuda.so.1", RTLD_NOW | RTLD_GLOBAL);

	if (!cuda)
		return;
	*(void **)&drv.ctx_device = dlsym(cuda, "cuCtxGetDevice");
	*(void **)&drv.load = dlsym(cuda, "cuModuleLoadData");
	*(void **)&drv.function = dlsym(cuda, "cuModuleGetFunction");
	*(void **)&drv.launch = dlsym(cuda, "cuLaunchKernel");
	*(void **)&drv.alloc = dlsym(cuda, "cuMemAlloc_v2");
	*(void **)&drv.free = dlsym(cuda, "cuMemFree_v2");
}

static bool drv_ready(void)
{
	pthread_once(&drv_once, drv_find);
	return drv.ctx_device && drv.load && drv.function && drv.launch && drv.alloc && drv.free;
}

/* The kernel on the calling thread's current device; NULL if the driver cannot give it. */
static CUfunction kernel(enum kernel k)
{
	CUfunction f = NULL;
	CUmodule module;
	CUdevice dev;

	if (!drv_ready() || drv.ctx_device(&dev) || dev < 0 || dev >= MAX_DEVICES)
		return NULL;
	pthread_mutex_lock(&drv_lock);
	if (!drv.kernels[dev][k] && !drv.load(&module, ptx))
		for (int i = 0; i < N_KERNELS; i++)
			drv.function(&drv.kernels[dev][i], module, kernel_names[i]);
	f = drv.kernels[dev][k];
	pthread_mutex_unlock(&drv_lock);
	return f;
}

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

/* The call's kernel on its stream, once its bytes moved (moved: how that went). */
static ncclResult_t launch(const char *name, enum kernel k, size_t count, ncclComm_t comm,
			   ncclDataType_t type, cudaStream_t stream, ncclResult_t moved,
			   uint64_t start)
{
	void *args[] = {&comm};
	CUfunction f = comm && (unsigned)type < ncclNumTypes && !moved ? kernel(k) : NULL;
	ncclResult_t r;

	if (!comm || (unsigned)type >= ncclNumTypes)
		r = ncclInvalidArgument;
	else if (moved)
		r = moved;
	else if (!f || drv.launch(f, 2, 1, 1, 512, 1, 1, 0, (CUstream)stream, args, NULL))
		r = ncclUnhandledCudaError;
	else
		r = ncclSuccess;
	log_call(name, count, type, start, now_ns(), r);
	return r;
}

/* ---- the bytes: files in the folder the ranks share ---- */

#define WAIT_NS (120ull * 1000000000u)

static size_t type_size(ncclDataType_t t)
{
	static const unsigned char sizes[ncclNumTypes] = {1, 1, 4, 4, 8, 8, 2, 4, 8, 2, 1, 1};

	return (unsigned)t < ncclNumTypes ? sizes[t] : 0;
}

static int io_all(int fd, void *buf, size_t bytes, bool out)
{
	for (size_t done = 0; done < bytes;) {
		ssize_t n = out ? write(fd, (const char *)buf + done, bytes - done)
				: read(fd, (char *)buf + done, bytes - done);

		if (n <= 0)
			return -1;
		done += (size_t)n;
	}
	return 0;
}

static void path_of(const struct ncclComm *c, char *out, size_t len, const char *what,
		    unsigned long long n, int from, int to)
{
	snprintf(out, len, "%s/%s%llu.%d.%d", c->dir, what, n, from, to);
}

/* Leaves `bytes` at src as the file `path`, whole or not at all (written aside, renamed). */
static int put_file(const struct ncclComm *c, const char *path, const void *src, size_t bytes)
{
	char part[224];
	int fd, err;

	snprintf(part, sizeof(part), "%s/.part.%d", c->dir, c->rank);
	fd = open(part, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0600);
	if (fd < 0)
		return -1;
	err = io_all(fd, (void *)(uintptr_t)src, bytes, true);
	close(fd);
	return err || rename(part, path) ? -1 : 0;
}

/* The file `path` once it is there: its first `bytes` into dst; -1 after WAIT_NS, said. */
static int take_file(const char *path, void *dst, size_t bytes)
{
	const struct timespec pause = {0, 100000};
	uint64_t until = now_ns() + WAIT_NS;
	int fd, err;

	while ((fd = open(path, O_RDONLY | O_CLOEXEC)) < 0) {
		if (now_ns() > until) {
			fprintf(stderr, "fakenccl: waited 120 s for %s: the call fails\n", path);
			return -1;
		}
		nanosleep(&pause, NULL);
	}
	err = io_all(fd, dst, bytes, false);
	close(fd);
	return err;
}

/*
 * Collective number c->seq, a meeting of every rank: this rank leaves its `out` bytes at src,
 * waits for every rank's file, and returns (malloc'd) the `in` bytes of each rank (all: nranks
 * of them) or of rank `only`. Its file of two calls ago goes: every rank has read it, since
 * every rank left its file of the last call once done with the one before. NULL: it failed.
 */
static uint8_t *meet(struct ncclComm *c, const void *src, size_t out, size_t in, int only)
{
	unsigned long long n = c->seq++;
	uint8_t *got = malloc(in * (size_t)(only < 0 ? c->nranks : 1) + 1);
	char path[224];
	int r;

	path_of(c, path, sizeof(path), "c", n, c->rank, 0);
	if (!got || put_file(c, path, src, out))
		goto fail;
	for (r = 0; r < c->nranks; r++) {
		bool mine = only < 0 || r == only;

		path_of(c, path, sizeof(path), "c", n, r, 0);
		if (take_file(path, got + (only < 0 ? (size_t)r * in : 0), mine ? in : 0))
			goto fail;
	}
	if (n >= 2) {
		path_of(c, path, sizeof(path), "c", n - 2, c->rank, 0);
		unlink(path);
	}
	return got;
fail:
	free(got);
	return NULL;
}

/* The element types that C has, as NCCL names them (uint8 and the 8-bit floats: bytes). */
#define C_TYPES(X)               \
	X(ncclInt8, int8_t)      \
	X(ncclInt32, int32_t)    \
	X(ncclUint32, uint32_t)  \
	X(ncclInt64, int64_t)    \
	X(ncclUint64, uint64_t)  \
	X(ncclFloat16, _Float16) \
	X(ncclFloat32, float)    \
	X(ncclFloat64, double)

static double get(ncclDataType_t t, const void *p, size_t i)
{
	uint32_t bits;
	float f;

	switch (t) {
#define GET(e, T) \
	case e:   \
		return (double)((const T *)p)[i];
		C_TYPES(GET)
#undef GET
	case ncclBfloat16: /* the high half of a float */
		bits = (uint32_t)((const uint16_t *)p)[i] << 16;
		memcpy(&f, &bits, sizeof(f));
		return f;
	default:
		return ((const uint8_t *)p)[i];
	}
}

static void set(ncclDataType_t t, void *p, size_t i, double v)
{
	float f = (float)v;
	uint32_t bits;

	switch (t) {
#define SET(e, T)                   \
	case e:                     \
		((T *)p)[i] = (T)v; \
		break;
		C_TYPES(SET)
#undef SET
	case ncclBfloat16:
		memcpy(&bits, &f, sizeof(bits));
		((uint16_t *)p)[i] = (uint16_t)(bits >> 16);
		break;
	default:
		((uint8_t *)p)[i] = (uint8_t)v;
	}
}

/* dst[i] = op over the ranks of their element first + i (each rank's part is `stride` bytes). */
static void reduce(void *dst, const uint8_t *all, size_t stride, size_t first, size_t count,
		   ncclDataType_t t, ncclRedOp_t op, int nranks)
{
	for (size_t i = 0; i < count; i++) {
		double acc = get(t, all, first + i);

		for (int r = 1; r < nranks; r++) {
			double v = get(t, all + (size_t)r * stride, first + i);

			acc = op == ncclProd  ? acc * v
			      : op == ncclMax ? (v > acc ? v : acc)
			      : op == ncclMin ? (v < acc ? v : acc)
					      : acc + v;
		}
		set(t, dst, i, op == ncclAvg ? acc / nranks : acc);
	}
}

/* Whether the call moves bytes: ranks that meet, and a valid call. */
static bool moves(const struct ncclComm *c, ncclDataType_t type)
{
	return c && c->dir[0] && type_size(type);
}

/*
 * The bytes of a collective, moved before its kernel: what each rank gives (send) and takes
 * (recv), count elements (per rank for an all-gather, per peer for an all-to-all, of the result
 * for a reduce-scatter); root for a broadcast or reduce.
 */
static ncclResult_t move(struct ncclComm *c, enum kernel k, const void *send, void *recv,
			 size_t count, ncclDataType_t t, ncclRedOp_t op, int root)
{
	size_t n = c ? (size_t)c->nranks : 0, b = count * type_size(t);
	uint8_t *all;
	bool ok;

	if (!moves(c, t))
		return ncclSuccess;
	switch (k) {
	case K_ALL_REDUCE:
	case K_REDUCE:
		all = meet(c, send, b, b, -1);
		if (all && (k == K_ALL_REDUCE || c->rank == root))
			reduce(recv, all, b, 0, count, t, op, c->nranks);
		break;
	case K_BROADCAST:
		all = meet(c, send, c->rank == root ? b : 0, b, root);
		if (all)
			memcpy(recv, all, b);
		break;
	case K_ALL_GATHER:
		all = meet(c, send, b, b, -1);
		if (all)
			memcpy(recv, all, n * b);
		break;
	case K_REDUCE_SCATTER:
		all = meet(c, send, n * b, n * b, -1);
		if (all)
			reduce(recv, all, n * b, (size_t)c->rank * count, count, t, op, c->nranks);
		break;
	default: /* all-to-all: peer j's part for this rank goes to part j */
		all = meet(c, send, n * b, n * b, -1);
		for (size_t j = 0; all && j < n; j++)
			memcpy((uint8_t *)recv + j * b, all + j * n * b + (size_t)c->rank * b, b);
	}
	ok = all != NULL;
	free(all);
	return ok ? ncclSuccess : ncclSystemError;
}

/* A collective: its bytes moved, then its kernel launched. */
static ncclResult_t collective(const char *name, enum kernel k, const void *send, void *recv,
			       size_t count, ncclDataType_t t, ncclRedOp_t op, int root,
			       ncclComm_t comm, cudaStream_t stream)
{
	uint64_t start = now_ns();
	ncclResult_t moved = move(comm, k, send, recv, count, t, op, root);

	return launch(name, k, count, comm, t, stream, moved, start);
}

/* A send leaves a file of the bytes for its peer; a receive waits for it and takes it. */
static ncclResult_t point(struct ncclComm *c, bool out, void *buf, size_t count, ncclDataType_t t,
			  int peer)
{
	char path[224];
	size_t b = count * type_size(t);

	if (!moves(c, t))
		return ncclSuccess;
	if (peer < 0 || peer >= c->nranks)
		return ncclInvalidArgument;
	if (out) {
		path_of(c, path, sizeof(path), "p", (unsigned long long)c->sent[peer]++, c->rank,
			peer);
		return put_file(c, path, buf, b) ? ncclSystemError : ncclSuccess;
	}
	path_of(c, path, sizeof(path), "p", (unsigned long long)c->recvd[peer]++, peer, c->rank);
	if (take_file(path, buf, b))
		return ncclSystemError;
	unlink(path);
	return ncclSuccess;
}

API ncclResult_t ncclGetVersion(int *version)
{
	if (!version)
		return ncclInvalidArgument;
	*version = NCCL_VERSION_CODE;
	return ncclSuccess;
}

/* 16 bytes no other run has (the clock, the pid, a count), in the id's first bytes. */
API ncclResult_t ncclGetUniqueId(ncclUniqueId *id)
{
	static unsigned count;
	uint64_t made[2] = {now_ns(), (uint64_t)getpid() << 32 |
					  __atomic_add_fetch(&count, 1, __ATOMIC_RELAXED)};

	if (!id)
		return ncclInvalidArgument;
	memset(id, 0, sizeof(*id));
	memcpy(id->internal, made, sizeof(made));
	return ncclSuccess;
}

/* A rank of the communicator of `id`: its folder made when the id is not zeros. */
static ncclResult_t comm_new(ncclComm_t *comm, int nranks, int rank, const ncclUniqueId *id)
{
	static const char zeros[16];
	const char *base = access("/dev/shm", W_OK) ? getenv("TMPDIR") : "/dev/shm";
	ncclComm_t c;
	uint64_t key[2];

	if (!comm || nranks < 1 || rank < 0 || rank >= nranks)
		return ncclInvalidArgument;
	c = calloc(1, sizeof(*c));
	if (c && !(c->sent = calloc((size_t)nranks, sizeof(*c->sent))))
		free(c), c = NULL;
	if (c && !(c->recvd = calloc((size_t)nranks, sizeof(*c->recvd))))
		free(c->sent), free(c), c = NULL;
	if (!c)
		return ncclSystemError;
	c->nranks = nranks;
	c->rank = rank;
	if (id && memcmp(id->internal, zeros, sizeof(zeros))) {
		memcpy(key, id->internal, sizeof(key));
		snprintf(c->dir, sizeof(c->dir), "%s/fakenccl-%016llx%016llx",
			 base && *base ? base : "/tmp", (unsigned long long)key[0],
			 (unsigned long long)key[1]);
		if (mkdir(c->dir, 0700) && errno != EEXIST) {
			fprintf(stderr, "fakenccl: %s: %s\n", c->dir, strerror(errno));
			c->dir[0] = 0;
		}
	}
	*comm = c;
	return ncclSuccess;
}

API ncclResult_t ncclCommInitRank(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank)
{
	return comm_new(comm, nranks, rank, &id);
}

/*
 * A rank leaves: its files go, and the last rank to leave (every rank's "left" file is there)
 * takes the folder away.
 */
API ncclResult_t ncclCommDestroy(ncclComm_t comm)
{
	char path[224];
	int r, left = 0;

	if (!comm)
		return ncclInvalidArgument;
	if (comm->dir[0]) {
		path_of(comm, path, sizeof(path), "left", 0, comm->rank, 0);
		put_file(comm, path, "", 0);
		for (r = 0; r < comm->nranks; r++) {
			path_of(comm, path, sizeof(path), "left", 0, r, 0);
			left += !access(path, F_OK);
		}
		if (left == comm->nranks) {
			DIR *d = opendir(comm->dir);
			struct dirent *e;

			while (d && (e = readdir(d)))
				if (strcmp(e->d_name, ".") && strcmp(e->d_name, ".."))
					unlinkat(dirfd(d), e->d_name, 0);
			if (d)
				closedir(d);
			rmdir(comm->dir);
		}
	}
	free(comm->sent);
	free(comm->recvd);
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
	return collective("ncclAllReduce", K_ALL_REDUCE, sendbuff, recvbuff, count, datatype, op, 0,
			  comm, stream);
}

API ncclResult_t ncclBroadcast(const void *sendbuff, void *recvbuff, size_t count,
			       ncclDataType_t datatype, int root, ncclComm_t comm,
			       cudaStream_t stream)
{
	return collective("ncclBroadcast", K_BROADCAST, sendbuff, recvbuff, count, datatype,
			  ncclSum, root, comm, stream);
}

API ncclResult_t ncclReduce(const void *sendbuff, void *recvbuff, size_t count,
			    ncclDataType_t datatype, ncclRedOp_t op, int root, ncclComm_t comm,
			    cudaStream_t stream)
{
	return collective("ncclReduce", K_REDUCE, sendbuff, recvbuff, count, datatype, op, root,
			  comm, stream);
}

API ncclResult_t ncclAllGather(const void *sendbuff, void *recvbuff, size_t sendcount,
			       ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return collective("ncclAllGather", K_ALL_GATHER, sendbuff, recvbuff, sendcount, datatype,
			  ncclSum, 0, comm, stream);
}

API ncclResult_t ncclReduceScatter(const void *sendbuff, void *recvbuff, size_t recvcount,
				   ncclDataType_t datatype, ncclRedOp_t op, ncclComm_t comm,
				   cudaStream_t stream)
{
	return collective("ncclReduceScatter", K_REDUCE_SCATTER, sendbuff, recvbuff, recvcount,
			  datatype, op, 0, comm, stream);
}

API ncclResult_t ncclSend(const void *sendbuff, size_t count, ncclDataType_t datatype, int peer,
			  ncclComm_t comm, cudaStream_t stream)
{
	uint64_t start = now_ns();

	return launch("ncclSend", K_SEND_RECV, count, comm, datatype, stream,
		      point(comm, true, (void *)(uintptr_t)sendbuff, count, datatype, peer), start);
}

API ncclResult_t ncclRecv(void *recvbuff, size_t count, ncclDataType_t datatype, int peer,
			  ncclComm_t comm, cudaStream_t stream)
{
	uint64_t start = now_ns();

	return launch("ncclRecv", K_SEND_RECV, count, comm, datatype, stream,
		      point(comm, false, recvbuff, count, datatype, peer), start);
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

/* ---- the rest of what ProcessGroupNCCL imports ---- */

/* The configuration (ncclConfig_t: blocking or not, channels, ...) changes nothing here. */
API ncclResult_t ncclCommInitRankConfig(ncclComm_t *comm, int nranks, ncclUniqueId id, int rank,
					void *config)
{
	(void)config;
	return comm_new(comm, nranks, rank, &id);
}

API ncclResult_t ncclCommInitRankScalable(ncclComm_t *comm, int nranks, int rank, int nIds,
					  ncclUniqueId *ids, void *config)
{
	(void)config;
	return comm_new(comm, nranks, rank, nIds > 0 ? ids : NULL);
}

/* One process, ndev devices: comm i is rank i. */
API ncclResult_t ncclCommInitAll(ncclComm_t *comms, int ndev, const int *devlist)
{
	(void)devlist;
	for (int i = 0; comms && i < ndev; i++)
		if (comm_new(&comms[i], ndev, i, NULL))
			return ncclSystemError;
	return comms && ndev > 0 ? ncclSuccess : ncclInvalidArgument;
}

/* NCCL_SPLIT_NOCOLOR (-1): no communicator; else the parent's ranks (see the top). */
API ncclResult_t ncclCommSplit(ncclComm_t comm, int color, int key, ncclComm_t *newcomm,
			       void *config)
{
	(void)key, (void)config;
	if (!comm || !newcomm)
		return ncclInvalidArgument;
	if (color == -1) {
		*newcomm = NULL;
		return ncclSuccess;
	}
	return comm_new(newcomm, comm->nranks, comm->rank, NULL);
}

API ncclResult_t ncclCommShrink(ncclComm_t comm, int *excludeRanks, int excludeCount,
				ncclComm_t *newcomm, void *config, int flags)
{
	(void)comm, (void)excludeRanks, (void)excludeCount, (void)newcomm, (void)config,
	    (void)flags;
	return ncclInvalidUsage;
}

API ncclResult_t ncclCommFinalize(ncclComm_t comm)
{
	return comm ? ncclSuccess : ncclInvalidArgument;
}

API ncclResult_t ncclCommAbort(ncclComm_t comm)
{
	return ncclCommDestroy(comm);
}

/* No rank fails here: never an error of its own. */
API ncclResult_t ncclCommGetAsyncError(ncclComm_t comm, ncclResult_t *asyncError)
{
	if (!comm || !asyncError)
		return ncclInvalidArgument;
	*asyncError = ncclSuccess;
	return ncclSuccess;
}

API const char *ncclGetLastError(ncclComm_t comm)
{
	(void)comm;
	return "";
}

API ncclResult_t ncclBcast(void *buff, size_t count, ncclDataType_t datatype, int root,
			   ncclComm_t comm, cudaStream_t stream)
{
	return collective("ncclBcast", K_BROADCAST, buff, buff, count, datatype, ncclSum, root,
			  comm, stream);
}

API ncclResult_t ncclAlltoAll(const void *sendbuff, void *recvbuff, size_t count,
			      ncclDataType_t datatype, ncclComm_t comm, cudaStream_t stream)
{
	return collective("ncclAlltoAll", K_SEND_RECV, sendbuff, recvbuff, count, datatype, ncclSum,
			  0, comm, stream);
}

/* What a group would take to run, asked without running it: ends the group like ncclGroupEnd. */
API ncclResult_t ncclGroupSimulateEnd(void *simInfo)
{
	(void)simInfo;
	return ncclGroupEnd();
}

/* A custom reduction: the first id after NCCL's own ones. */
API ncclResult_t ncclRedOpCreatePreMulSum(ncclRedOp_t *op, void *scalar, ncclDataType_t datatype,
					  int residence, ncclComm_t comm)
{
	(void)scalar, (void)datatype, (void)residence;
	if (!op || !comm)
		return ncclInvalidArgument;
	*op = ncclNumOps;
	return ncclSuccess;
}

API ncclResult_t ncclRedOpDestroy(ncclRedOp_t op, ncclComm_t comm)
{
	(void)op;
	return comm ? ncclSuccess : ncclInvalidArgument;
}

/* Device memory for NCCL's buffers: an allocation of the driver's, as cuMemAlloc makes it. */
API ncclResult_t ncclMemAlloc(void **ptr, size_t size)
{
	CUdeviceptr p = 0;

	if (!ptr)
		return ncclInvalidArgument;
	if (!drv_ready() || drv.alloc(&p, size))
		return ncclUnhandledCudaError;
	*ptr = (void *)(uintptr_t)p;
	return ncclSuccess;
}

API ncclResult_t ncclMemFree(void *ptr)
{
	if (!drv_ready() || drv.free((CUdeviceptr)(uintptr_t)ptr))
		return ncclUnhandledCudaError;
	return ncclSuccess;
}

/* A registered buffer's handle is the buffer: nothing else is kept. */
API ncclResult_t ncclCommRegister(const ncclComm_t comm, void *buff, size_t size, void **handle)
{
	(void)size;
	if (!comm || !handle)
		return ncclInvalidArgument;
	*handle = buff;
	return ncclSuccess;
}

API ncclResult_t ncclCommDeregister(const ncclComm_t comm, void *handle)
{
	(void)handle;
	return comm ? ncclSuccess : ncclInvalidArgument;
}

/* What needs the other ranks' say: symmetric windows, device communicators. */
API ncclResult_t ncclCommWindowRegister(ncclComm_t comm, void *buff, size_t size, void **win,
					int winFlags)
{
	(void)comm, (void)buff, (void)size, (void)win, (void)winFlags;
	return ncclInvalidUsage;
}

API ncclResult_t ncclCommWindowDeregister(ncclComm_t comm, void *win)
{
	(void)comm, (void)win;
	return ncclInvalidUsage;
}

API ncclResult_t ncclDevCommCreate(ncclComm_t comm, const void *reqs, void *devComm)
{
	(void)comm, (void)reqs, (void)devComm;
	return ncclInvalidUsage;
}

API ncclResult_t ncclDevCommDestroy(ncclComm_t comm, const void *devComm)
{
	(void)comm, (void)devComm;
	return ncclInvalidUsage;
}
