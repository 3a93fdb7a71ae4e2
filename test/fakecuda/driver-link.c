/*
 * Linking and loading code at run time, as cuDNN's runtime-compiled engines and JIT compilers
 * do: cuLinkCreate / cuLinkAddData / cuLinkAddFile / cuLinkComplete / cuLinkDestroy (both the
 * CUDA 5.5 forms under the plain names and the _v2 ones), cuLibraryLoadFromFile and
 * cuModuleLoad. Nothing is compiled: the linker reads the kernels and __device__ variables of
 * its inputs (cubins, PTX, fatbins) and cuLinkComplete gives a cubin (an ELF file) whose symbol
 * table holds them, sm_90 like the simulated device. Loaded, it has exactly those kernels, under
 * the names the inputs give them, and its variables have their sizes.
 */
#include <elf.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "test/fakecuda/driver.h"

/* The ELF header of what nvcc -arch=sm_90 -cubin writes. */
#define EM_CUDA		  190
#define ELFOSABI_CUDA	  0x41
#define CUDA_ABI_VERSION  8
#define CUBIN_FLAGS_SM_90 0x6005a04
#define STO_CUDA_ENTRY	  0x10

/* ---- modules ---- */

struct fakecuda_module *fakecuda_module_new(const void *image, bool owned)
{
	struct fakecuda_module *m = calloc(1, sizeof(*m));
	size_t size = owned ? 0 : fakecuda_image_size(image);

	if (!m)
		return NULL;
	if (owned) {
		m->owned = (void *)image;
	} else if (size) {
		if (!(m->owned = malloc(size))) {
			free(m);
			return NULL;
		}
		image = memcpy(m->owned, image, size);
	}
	m->image = image;
	return m;
}

void fakecuda_module_free(struct fakecuda_module *module)
{
	if (module)
		free(module->owned);
	free(module);
}

void *fakecuda_read_file(const char *path, size_t *size)
{
	FILE *f = path ? fopen(path, "rb") : NULL;
	char *data = NULL;
	long len;

	if (!f)
		return NULL;
	/* one NUL more, so that a PTX file is a string */
	if (!fseek(f, 0, SEEK_END) && (len = ftell(f)) >= 0 && !fseek(f, 0, SEEK_SET) &&
	    (data = malloc((size_t)len + 1)) && fread(data, 1, (size_t)len, f) == (size_t)len) {
		data[len] = '\0';
		*size = (size_t)len;
	} else {
		free(data);
		data = NULL;
	}
	fclose(f);
	return data;
}

/* A module of a file's image, which it owns. */
static CUresult load_file(struct fakecuda_module **out, const char *path)
{
	size_t size;
	void *image;

	if (!(image = fakecuda_read_file(path, &size)))
		return CUDA_ERROR_FILE_NOT_FOUND;
	if (fakecuda_image_each(image, NULL, NULL) == FAKECUDA_IMAGE_UNKNOWN) {
		free(image);
		return CUDA_ERROR_INVALID_IMAGE;
	}
	if (!(*out = fakecuda_module_new(image, true))) {
		free(image);
		return CUDA_ERROR_OUT_OF_MEMORY;
	}
	return CUDA_SUCCESS;
}

/* cuModuleLoad's and cuLibraryLoadFromFile's body: the module of path in *module or *library. */
static CUresult load_file_call(struct fakecuda_call *c, const char *path, CUmodule *module,
			       CUlibrary *library)
{
	CUresult err =
	    (module || library) && path ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	struct fakecuda_module *m = NULL;
	char name[512];

	if (!err && !(err = load_file(&m, path))) {
		if (module)
			*module = (CUmodule)m;
		else
			*library = (CUlibrary)m;
	}
	return fakecuda_api_exit(c, err, "\"file\":%s", fakecuda_log_str(name, sizeof(name), path));
}

CUresult cuModuleLoad(CUmodule *module, const char *fname)
{
	DRV_CALL(cuModuleLoad, module, fname);
	return load_file_call(&c, fname, module, NULL);
}

CUresult cuLibraryLoadFromFile(CUlibrary *library, const char *fileName, CUjit_option *jitOptions,
			       void **jitOptionsValues, unsigned int numJitOptions,
			       CUlibraryOption *libraryOptions, void **libraryOptionValues,
			       unsigned int numLibraryOptions)
{
	DRV_CALL(cuLibraryLoadFromFile, library, fileName, jitOptions, jitOptionsValues,
		 numJitOptions, libraryOptions, libraryOptionValues, numLibraryOptions);
	return load_file_call(&c, fileName, NULL, library);
}

