/*
 * `rel-ctor`: its steps run on a thread that rel-ctor-lib.so's constructor started before
 * main; main waits for them and prints "rel-ctor: ok" (status 0), or fails with status 2.
 */
#include <stdio.h>

int rel_ctor_join(void);

int main(void)
{
	if (rel_ctor_join()) {
		fprintf(stderr, "rel-ctor: a CUDA call failed\n");
		return 2;
	}
	printf("rel-ctor: ok\n");
	return 0;
}
