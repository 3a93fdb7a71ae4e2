/*
 * Simulated devices: how many (FAKEGPU_DEVICES), what each is (an H200's attributes, for both
 * runtimes' device properties), their primary contexts, the per-thread current device, and
 * driver initialisation, which loads CUDA_INJECTION64_PATH as the real driver does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/fakegpu.h"
#include "test/fakecuda/sim.h"

/* A primary context; CUcontext values point at one. */
struct fakecuda_context {
	int device;
	bool made; /* initialised: cuDevicePrimaryCtxRetain, or a runtime call that needs it */
};

/* Written once by init_once(); read by everyone after fakecuda_init(). */
static int n_devices = 1;
static struct fakecuda_context contexts[FAKECUDA_MAX_DEVICES];
static pthread_once_t init_control = PTHREAD_ONCE_INIT;
static bool initialised;

static __thread int current_device;

/* H200: 141 GiB of HBM3e as the real device reports it (143771 MiB). */
#define DEVICE_TOTAL_MEM (143771ull << 20)
#define KIB		 1024

/* The driver calls InitializeInjection() of the library named by CUDA_INJECTION64_PATH. */
static void load_injection(void)
{
	const char *path = getenv("CUDA_INJECTION64_PATH");
	int (*entry)(void);
	void *lib;

	if (!path || !*path)
		return;
	lib = dlopen(path, RTLD_NOW);
	if (!lib) {
		fprintf(stderr, "fakecuda: CUDA_INJECTION64_PATH: %s\n", dlerror());
		return;
	}
	*(void **)&entry = dlsym(lib, "InitializeInjection");
	if (entry)
		entry();
}

static void init_once(void)
{
	const char *env = getenv("FAKEGPU_DEVICES");

	if (env && *env)
		n_devices = atoi(env);
	if (n_devices < 1)
		n_devices = 1;
	if (n_devices > FAKECUDA_MAX_DEVICES)
		n_devices = FAKECUDA_MAX_DEVICES;
	for (int i = 0; i < FAKECUDA_MAX_DEVICES; i++)
		contexts[i].device = i;
	/*
	 * The rest of the FAKEGPU_* configuration too, now: a program may change its environment
	 * from another thread later (rel-own -e), and getenv is not safe against that.
	 */
	fakecuda_timeline_init();
	fakecuda_mem_init();
	__atomic_store_n(&initialised, true, __ATOMIC_RELEASE);
	load_injection();
}

void fakecuda_init(void)
{
	pthread_once(&init_control, init_once);
}

int fakecuda_device_count(void)
{
	fakecuda_init();
	return n_devices;
}

int fakecuda_device_current(void)
{
	fakecuda_init();
	return current_device;
}

int fakecuda_device_set(int device)
{
	if (device < 0 || device >= fakecuda_device_count())
		return -1;
	current_device = device;
	return 0;
}

void *fakecuda_context(int device)
{
	return &contexts[device];
}

void *fakecuda_context_current(void)
{
	if (!__atomic_load_n(&initialised, __ATOMIC_ACQUIRE))
		return NULL;
	return &contexts[current_device];
}

/*
 * The first time: CUPTI's resource callback CONTEXT_CREATED, on the calling thread inside the
 * call that made it, as a driver gives it.
 */
void fakecuda_context_make(int device)
{
	CUpti_ResourceData rd = {0};

	if (device < 0 || device >= fakecuda_device_count() ||
	    __atomic_exchange_n(&contexts[device].made, true, __ATOMIC_ACQ_REL))
		return;
	rd.context = (CUcontext)&contexts[device];
	fakegpu_callback(CUPTI_CB_DOMAIN_RESOURCE, CUPTI_CBID_RESOURCE_CONTEXT_CREATED, &rd);
}

bool fakecuda_context_made(int device)
{
	return __atomic_load_n(&contexts[device].made, __ATOMIC_ACQUIRE);
}

uint32_t fakecuda_context_id(int device)
{
	return (uint32_t)device + 1;
}

int fakecuda_context_device(const void *context)
{
	const struct fakecuda_context *c = context;

	if (c < contexts || c >= contexts + n_devices)
		return -1;
	return c->device;
}

uint64_t fakecuda_device_total_mem(int device)
{
	(void)device;
	return DEVICE_TOTAL_MEM;
}

