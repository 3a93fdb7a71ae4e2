/*
 * What the simulated driver reads of a loaded image: its kernels (entry functions) and the sizes
 * of its __device__ variables. An image is a fatbin (a header, then entries, each a header and a
 * cubin or PTX), the wrapper nvcc registers around one, a bare cubin (an ELF file, whose symbol
 * table names both), or PTX text (`.entry` and `.global`/`.const` declarations). A cubin or PTX
 * in a fatbin may be zstd-compressed (nvcc's and cuBLAS's are): libzstd, which every Debian
 * system has (dpkg needs it), is loaded to read it; without it such entries are passed over.
 */
#include <ctype.h>
#include <dlfcn.h>
#include <elf.h>
#include <pthread.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/driver.h"

#define FATBIN_MAGIC	     0xba55ed50u
#define FATBIN_WRAPPER_MAGIC 0x466243b1u
#define ENTRY_PTX	     1
#define ENTRY_CUBIN	     2
#define ZSTD_MAGIC	     "\x28\xb5\x2f\xfd"
/* A cubin's symbols: a kernel's st_other has STO_CUDA_ENTRY; -rdc variables are STT_CUDA_OBJECT. */
#define STO_CUDA_ENTRY	0x10
#define STT_CUDA_OBJECT 13

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

/* Section header i of a cubin, copied: images come at any address, unaligned too. */
static Elf64_Shdr shdr_at(const unsigned char *elf, const Elf64_Ehdr *eh, unsigned i)
{
	Elf64_Shdr sh;

	memcpy(&sh, elf + eh->e_shoff + (size_t)i * sizeof(sh), sizeof(sh));
	return sh;
}

/* Calls fn for each symbol of a cubin (at elf, len bytes) until it returns true. */
static bool cubin_each(const unsigned char *elf, size_t len, fakecuda_image_symbol_fn fn, void *arg)
{
	Elf64_Ehdr eh;

	if (len < sizeof(eh))
		return false;
	memcpy(&eh, elf, sizeof(eh));
	if (memcmp(eh.e_ident, ELFMAG, SELFMAG) || eh.e_ident[EI_CLASS] != ELFCLASS64 ||
	    eh.e_shentsize != sizeof(Elf64_Shdr) || eh.e_shoff > len ||
	    (len - eh.e_shoff) / sizeof(Elf64_Shdr) < eh.e_shnum)
		return false;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh = shdr_at(elf, &eh, i), str;

		if (sh.sh_type != SHT_SYMTAB || sh.sh_link >= eh.e_shnum || sh.sh_offset > len ||
		    sh.sh_size > len - sh.sh_offset)
			continue;
		str = shdr_at(elf, &eh, sh.sh_link);
		if (str.sh_offset > len || str.sh_size > len - str.sh_offset)
			continue;
		for (uint64_t s = 0; s + sizeof(Elf64_Sym) <= sh.sh_size; s += sizeof(Elf64_Sym)) {
			const char *name;
			unsigned type;
			size_t name_len;
			Elf64_Sym sym;

			memcpy(&sym, elf + sh.sh_offset + s, sizeof(sym));
			if (sym.st_name >= str.sh_size || sym.st_shndx == SHN_UNDEF)
				continue;
			name = (const char *)elf + str.sh_offset + sym.st_name;
			name_len = strnlen(name, str.sh_size - sym.st_name);
			type = ELF64_ST_TYPE(sym.st_info);
			if (type == STT_FUNC && (sym.st_other & STO_CUDA_ENTRY) &&
			    fn(arg, FAKECUDA_IMAGE_KERNEL, name, name_len, 0))
				return true;
			if ((type == STT_OBJECT || type == STT_CUDA_OBJECT) &&
			    fn(arg, FAKECUDA_IMAGE_VARIABLE, name, name_len, sym.st_size))
				return true;
		}
	}
	return false;
}

/* ---- PTX ---- */

/* Past white space and comments, at most to end. */
static const char *ptx_skip(const char *p, const char *end)
{
	while (p < end) {
		if (isspace((unsigned char)*p)) {
			p++;
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '/') {
			while (p < end && *p != '\n')
				p++;
		} else if (end - p >= 2 && p[0] == '/' && p[1] == '*') {
			const char *close = memmem(p + 2, (size_t)(end - p - 2), "*/", 2);

			p = close ? close + 2 : end;
		} else {
			break;
		}
	}
	return p;
}

