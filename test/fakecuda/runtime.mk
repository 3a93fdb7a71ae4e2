# The fake CUDA driver (libcuda.so.1, which holds the simulated GPU) and runtime
# (libcudart.so.13), on top of fakecuda.mk's libfakegpu.so. Included by the top Makefile after
# fakecuda.mk; see "Runtime and GPU" in test/fakecuda/README.md.

FAKECUDA_OUT     ?= $(BUILD)/fakecuda
FAKEGPU_LIB      ?= $(FAKECUDA_OUT)/libfakegpu.so
FAKE_CUDA_LIB    := $(FAKECUDA_OUT)/libcuda.so.1
FAKE_CUDART_LIB  := $(FAKECUDA_OUT)/libcudart.so.13

FAKE_CUDA_SRCS   := $(addprefix test/fakecuda/,device.c trace.c gtlog.c memory.c kernel.c \
		      timeline.c records.c driver.c)
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

TEST_DEPS += $(FAKE_CUDA_LIB) $(FAKE_CUDART_LIB)
