/*
 * Simulated devices: how many (FAKEGPU_DEVICES), their primary contexts, the per-thread current
 * device, and driver initialisation, which loads CUDA_INJECTION64_PATH as the real driver does.
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>

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
