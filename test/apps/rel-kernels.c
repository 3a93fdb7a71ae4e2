/*
 * Kernels with hostile names for the reliability tests. The simulated runtime names a kernel by
 * the string given to __cudaRegisterFunction; this program registers six and launches each twice
 * (grid 1, block 32, on the legacy stream), then synchronises and exits 0:
 *
 *	0: 'k' x 65535                          (64 KiB, not mangled)
 *	1: "_Z65530" 'a' x 65530 "v"            (a valid mangled name of 64 KiB)
 *	2: "_Z1f" 'P' x 65000 "i"               (65000 levels of pointer: f(int**...*))
 *	3: quotes, backslashes, control bytes and invalid UTF-8, repeated to 65535 bytes
 *	4: "_Z1f" 'P' x 1000 "i"                (demangles to f(int, 1000 '*'))
 *	5: "_Z4reluPfi"
 *
 * Before launching it prints "K <n> b:<hex of the name>" for each, then "rel-kernels: ok".
 * It links the C++ runtime so that libgprof's demangler (__cxa_demangle) is there. The names
 * are never freed: the runtime keeps pointers to them, as it does to nvcc's string literals.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <cuda_runtime_api.h>
#include "fatbin.h"

#define KERNELS	       6
#define NAME_MAX_BYTES 65536

static volatile int stub_calls;

/* Distinct bodies keep the stubs at distinct addresses. */
#define STUB(n)                        \
	static void stub##n(void)      \
	{                              \
		stub_calls += (n) + 1; \
	}
STUB(0)
STUB(1)
STUB(2)
STUB(3)
STUB(4)
STUB(5)

static void (*const stubs[KERNELS])(void) = {stub0, stub1, stub2, stub3, stub4, stub5};

/* Global, so that leak checkers still find the names at exit (the runtime points to them). */
char *names[KERNELS];

/* prefix, `count` copies of `fill` (a string), suffix. */
static char *make_name(const char *prefix, const char *fill, size_t count, const char *suffix)
{
	char *s = malloc(NAME_MAX_BYTES);
	size_t n = strlen(prefix), f = strlen(fill);

	if (!s)
		exit(3);
	memcpy(s, prefix, n);
	for (size_t i = 0; i < count && n + f + strlen(suffix) < NAME_MAX_BYTES; i++, n += f)
		memcpy(s + n, fill, f);
	strcpy(s + n, suffix);
	return s;
}

static void print_name(int k, const char *name)
{
	printf("K %d b:", k);
	for (const char *p = name; *p; p++)
		printf("%02x", (unsigned char)*p);
	printf("\n");
}

int main(void)
{
	static const char hostile[] = "q\"b\\c\x01\x1f\x7f\n\t\x80\xc0\xaf\xed\xa0\x80\xff\xf0\x9f";
	static char fatbin[16];
	void **handle = __cudaRegisterFatBinary(fatbin);
	void *args[] = {NULL};

	names[0] = make_name("", "k", 65535, "");
	names[1] = make_name("_Z65530", "a", 65530, "v");
	names[2] = make_name("_Z1f", "P", 65000, "i");
	names[3] = make_name("", hostile, 65535, "");
	names[4] = make_name("_Z1f", "P", 1000, "i");
	names[5] = make_name("_Z4reluPfi", "", 0, "");
	for (int k = 0; k < KERNELS; k++) {
		print_name(k, names[k]);
		__cudaRegisterFunction(handle, (const char *)stubs[k], names[k], names[k], -1, NULL,
				       NULL, NULL, NULL, NULL);
	}
	__cudaRegisterFatBinaryEnd(handle);
	for (int i = 0; i < 2 * KERNELS; i++)
		if (cudaLaunchKernel((const void *)stubs[i % KERNELS], (dim3){1, 1, 1},
				     (dim3){32, 1, 1}, args, 0, NULL) != cudaSuccess) {
			fprintf(stderr, "rel-kernels: launch %d failed\n", i);
			return 2;
		}
	if (cudaDeviceSynchronize() != cudaSuccess)
		return 2;
	printf("rel-kernels: ok\n");
	return 0;
}