/* ---- the linker ---- */

struct symbol {
	enum fakecuda_image_symbol kind;
	char *name;
	uint64_t size;
};

/* A CUlinkState: the symbols of the inputs so far, and the image cuLinkComplete made. */
struct link {
	struct symbol *symbols;
	size_t n_symbols, cap_symbols;
	unsigned inputs;
	bool no_memory;
	unsigned char *image;
	size_t image_size;
};

/* Keeps one symbol (the first of a name: a fatbin holds each kernel once per architecture). */
static bool add_symbol(void *arg, enum fakecuda_image_symbol kind, const char *name,
		       size_t name_len, uint64_t size)
{
	struct link *l = arg;
	struct symbol *s;

	for (size_t i = 0; i < l->n_symbols; i++)
		if (l->symbols[i].kind == kind && !strncmp(l->symbols[i].name, name, name_len) &&
		    !l->symbols[i].name[name_len])
			return false;
	if (l->n_symbols == l->cap_symbols) {
		size_t cap = l->cap_symbols ? 2 * l->cap_symbols : 16;

		if (!(s = realloc(l->symbols, cap * sizeof(*s)))) {
			l->no_memory = true;
			return true;
		}
		l->symbols = s;
		l->cap_symbols = cap;
	}
	s = &l->symbols[l->n_symbols];
	if (!(s->name = strndup(name, name_len))) {
		l->no_memory = true;
		return true;
	}
	s->kind = kind;
	s->size = size;
	l->n_symbols++;
	return false;
}

static CUresult link_create(CUlinkState *out)
{
	CUresult err = out ? fakecuda_drv_need_init() : CUDA_ERROR_INVALID_VALUE;
	struct link *l = NULL;

	if (!err && !(l = calloc(1, sizeof(*l))))
		err = CUDA_ERROR_OUT_OF_MEMORY;
	if (!err)
		*out = (CUlinkState)l;
	return err;
}

/* Reads one input's symbols; an input the linker cannot read is an invalid image. */
static CUresult link_add(CUlinkState state, CUjitInputType type, const void *data, size_t size)
{
	struct link *l = (struct link *)state;
	CUresult err = fakecuda_drv_need_init();

	if (!err && (!l || !data || !size))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err)
		return err;
	if (type != CU_JIT_INPUT_CUBIN && type != CU_JIT_INPUT_PTX &&
	    type != CU_JIT_INPUT_FATBINARY) {
		fprintf(stderr, "fakecuda: linking input type %d is not simulated\n", (int)type);
		return CUDA_ERROR_NOT_SUPPORTED;
	}
	if (fakecuda_image_data_each(type, data, size, add_symbol, l) == FAKECUDA_IMAGE_UNKNOWN)
		return CUDA_ERROR_INVALID_IMAGE;
	if (l->no_memory)
		return CUDA_ERROR_OUT_OF_MEMORY;
	l->inputs++;
	return CUDA_SUCCESS;
}

static CUresult link_add_file(CUlinkState state, CUjitInputType type, const char *path)
{
	CUresult err = fakecuda_drv_need_init();
	size_t size = 0;
	void *data;

	if (!err && (!state || !path))
		err = CUDA_ERROR_INVALID_VALUE;
	if (err)
		return err;
	if (!(data = fakecuda_read_file(path, &size)))
		return CUDA_ERROR_FILE_NOT_FOUND;
	err = link_add(state, type, data, size + (type == CU_JIT_INPUT_PTX));
	free(data);
	return err;
}

/* Appends len bytes to a growing buffer; returns their offset. */
static size_t put(unsigned char *buf, size_t *at, const void *data, size_t len)
{
	size_t offset = *at;

	if (buf)
		memcpy(buf + offset, data, len);
	*at += len;
	return offset;
}

enum {
	SEC_NULL,
	SEC_SHSTRTAB,
	SEC_STRTAB,
	SEC_SYMTAB,
	SEC_TEXT,
	SEC_GLOBAL,
	N_SECTIONS
};

static const char shstrtab[] = "\0.shstrtab\0.strtab\0.symtab\0.text\0.nv.global";

/*
 * Writes the linked cubin to buf (NULL: only measures it); returns its size. Layout: the ELF
 * header, the section names, the symbol names, the symbols (kernels, then variables laid out
 * in .nv.global), the section headers last.
 */