/* The length of the identifier or directive (".entry") at p. */
static size_t ptx_word(const char *p, const char *end)
{
	size_t n = 0;

	while (p + n < end && (isalnum((unsigned char)p[n]) || strchr("_$.%", p[n])))
		n++;
	return n;
}

static bool word_is(const char *p, size_t n, const char *word)
{
	return n == strlen(word) && !memcmp(p, word, n);
}

/* The size of a PTX scalar type (.u32, .b8, .f64, .pred ...), 0 if it is not one. */
static size_t ptx_type_size(const char *p, size_t n)
{
	if (n >= 3 && strchr("busf", p[1])) {
		unsigned long bits = strtoul(p + 2, NULL, 10);

		if (bits == 8 || bits == 16 || bits == 32 || bits == 64)
			return bits / 8;
	}
	return 0;
}

/*
 * One module-scope statement at p (up to its ';' or its body's closing '}'): a kernel
 * ([.visible|.weak] .entry name (...) {...}), a device function (.func, passed over) or a variable
 * ([.visible] .global|.const [.align n] [.v2|.v4] .type name[n]... [= ...];). Returns where the
 * statement ends.
 */
static const char *ptx_statement(const char *p, const char *end, fakecuda_image_symbol_fn fn,
				 void *arg, bool *stop)
{
	bool entry = false, function = false, variable = false, external = false;
	size_t type_size = 0, vector = 1;
	const char *name = NULL;
	size_t name_len = 0;
	uint64_t count = 1;
	int depth = 0;

	while ((p = ptx_skip(p, end)) < end) {
		size_t n = ptx_word(p, end);

		if (!n) {
			if (*p == '[' && name && variable) {
				count *= strtoull(p + 1, NULL, 0);
			} else if (*p == '{') {
				depth++;
			} else if (*p == '}' && --depth <= 0) {
				p++;
				break;
			} else if (*p == ';' && !depth) {
				p++;
				break;
			} else if (*p == '=' && !depth && name) {
				/* an initialiser: the declaration is complete */
				const char *semi = memchr(p, ';', (size_t)(end - p));

				p = semi ? semi + 1 : end;
				break;
			}
			p++;
			continue;
		}
		if (depth || name) {
			p += n;
			continue;
		}
		if (word_is(p, n, ".entry"))
			entry = true;
		else if (word_is(p, n, ".func")) /* skipped whole, as a kernel is */
			function = true;
		else if (word_is(p, n, ".global") || word_is(p, n, ".const"))
			variable = true;
		else if (word_is(p, n, ".extern"))
			external = true;
		else if (word_is(p, n, ".v2") || word_is(p, n, ".v4"))
			vector = (size_t)(p[2] - '0');
		else if (*p == '.' && ptx_type_size(p, n))
			type_size = ptx_type_size(p, n);
		else if (*p != '.' && (entry || function || variable) &&
			 !isdigit((unsigned char)*p))
			name = p, name_len = n;
		else if (*p != '.' && !entry && !function && !variable)
			break; /* an instruction or a statement of another kind */
		p += n;
	}
	if (name && !external && entry)
		*stop = fn(arg, FAKECUDA_IMAGE_KERNEL, name, name_len, 0);
	else if (name && !external && variable && type_size)
		*stop =
		    fn(arg, FAKECUDA_IMAGE_VARIABLE, name, name_len, type_size * vector * count);
	return p;
}

/* Calls fn for each kernel and variable of PTX text (len bytes, or up to a NUL). */
static bool ptx_each(const char *text, size_t len, fakecuda_image_symbol_fn fn, void *arg)
{
	const char *end = memchr(text, '\0', len), *p = text;
	bool stop = false;

	if (!end)
		end = text + len;
	while (!stop && (p = ptx_skip(p, end)) < end) {
		const char *next = ptx_statement(p, end, fn, arg, &stop);

		if (next == p) { /* not a statement: on to the next line */
			const char *nl = memchr(p, '\n', (size_t)(end - p));

			next = nl ? nl + 1 : end;
		}
		p = next;
	}
	return stop;
}

