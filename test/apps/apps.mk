# Test programs for the simulated GPU, built into $(BUILD)/test/apps/ and linked against the
# fake libraries in $(BUILD)/fakecuda through a relative RUNPATH (see test/fakecuda/README.md).
# The nvcc programs are left out when $(CUDA_HOME)/bin/nvcc is missing; their tests then skip.

APPS_OUT   := $(BUILD)/test/apps
NVCC       := $(CUDA_HOME)/bin/nvcc
APPS_RPATH := -Wl,-rpath,'$$ORIGIN/../../fakecuda' -L$(FAKECUDA_OUT)
APPS       := $(APPS_OUT)/rt-app $(APPS_OUT)/drv-app $(APPS_OUT)/libcuptidump.so

# relu's stub is named by its exported symbol, hence -rdynamic.
$(APPS_OUT)/rt-app: $(BUILD)/test/apps/rt-app.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -rdynamic -o $@ $< $(APPS_RPATH) -l:libcudart.so.13 -ldl -lpthread

# It dlopens libcuda.so.1. Under ASan the dlopen call comes from libasan, whose search path is
# not ours, so this one gets an old-style DT_RPATH, which applies to every lookup.
$(APPS_OUT)/drv-app: $(BUILD)/test/apps/drv-app.o $(FAKE_CUDA_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(APPS_RPATH) -Wl,--disable-new-dtags -ldl

$(APPS_OUT)/libcuptidump.so: $(BUILD)/test/apps/cupti-dump.o $(FAKECUPTI_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcupti.so.13

ifneq ($(wildcard $(NVCC)),)
APPS += $(APPS_OUT)/nvcc-app $(APPS_OUT)/nvcc-app-pt

$(APPS_OUT)/nvcc-app.o: test/apps/nvcc-app.cu
	$(call quiet,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(NVCC) -cudart shared -O2 -c -o $@ $<

$(APPS_OUT)/nvcc-app-pt.o: test/apps/nvcc-app.cu
	$(call quiet,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(NVCC) -cudart shared --default-stream per-thread -O2 -c -o $@ $<

# Linked by $(CC), so sanitizer builds link their runtime as for every other program.
$(APPS_OUT)/nvcc-app $(APPS_OUT)/nvcc-app-pt: %: %.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcudart.so.13 -lstdc++ -ldl -lpthread
endif

TEST_DEPS += $(APPS)