static size_t write_cubin(const struct link *l, unsigned char *buf)
{
	Elf64_Ehdr eh = {
	    .e_ident = {ELFMAG0, ELFMAG1, ELFMAG2, ELFMAG3, ELFCLASS64, ELFDATA2LSB, EV_CURRENT,
			ELFOSABI_CUDA, CUDA_ABI_VERSION},
	    .e_type = ET_EXEC,
	    .e_machine = EM_CUDA,
	    .e_version = EV_CURRENT,
	    .e_flags = CUBIN_FLAGS_SM_90,
	    .e_ehsize = sizeof(Elf64_Ehdr),
	    .e_shentsize = sizeof(Elf64_Shdr),
	    .e_shnum = N_SECTIONS,
	    .e_shstrndx = SEC_SHSTRTAB,
	};
	Elf64_Shdr sh[N_SECTIONS] = {{0}};
	uint64_t globals = 0;
	size_t at = sizeof(eh), names;
	const Elf64_Sym none = {0};

	sh[SEC_SHSTRTAB] = (Elf64_Shdr){.sh_name = 1, .sh_type = SHT_STRTAB, .sh_addralign = 1};
	sh[SEC_SHSTRTAB].sh_offset = put(buf, &at, shstrtab, sizeof(shstrtab));
	sh[SEC_SHSTRTAB].sh_size = sizeof(shstrtab);
	/* symbol names: "" then each name, in symbol order */
	names = put(buf, &at, "", 1);
	for (size_t i = 0; i < l->n_symbols; i++)
		put(buf, &at, l->symbols[i].name, strlen(l->symbols[i].name) + 1);
	sh[SEC_STRTAB] = (Elf64_Shdr){.sh_name = 19,
				      .sh_type = SHT_STRTAB,
				      .sh_offset = names,
				      .sh_size = at - names,
				      .sh_addralign = 1};
	at = (at + 7) & ~(size_t)7;
	sh[SEC_SYMTAB] = (Elf64_Shdr){.sh_name = 11,
				      .sh_type = SHT_SYMTAB,
				      .sh_offset = put(buf, &at, &none, sizeof(none)),
				      .sh_link = SEC_STRTAB,
				      .sh_info = 1, /* every symbol but the first is global */
				      .sh_addralign = 8,
				      .sh_entsize = sizeof(Elf64_Sym)};
	for (size_t i = 0, name = 1; i < l->n_symbols; i++) {
		const struct symbol *s = &l->symbols[i];
		bool kernel = s->kind == FAKECUDA_IMAGE_KERNEL;
		Elf64_Sym sym = {
		    .st_name = (Elf64_Word)name,
		    .st_info = ELF64_ST_INFO(STB_GLOBAL, kernel ? STT_FUNC : STT_OBJECT),
		    .st_other = kernel ? STO_CUDA_ENTRY : 0,
		    .st_shndx = kernel ? SEC_TEXT : SEC_GLOBAL,
		    .st_value = kernel ? 0 : globals,
		    .st_size = s->size,
		};

		put(buf, &at, &sym, sizeof(sym));
		name += strlen(s->name) + 1;
		if (!kernel)
			globals += (s->size + 7) & ~(uint64_t)7;
	}
	sh[SEC_SYMTAB].sh_size = at - sh[SEC_SYMTAB].sh_offset;
	sh[SEC_TEXT] = (Elf64_Shdr){.sh_name = 27,
				    .sh_type = SHT_PROGBITS,
				    .sh_flags = SHF_ALLOC | SHF_EXECINSTR,
				    .sh_offset = at,
				    .sh_addralign = 128};
	sh[SEC_GLOBAL] = (Elf64_Shdr){.sh_name = 33,
				      .sh_type = SHT_NOBITS,
				      .sh_flags = SHF_ALLOC | SHF_WRITE,
				      .sh_offset = at,
				      .sh_size = globals,
				      .sh_addralign = 8};
	eh.e_shoff = at;
	put(buf, &at, sh, sizeof(sh));
	if (buf)
		memcpy(buf, &eh, sizeof(eh));
	return at;
}

static CUresult link_complete(CUlinkState state, void **cubin, size_t *size)
{
	struct link *l = (struct link *)state;
	CUresult err = fakecuda_drv_need_init();
	unsigned char *image;
	size_t len;

	if (!err && (!l || !cubin || !size))
		err = CUDA_ERROR_INVALID_VALUE;
	if (!err && !l->inputs)
		err = CUDA_ERROR_INVALID_IMAGE; /* nothing was added */
	if (err)
		return err;
	len = write_cubin(l, NULL);
	if (!(image = calloc(1, len)))
		return CUDA_ERROR_OUT_OF_MEMORY;
	write_cubin(l, image);
	free(l->image);
	l->image = image;
	l->image_size = len;
	*cubin = image;
	*size = len;
	return CUDA_SUCCESS;
}

