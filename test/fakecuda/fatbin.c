/*
 * What the simulated driver reads of a loaded image: the size of a __device__ variable, from the
 * symbol table of a cubin (an ELF file) in it. An image is a fatbin (a header, then entries, each
 * a header and a cubin or PTX), the wrapper nvcc registers around one, or a bare cubin. A cubin
 * in a fatbin may be zstd-compressed (nvcc's and cuBLAS's are): libzstd, which every Debian
 * system has (dpkg needs it), is loaded to read it; without it such entries are passed over.
 */
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/driver.h"

#define FATBIN_MAGIC	     0xba55ed50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define ENTRY_CUBIN	     2
#define ZSTD_MAGIC	     "\x28\xb5\x2f\xfd"

struct fatbin_header {
	uint32_t magic;
	uint16_t version;
	uint16_t header_size;
	uint64_t body_size; /* the entries after the header */
};

struct entry_header {
	uint16_t kind;
	uint16_t version;
	uint32_t header_size;
	uint64_t payload_size; /* after the header */
};

/* The size of object `name` in the cubin at elf (len bytes), or 0 when it has none. */
static size_t cubin_symbol_size(const unsigned char *elf, size_t len, const char *name)
{
	const Elf64_Ehdr *eh = (const void *)elf;
	const Elf64_Shdr *sh;

	if (len < sizeof(*eh) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
	    eh->e_ident[EI_CLASS] != ELFCLASS64 || eh->e_shentsize != sizeof(*sh) ||
	    eh->e_shoff > len || (len - eh->e_shoff) / sizeof(*sh) < eh->e_shnum)
		return 0;
	sh = (const void *)(elf + eh->e_shoff);
	for (unsigned i = 0; i < eh->e_shnum; i++) {
		const Elf64_Shdr *str = &sh[sh[i].sh_link];

		if (sh[i].sh_type != SHT_SYMTAB || sh[i].sh_link >= eh->e_shnum ||
		    sh[i].sh_offset > len || sh[i].sh_size > len - sh[i].sh_offset ||
		    str->sh_offset > len || str->sh_size > len - str->sh_offset)
			continue;
		for (uint64_t s = 0; s + sizeof(Elf64_Sym) <= sh[i].sh_size;
		     s += sizeof(Elf64_Sym)) {
			const Elf64_Sym *sym = (const void *)(elf + sh[i].sh_offset + s);
			const char *sym_name = (const char *)elf + str->sh_offset + sym->st_name;

			if (ELF64_ST_TYPE(sym->st_info) == STT_OBJECT &&
			    sym->st_name < str->sh_size &&
			    !strncmp(sym_name, name, str->sh_size - sym->st_name) &&
			    strnlen(sym_name, str->sh_size - sym->st_name) == strlen(name))
				return sym->st_size;
		}
	}
	return 0;
}

static struct {
	size_t (*frame_size)(const void *src, size_t len);		 /* compressed */
	unsigned long long (*content_size)(const void *src, size_t len); /* inflated */
	size_t (*decompress)(void *dst, size_t cap, const void *src, size_t len);
	unsigned (*is_error)(size_t code);
} zstd;

static void load_zstd(void)
{
	void *lib = dlopen("libzstd.so.1", RTLD_NOW | RTLD_LOCAL);

	if (!lib)
		return;
	*(void **)&zstd.frame_size = dlsym(lib, "ZSTD_findFrameCompressedSize");
	*(void **)&zstd.content_size = dlsym(lib, "ZSTD_getFrameContentSize");
	*(void **)&zstd.decompress = dlsym(lib, "ZSTD_decompress");
	*(void **)&zstd.is_error = dlsym(lib, "ZSTD_isError");
	if (!zstd.frame_size || !zstd.content_size || !zstd.decompress || !zstd.is_error)
		zstd.decompress = NULL;
}

/* The size of object `name` in a zstd-compressed cubin of len bytes (padding included). */
static size_t packed_symbol_size(const unsigned char *src, size_t len, const char *name)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	unsigned long long inflated;
	size_t packed, got, size = 0;
	unsigned char *elf;

	pthread_once(&once, load_zstd);
	if (!zstd.decompress || zstd.is_error(packed = zstd.frame_size(src, len)) ||
	    (inflated = zstd.content_size(src, packed)) >= 1ull << 32 ||
	    !(elf = malloc(inflated ? inflated : 1)))
		return 0;
	got = zstd.decompress(elf, inflated, src, packed);
	if (!zstd.is_error(got))
		size = cubin_symbol_size(elf, got, name);
	free(elf);
	return size;
}

size_t fakecuda_image_symbol_size(const void *image, const char *name)
{
	const unsigned char *p = image;
	const struct fatbin_header *fh;
	uint64_t at;

	if (!image || !name)
		return 0;
	/* A bare cubin: the linker puts its section headers last. */
	if (!memcmp(p, ELFMAG, SELFMAG))
		return cubin_symbol_size(p,
					 ((const Elf64_Ehdr *)p)->e_shoff +
					     ((const Elf64_Ehdr *)p)->e_shnum * sizeof(Elf64_Shdr),
					 name);
	if (*(const uint32_t *)p == FATBIN_WRAPPER_MAGIC)
		p = *(const unsigned char *const *)(p + 8);
	fh = (const void *)p;
	if (fh->magic != FATBIN_MAGIC || fh->header_size < sizeof(*fh))
		return 0;
	for (at = 0; at + sizeof(struct entry_header) <= fh->body_size;) {
		const struct entry_header *e = (const void *)(p + fh->header_size + at);
		const unsigned char *payload = (const unsigned char *)e + e->header_size;
		size_t size;

		if (e->header_size < sizeof(*e) || e->payload_size > fh->body_size - at ||
		    e->header_size > fh->body_size - at - e->payload_size)
			break;
		if (e->kind != ENTRY_CUBIN)
			size = 0;
		else if (e->payload_size >= 4 && !memcmp(payload, ZSTD_MAGIC, 4))
			size = packed_symbol_size(payload, e->payload_size, name);
		else
			size = cubin_symbol_size(payload, e->payload_size, name);
		if (size)
			return size;
		at += e->header_size + e->payload_size;
	}
	return 0;
}