int fakecuda_device_attribute(CUdevice_attribute attr, int device)
{
	switch (attr) {
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X:
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y:
		return 1024;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z:
		return 64;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X:
		return 0x7fffffff;
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y:
	case CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z:
		return 65535;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK:
		return 48 * KIB;
	case CU_DEVICE_ATTRIBUTE_TOTAL_CONSTANT_MEMORY:
		return 64 * KIB;
	case CU_DEVICE_ATTRIBUTE_WARP_SIZE:
		return 32;
	case CU_DEVICE_ATTRIBUTE_MAX_PITCH:
		return 0x7fffffff;
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_BLOCK:
	case CU_DEVICE_ATTRIBUTE_MAX_REGISTERS_PER_MULTIPROCESSOR:
		return 65536;
	case CU_DEVICE_ATTRIBUTE_CLOCK_RATE:
		return 1980000; /* kHz */
	case CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE:
		return 2619000;
	case CU_DEVICE_ATTRIBUTE_TEXTURE_ALIGNMENT:
		return 512;
	case CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT:
		return 132;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR:
	case CU_DEVICE_ATTRIBUTE_COMPUTE_MODE:
	case CU_DEVICE_ATTRIBUTE_INTEGRATED:
	case CU_DEVICE_ATTRIBUTE_KERNEL_EXEC_TIMEOUT:
	case CU_DEVICE_ATTRIBUTE_TCC_DRIVER:
	case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD:
	case CU_DEVICE_ATTRIBUTE_PCI_DOMAIN_ID:
	case CU_DEVICE_ATTRIBUTE_MPS_ENABLED:
		return 0;
	case CU_DEVICE_ATTRIBUTE_PCI_BUS_ID:
		return 0x19 + device;
	case CU_DEVICE_ATTRIBUTE_MULTI_GPU_BOARD_GROUP_ID:
		return device;
	case CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH:
		return 6144;
	case CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE:
		return 50 << 20;
	case CU_DEVICE_ATTRIBUTE_MAX_PERSISTING_L2_CACHE_SIZE:
		return 30 << 20;
	case CU_DEVICE_ATTRIBUTE_MAX_ACCESS_POLICY_WINDOW_SIZE:
		return 128 << 20;
	case CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_MULTIPROCESSOR:
		return 2048;
	case CU_DEVICE_ATTRIBUTE_ASYNC_ENGINE_COUNT:
		return 5;
	case CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR:
		return 9;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_MULTIPROCESSOR:
		return 228 * KIB;
	case CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN:
		return 227 * KIB;
	case CU_DEVICE_ATTRIBUTE_RESERVED_SHARED_MEMORY_PER_BLOCK:
		return 1 * KIB;
	case CU_DEVICE_ATTRIBUTE_MAX_BLOCKS_PER_MULTIPROCESSOR:
		return 32;
	case CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO:
		return 2;
	case CU_DEVICE_ATTRIBUTE_MEM_SYNC_DOMAIN_COUNT:
		return 4;
	case CU_DEVICE_ATTRIBUTE_NUMA_CONFIG:
	case CU_DEVICE_ATTRIBUTE_NUMA_ID:
	case CU_DEVICE_ATTRIBUTE_HOST_NUMA_ID:
		return -1;
	case CU_DEVICE_ATTRIBUTE_MEMPOOL_SUPPORTED_HANDLE_TYPES:
		return CU_MEM_HANDLE_TYPE_POSIX_FILE_DESCRIPTOR;
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_FLUSH_WRITES_OPTIONS:
	case CU_DEVICE_ATTRIBUTE_GPU_DIRECT_RDMA_WRITES_ORDERING:
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS:
	case CU_DEVICE_ATTRIBUTE_PAGEABLE_MEMORY_ACCESS_USES_HOST_PAGE_TABLES:
	case CU_DEVICE_ATTRIBUTE_DIRECT_MANAGED_MEM_ACCESS_FROM_HOST:
	case CU_DEVICE_ATTRIBUTE_HOST_NATIVE_ATOMIC_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_CAN_USE_HOST_POINTER_FOR_REGISTERED_MEM:
	case CU_DEVICE_ATTRIBUTE_D3D12_CIG_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_VULKAN_CIG_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_HANDLE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_HANDLE_TYPE_WIN32_KMT_HANDLE_SUPPORTED:
	case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_ALGORITHM_MASK:
	case CU_DEVICE_ATTRIBUTE_MEM_DECOMPRESS_MAXIMUM_LENGTH:
		return 0;
	case CU_DEVICE_ATTRIBUTE_PCI_DEVICE_ID:
		return 0;
	case CU_DEVICE_ATTRIBUTE_SURFACE_ALIGNMENT:
	case CU_DEVICE_ATTRIBUTE_TEXTURE_PITCH_ALIGNMENT:
		return 512;
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_WIDTH ... CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_ARRAY_NUMSLICES:
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_WIDTH ... CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_LAYERED_LAYERS:
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_GATHER_WIDTH ... CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE3D_DEPTH_ALTERNATE:
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURECUBEMAP_WIDTH ... CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE2D_MIPMAPPED_HEIGHT:
	case CU_DEVICE_ATTRIBUTE_MAXIMUM_TEXTURE1D_MIPMAPPED_WIDTH:
		return 32768; /* texture and surface sizes: none is used here */
	default:
		return 1; /* the rest are features an H200 has */
	}
}

void fakecuda_device_uuid(CUuuid *uuid, int device)
{
	memset(uuid->bytes, 0x40 + device, sizeof(uuid->bytes));
}
