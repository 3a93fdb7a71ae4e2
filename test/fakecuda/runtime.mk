# The fake CUDA driver (libcuda.so.1, which holds the simulated GPU) and runtime
# (libcudart.so.13), on top of fakecuda.mk's libfakegpu.so. Included by the top Makefile after
# fakecuda.mk, whose FAKECUDA_OUT and FAKEGPU_LIB it uses; see "Runtime and GPU" in
# test/fakecuda/README.md.

FAKE_CUDA_LIB    := $(FAKECUDA_OUT)/libcuda.so.1
FAKE_CUDART_LIB  := $(FAKECUDA_OUT)/libcudart.so.13

FAKE_CUDA_SRCS   := $(addprefix test/fakecuda/,device.c trace.c gtlog.c memory.c kernel.c \
		      timeline.c records.c driver.c driver-device.c driver-memory.c \
		      driver-stream.c driver-exports.c driver-proc.c driver-extra.c driver-graph.c \
		      driver-link.c driver-pool.c fatbin.c)
FAKE_CUDART_SRCS := $(addprefix test/fakecuda/,cudart.c cudart-device.c cudart-memory.c \
		      cudart-stream.c)
FAKE_CUDA_OBJS   := $(FAKE_CUDA_SRCS:%.c=$(BUILD)/%.o)
FAKE_CUDART_OBJS := $(FAKE_CUDART_SRCS:%.c=$(BUILD)/%.o)

# Each library finds the others beside it ($ORIGIN), whatever the build folder.
$(FAKE_CUDA_LIB): $(FAKE_CUDA_OBJS) test/fakecuda/cuda.map $(FAKEGPU_LIB)
	$(call quiet,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libcuda.so.1 \
		-Wl,--version-script=test/fakecuda/cuda.map -Wl,-rpath,'$$ORIGIN' \
		-o $@ $(FAKE_CUDA_OBJS) -L$(FAKECUDA_OUT) -l:libfakegpu.so -ldl -lpthread

$(FAKE_CUDART_LIB): $(FAKE_CUDART_OBJS) test/fakecuda/cudart.map $(FAKE_CUDA_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=test/fakecuda/cudart.map -Wl,-rpath,'$$ORIGIN' \
		-o $@ $(FAKE_CUDART_OBJS) -L$(FAKECUDA_OUT) -l:libcuda.so.1 -l:libfakegpu.so \
		-lpthread

# NVIDIA's runtime on the simulated driver: the driver alone in a folder, so that a program
# finds the toolkit's libcudart.so.13 and this libcuda.so.1 (test/fakecuda/README.md). Only
# the 13.0 runtime, whose private tables the driver has: REAL_RUNTIME says whether it is here.
REAL_RUNTIME := $(shell grep -qs 'define CUDART_VERSION  *13000$$' \
		  $(CUDA_HOME)/include/cuda_runtime_api.h && echo yes)
FAKE_DRIVER_DIR := $(FAKECUDA_OUT)/driver
FAKE_DRIVER     := $(FAKE_DRIVER_DIR)/libcuda.so.1

$(FAKE_DRIVER): $(FAKE_CUDA_LIB) $(FAKEGPU_LIB)
	$(call quiet,LN,$@)
	@mkdir -p $(@D)
	$(Q)ln -sf ../libcuda.so.1 $@ && ln -sf ../libfakegpu.so $(@D)/libfakegpu.so

TEST_DEPS += $(FAKE_CUDA_LIB) $(FAKE_CUDART_LIB) $(FAKE_DRIVER)

# How a program anywhere in $(BUILD) finds a runtime: through a RUNPATH relative to its own
# folder ($ORIGIN/.. as many times as that folder is deep in $(BUILD)), so that the build
# folder can move. FAKE_RPATH: the simulated runtime and driver, for -l:libcudart.so.13 and the
# rest of $(FAKECUDA_OUT). REAL_RPATH: the toolkit's libraries on the simulated driver, as an
# old-style DT_RPATH, which applies to the runtime's own dlopen of libcuda.so.1 too.
folders_in_build = $(subst /, ,$(patsubst $(BUILD)%,%,$(@D)))
origin_build     = $$ORIGIN$(subst $(space),,$(patsubst %,/..,$(folders_in_build)))
FAKE_RPATH       = -Wl,-rpath,'$(origin_build)/fakecuda' -L$(FAKECUDA_OUT)
REAL_RPATH       = -Wl,--disable-new-dtags -Wl,-rpath,'$(origin_build)/fakecuda/driver' \
		   -Wl,-rpath,$(CUDA_HOME)/lib64 -L$(CUDA_HOME)/lib64