/* Whether an image is PTX text: it declares its version first. */
static bool is_ptx(const char *text, size_t len)
{
	const char *p = ptx_skip(text, text + len);

	return (size_t)(text + len - p) > 8 && !memcmp(p, ".version", 8);
}

/* ---- fatbins ---- */

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

/* A fatbin entry's cubin or PTX, inflated when zstd-compressed. */
static bool entry_each(uint16_t kind, const unsigned char *src, size_t len,
		       fakecuda_image_symbol_fn fn, void *arg)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;
	unsigned long long inflated;
	size_t packed, got;
	unsigned char *out;
	bool stop = false;

	if (len < 4 || memcmp(src, ZSTD_MAGIC, 4))
		return kind == ENTRY_CUBIN ? cubin_each(src, len, fn, arg)
					   : ptx_each((const char *)src, len, fn, arg);
	pthread_once(&once, load_zstd);
	if (!zstd.decompress || zstd.is_error(packed = zstd.frame_size(src, len)) ||
	    (inflated = zstd.content_size(src, packed)) >= 1ull << 32 ||
	    !(out = malloc(inflated ? inflated : 1)))
		return false;
	got = zstd.decompress(out, inflated, src, packed);
	if (!zstd.is_error(got))
		stop = kind == ENTRY_CUBIN ? cubin_each(out, got, fn, arg)
					   : ptx_each((const char *)out, got, fn, arg);
	free(out);
	return stop;
}

static bool fatbin_each(const unsigned char *p, fakecuda_image_symbol_fn fn, void *arg)
{
	const struct fatbin_header *fh = (const void *)p;

	if (fh->magic != FATBIN_MAGIC || fh->header_size < sizeof(*fh))
		return false;
	for (uint64_t at = 0; at + sizeof(struct entry_header) <= fh->body_size;) {
		const struct entry_header *e = (const void *)(p + fh->header_size + at);
		const unsigned char *payload = (const unsigned char *)e + e->header_size;

		if (e->header_size < sizeof(*e) || e->payload_size > fh->body_size - at ||
		    e->header_size > fh->body_size - at - e->payload_size)
			break;
		if ((e->kind == ENTRY_CUBIN || e->kind == ENTRY_PTX) &&
		    entry_each(e->kind, payload, e->payload_size, fn, arg))
			return true;
		at += e->header_size + e->payload_size;
	}
	return false;
}

/* The size of a bare cubin: the linker puts its section headers last. */
static size_t cubin_size(const void *image)
{
	Elf64_Ehdr eh;

	memcpy(&eh, image, sizeof(eh));
	return eh.e_shoff + (size_t)eh.e_shnum * sizeof(Elf64_Shdr);
}

/* What a loaded image is; *fatbin is the fatbin itself (past nvcc's wrapper). */
static enum fakecuda_image_kind image_kind(const void *image, const unsigned char **fatbin)
{
	const unsigned char *p = image;

	if (!memcmp(p, ELFMAG, SELFMAG))
		return FAKECUDA_IMAGE_CUBIN;
	if (*(const uint32_t *)p == FATBIN_WRAPPER_MAGIC)
		p = *(const unsigned char *const *)(p + 8);
	if (*(const uint32_t *)p == FATBIN_MAGIC) {
		*fatbin = p;
		return FAKECUDA_IMAGE_FATBIN;
	}
	/* PTX is text that starts with comments or its .version */
	if ((*p == '/' || *p == '.' || isspace(*p)) && is_ptx(image, strlen(image)))
		return FAKECUDA_IMAGE_PTX;
	return FAKECUDA_IMAGE_UNKNOWN;
}

enum fakecuda_image_kind fakecuda_image_each(const void *image, fakecuda_image_symbol_fn fn,
					     void *arg)
{
	const unsigned char *fatbin = NULL;
	enum fakecuda_image_kind kind = image ? image_kind(image, &fatbin) : FAKECUDA_IMAGE_UNKNOWN;

	if (!fn)
		return kind;
	if (kind == FAKECUDA_IMAGE_CUBIN)
		cubin_each(image, cubin_size(image), fn, arg);
	else if (kind == FAKECUDA_IMAGE_PTX)
		ptx_each(image, strlen(image), fn, arg);
	else if (kind == FAKECUDA_IMAGE_FATBIN)
		fatbin_each(fatbin, fn, arg);
	return kind;
}

