/*
 * Loads local-plugin.so RTLD_LOCAL (the way Python loads extension modules) and runs it: the
 * plugin's CUDA runtime stays out of the global scope. Exits with the plugin's status.
 */
#include <dlfcn.h>
#include <stdio.h>
#include <string.h>

int main(int argc, char **argv)
{
	char path[4096];
	const char *slash = strrchr(argv[0], '/');
	int (*run)(void);
	void *h;

	(void)argc;
	snprintf(path, sizeof(path), "%.*slocal-plugin.so", slash ? (int)(slash - argv[0] + 1) : 0,
		 argv[0]);
	h = dlopen(path, RTLD_NOW | RTLD_LOCAL);
	if (!h) {
		fprintf(stderr, "local-app: %s\n", dlerror());
		return 2;
	}
	run = (int (*)(void))dlsym(h, "plugin_run");
	return run ? run() : 3;
}