/* The linked image lives until here, as documented. */
static CUresult link_destroy(CUlinkState state)
{
	struct link *l = (struct link *)state;
	CUresult err = fakecuda_drv_need_init();

	if (!err && !l)
		err = CUDA_ERROR_INVALID_HANDLE;
	if (err)
		return err;
	for (size_t i = 0; i < l->n_symbols; i++)
		free(l->symbols[i].name);
	free(l->symbols);
	free(l->image);
	free(l);
	return CUDA_SUCCESS;
}

/* The log line of an input: its type, size and name. */
#define ADD_ARGS  "\"type\":%d,\"bytes\":%zu,\"name\":%s"
#define FILE_ARGS "\"type\":%d,\"file\":%s"

/* The end of cuLinkAddData and cuLinkAddFile, in their CUDA 5.5 and 6.5 forms alike. */
static CUresult add_data_exit(struct fakecuda_call *c, CUlinkState state, CUjitInputType type,
			      void *data, size_t size, const char *name)
{
	char log_name[256];

	return fakecuda_api_exit(c, link_add(state, type, data, size), ADD_ARGS, (int)type, size,
				 fakecuda_log_str(log_name, sizeof(log_name), name));
}

static CUresult add_file_exit(struct fakecuda_call *c, CUlinkState state, CUjitInputType type,
			      const char *path)
{
	char log_path[512];

	return fakecuda_api_exit(c, link_add_file(state, type, path), FILE_ARGS, (int)type,
				 fakecuda_log_str(log_path, sizeof(log_path), path));
}

/*
 * cuda.h names the _v2 forms cuLinkCreate ...; the CUDA 5.5 ones keep the plain names. DRV_CALL
 * would expand such a name to its _v2 cbid: V1_CALL opens their calls with their own.
 */
#define V1_CALL(fn, ...)                \
	fn##_params p_ = {__VA_ARGS__}; \
	struct fakecuda_call c;         \
	fakecuda_drv_enter(&c, CUPTI_DRIVER_TRACE_CBID_##fn, #fn, &p_, NULL, DRV_CALLER)

CUresult cuLinkCreate(unsigned int numOptions, CUjit_option *options, void **optionValues,
		      CUlinkState *stateOut)
{
	DRV_CALL(cuLinkCreate_v2, numOptions, options, optionValues, stateOut);
	return fakecuda_api_exit(&c, link_create(stateOut), NULL);
}

CUresult link_create_v1(unsigned int numOptions, CUjit_option *options, void **optionValues,
			CUlinkState *stateOut)
{
	V1_CALL(cuLinkCreate, numOptions, options, optionValues, stateOut);
	return fakecuda_api_exit(&c, link_create(stateOut), NULL);
}

CUresult cuLinkAddData(CUlinkState state, CUjitInputType type, void *data, size_t size,
		       const char *name, unsigned int numOptions, CUjit_option *options,
		       void **optionValues)
{
	DRV_CALL(cuLinkAddData_v2, state, type, data, size, name, numOptions, options,
		 optionValues);
	return add_data_exit(&c, state, type, data, size, name);
}

CUresult link_add_data_v1(CUlinkState state, CUjitInputType type, void *data, size_t size,
			  const char *name, unsigned int numOptions, CUjit_option *options,
			  void **optionValues)
{
	V1_CALL(cuLinkAddData, state, type, data, size, name, numOptions, options, optionValues);
	return add_data_exit(&c, state, type, data, size, name);
}

CUresult cuLinkAddFile(CUlinkState state, CUjitInputType type, const char *path,
		       unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	DRV_CALL(cuLinkAddFile_v2, state, type, path, numOptions, options, optionValues);
	return add_file_exit(&c, state, type, path);
}

CUresult link_add_file_v1(CUlinkState state, CUjitInputType type, const char *path,
			  unsigned int numOptions, CUjit_option *options, void **optionValues)
{
	V1_CALL(cuLinkAddFile, state, type, path, numOptions, options, optionValues);
	return add_file_exit(&c, state, type, path);
}

CUresult cuLinkComplete(CUlinkState state, void **cubinOut, size_t *sizeOut)
{
	DRV_CALL(cuLinkComplete, state, cubinOut, sizeOut);
	CUresult err = link_complete(state, cubinOut, sizeOut);

	return fakecuda_api_exit(&c, err, "\"bytes\":%zu", err ? 0 : *sizeOut);
}

CUresult cuLinkDestroy(CUlinkState state)
{
	DRV_CALL(cuLinkDestroy, state);
	return fakecuda_api_exit(&c, link_destroy(state), NULL);
}