enum fakecuda_image_kind fakecuda_image_data_each(int type, const void *data, size_t len,
						  fakecuda_image_symbol_fn fn, void *arg)
{
	if (type == CU_JIT_INPUT_CUBIN && len >= SELFMAG && !memcmp(data, ELFMAG, SELFMAG)) {
		cubin_each(data, len, fn, arg);
		return FAKECUDA_IMAGE_CUBIN;
	}
	if (type == CU_JIT_INPUT_PTX && is_ptx(data, strnlen(data, len))) {
		ptx_each(data, len, fn, arg);
		return FAKECUDA_IMAGE_PTX;
	}
	if (type == CU_JIT_INPUT_FATBINARY && len >= sizeof(struct fatbin_header) &&
	    *(const uint32_t *)data == FATBIN_MAGIC &&
	    ((const struct fatbin_header *)data)->body_size <=
		len - ((const struct fatbin_header *)data)->header_size) {
		fatbin_each(data, fn, arg);
		return FAKECUDA_IMAGE_FATBIN;
	}
	return FAKECUDA_IMAGE_UNKNOWN;
}

struct find {
	enum fakecuda_image_symbol kind;
	const char *name;
	size_t size;
	bool found;
};

static bool find_symbol(void *arg, enum fakecuda_image_symbol kind, const char *name,
			size_t name_len, uint64_t size)
{
	struct find *f = arg;

	if (kind != f->kind || name_len != strlen(f->name) || memcmp(name, f->name, name_len))
		return false;
	f->found = true;
	f->size = (size_t)size;
	return true;
}

size_t fakecuda_image_symbol_size(const void *image, const char *name)
{
	struct find f = {FAKECUDA_IMAGE_VARIABLE, name, 0, false};

	if (name)
		fakecuda_image_each(image, find_symbol, &f);
	return f.size;
}

size_t fakecuda_image_size(const void *image)
{
	const unsigned char *fatbin = NULL;
	enum fakecuda_image_kind kind = image ? image_kind(image, &fatbin) : FAKECUDA_IMAGE_UNKNOWN;
	Elf64_Ehdr eh;
	size_t size;

	if (kind == FAKECUDA_IMAGE_PTX)
		return strlen(image) + 1;
	if (kind != FAKECUDA_IMAGE_CUBIN)
		return 0;
	memcpy(&eh, image, sizeof(eh));
	if (eh.e_ident[EI_CLASS] != ELFCLASS64 || eh.e_shentsize != sizeof(Elf64_Shdr))
		return 0;
	/* the furthest of the headers and the sections' contents */
	size = cubin_size(image);
	if (eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize > size)
		size = eh.e_phoff + (size_t)eh.e_phnum * eh.e_phentsize;
	for (unsigned i = 0; i < eh.e_shnum; i++) {
		Elf64_Shdr sh = shdr_at(image, &eh, i);

		if (sh.sh_type != SHT_NOBITS && sh.sh_offset + sh.sh_size > size)
			size = sh.sh_offset + sh.sh_size;
	}
	return size;
}

/*
 * Only cubins and PTX are looked in: a fatbin's cubins are one per architecture, often
 * compressed (cuBLAS loads hundreds of MiB of them), and the runtime asks only for kernels it
 * registered.
 */
int fakecuda_image_has_kernel(const void *image, const char *name)
{
	struct find f = {FAKECUDA_IMAGE_KERNEL, name, 0, false};
	const unsigned char *fatbin = NULL;
	enum fakecuda_image_kind kind = image ? image_kind(image, &fatbin) : FAKECUDA_IMAGE_UNKNOWN;

	if (kind != FAKECUDA_IMAGE_CUBIN && kind != FAKECUDA_IMAGE_PTX)
		return -1;
	fakecuda_image_each(image, find_symbol, &f);
	return f.found;
}
