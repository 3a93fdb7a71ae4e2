/* The loaded objects of dso.h, by dl_iterate_phdr(), and their symbols. */
#include <dlfcn.h>
#include <link.h>
#include <stdio.h>
#include <string.h>

#include "common/dso.h"

struct each {
	const char *prefix;
	int (*fn)(const char *path, void *arg);
	void *arg;
};

static int visit(struct dl_phdr_info *info, size_t size, void *arg)
{
	const struct each *e = arg;
	const char *base = strrchr(info->dlpi_name, '/');

	(void)size;
	base = base ? base + 1 : info->dlpi_name;
	if (strncmp(base, e->prefix, strlen(e->prefix)) != 0)
		return 0;
	return e->fn(info->dlpi_name, e->arg);
}

int gprof_dso_each(const char *prefix, int (*fn)(const char *path, void *arg), void *arg)
{
	struct each e = {.prefix = prefix, .fn = fn, .arg = arg};

	return dl_iterate_phdr(visit, &e);
}

struct found {
	char *out;
	size_t size;
};

static int take_first(const char *path, void *arg)
{
	const struct found *f = arg;

	snprintf(f->out, f->size, "%s", path);
	return 1;
}

bool gprof_dso_find(const char *prefix, char *out, size_t size)
{
	struct found f = {out, size};

	return gprof_dso_each(prefix, take_first, &f) != 0;
}

void *gprof_dso_sym(const char *name, const char *symbol)
{
	void *h = dlopen(name, RTLD_LAZY | RTLD_NOLOAD), *p;

	if (!h)
		return NULL;
	p = dlsym(h, symbol);
	dlclose(h);
	return p;
}
