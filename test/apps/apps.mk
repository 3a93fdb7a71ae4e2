# Test programs for the simulated GPU: test/apps/NAME.c (or NAME.cu) becomes $(APPS_OUT)/NAME,
# or the shared object $(APPS_OUT)/NAME.so, by the pattern rules below, linked against the fake
# libraries in $(BUILD)/fakecuda through a relative RUNPATH (FAKE_RPATH, test/fakecuda/runtime.mk).
# A program that links anything else says so with a target-specific APP_LIBS (the runtime it
# links, with its search path), APP_LDFLAGS and a prerequisite; a new one is added to APPS.
# link_app links the benchmark's and make demo's programs too.
# The nvcc programs are left out when $(CUDA_HOME)/bin/nvcc is missing; their tests then skip.

APPS_OUT   := $(BUILD)/test/apps
NVCC       := $(CUDA_HOME)/bin/nvcc
APP_LIBS    = $(FAKE_RPATH) -l:libcudart.so.13

link_app = $(CC) $(if $(filter %.so,$@),-shared) $(LDFLAGS) $(APP_LDFLAGS) -o $@ \
	   $(filter %.o,$^) $(APP_LIBS) -ldl -lpthread

$(APPS_OUT)/%: $(APPS_OUT)/%.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(link_app)

$(APPS_OUT)/%.so: $(APPS_OUT)/%.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(link_app)

# test-fakecuda-apps: the runtime and driver programs and a CUPTI client to preload.
APPS := rt-app drv-app cupti-dump.so
# relu's stub is named by its exported symbol, hence -rdynamic.
$(APPS_OUT)/rt-app: APP_LDFLAGS := -rdynamic
# It dlopens libcuda.so.1. Under ASan the dlopen call comes from libasan, whose search path is
# not ours, so this one gets an old-style DT_RPATH, which applies to every lookup.
$(APPS_OUT)/drv-app: $(FAKE_CUDA_LIB)
$(APPS_OUT)/drv-app: APP_LIBS = $(FAKE_RPATH) -Wl,--disable-new-dtags
# Code linked at run time (cuLink*), from device code nvcc builds (below): as drv-app.
APPS += link-app
$(APPS_OUT)/link-app: $(FAKE_CUDA_LIB)
$(APPS_OUT)/link-app: APP_LIBS = $(FAKE_RPATH) -Wl,--disable-new-dtags
$(APPS_OUT)/cupti-dump.so: $(FAKECUPTI_LIB)
$(APPS_OUT)/cupti-dump.so: APP_LIBS = $(FAKE_RPATH) -l:libcupti.so.13
# Another CUPTI tool in the program, from its fourth step on.
APPS += cupti-tool
$(APPS_OUT)/cupti-tool: $(FAKECUPTI_LIB)
$(APPS_OUT)/cupti-tool: APP_LIBS += -l:libcupti.so.13

# test-preload and test-e2e: steps-app; the same object linked against the toolkit's real
# libcudart (which, with no GPU, fails every call with 35); a program whose CUDA runtime is
# loaded RTLD_LOCAL, inside a plugin.
APPS += steps-app steps-app-real local-app local-plugin.so
APPS_OF_OTHER := steps-app-real
$(APPS_OUT)/steps-app-real: $(APPS_OUT)/steps-app.o
$(APPS_OUT)/steps-app-real: APP_LIBS = -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
				       -l:libcudart.so.13
$(APPS_OUT)/local-app: APP_LIBS :=
$(APPS_OUT)/local-plugin.so: APP_LIBS += -Wl,--no-as-needed -lstdc++ -Wl,--as-needed

# test-trigger; test-tools: the native part of the stand-in torch (test/stand-ins/).
APPS += trig-app tool-steps.so

# test-e2e-torch: PyTorch's NVTX operator ranges, replayed.
APPS += torch-app
$(APPS_OUT)/torch-app: APP_LDFLAGS := -rdynamic

# test-e2e-collector: a copy in each direction.
APPS += copy-app

# test-e2e-collector and test-clients: two ranks of a training loop on the simulated libnccl
# (its compute kernel is named by its exported symbol, hence -rdynamic).
APPS += nccl-app
$(APPS_OUT)/nccl-app: $(FAKE_NCCL_LIB)
$(APPS_OUT)/nccl-app: APP_LIBS += -l:libnccl.so.2
$(APPS_OUT)/nccl-app: APP_LDFLAGS := -rdynamic

# test-reliability (rel-seccomp: a seccomp filter around a program). rel-kernels carries the
# C++ runtime (for libgprof's demangler) without using it itself.
APPS += rel-nvtx rel-kernels rel-exit rel-fork rel-load rel-long rel-own rel-threads rel-seccomp
$(APPS_OUT)/rel-kernels: APP_LIBS += -Wl,--no-as-needed -lstdc++ -Wl,--as-needed
# arena-probe.so, preloaded after libgprof, counts its threads' calls into malloc.
APPS += arena-probe.so
$(APPS_OUT)/arena-probe.so: APP_LIBS :=
# rel-ctor's steps run on a thread that its library's constructor starts. Private: the library,
# its prerequisite, would otherwise link itself when rel-ctor is what makes it.
APPS += rel-ctor-lib.so rel-ctor
$(APPS_OUT)/rel-ctor: $(APPS_OUT)/rel-ctor-lib.so
$(APPS_OUT)/rel-ctor: private APP_LIBS += -L$(APPS_OUT) -l:rel-ctor-lib.so -Wl,-rpath,'$$ORIGIN'

# nvcc's programs, linked by $(CC) so that sanitizer builds link their runtime as every other
# program does; -pt: the same source with a default stream per thread.
ifneq ($(wildcard $(NVCC)),)
APPS += nvcc-app nvcc-app-pt
$(APPS_OUT)/nvcc-app $(APPS_OUT)/nvcc-app-pt: APP_LIBS += -lstdc++
$(APPS_OUT)/nvcc-app-pt.o: NVCC_FLAGS := --default-stream per-thread

nvcc_app = $(NVCC) -cudart shared $(NVCC_FLAGS) -O2 -c -o $@ $<

$(APPS_OUT)/%.o: test/apps/%.cu test/apps/check.h
	$(call quiet,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(nvcc_app)

$(APPS_OUT)/%-pt.o: test/apps/%.cu test/apps/check.h
	$(call quiet,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(nvcc_app)

# The same objects on NVIDIA's runtime (the toolkit's libcudart.so.13, its static cudart) and
# the simulated driver (REAL_RPATH).
REAL_CUDART        = $(REAL_RPATH) -l:libcudart.so.13 -lstdc++
REAL_CUDART_STATIC = $(REAL_RPATH) -l:libcudart_static.a -lrt -lstdc++
APPS += nvcc-real nvcc-real-static nvcc-real-pt
APPS_OF_OTHER += nvcc-real nvcc-real-static nvcc-real-pt
$(APPS_OUT)/nvcc-real: $(APPS_OUT)/nvcc-app.o
$(APPS_OUT)/nvcc-real-pt: $(APPS_OUT)/nvcc-app-pt.o
$(APPS_OUT)/nvcc-real-static: $(APPS_OUT)/nvcc-app.o
$(APPS_OUT)/nvcc-real $(APPS_OUT)/nvcc-real-pt: APP_LIBS = $(REAL_CUDART)
$(APPS_OUT)/nvcc-real-static: APP_LIBS = $(REAL_CUDART_STATIC)
# As a user's program is built: NVIDIA's static runtime, nothing that finds the simulated
# driver (gprof-run --simulated-gpu does).
APPS += nvcc-plain
APPS_OF_OTHER += nvcc-plain
$(APPS_OUT)/nvcc-plain: $(APPS_OUT)/nvcc-app.o
$(APPS_OUT)/nvcc-plain: APP_LIBS = -L$(CUDA_HOME)/lib64 -l:libcudart_static.a -lrt -lstdc++
# Stream, event and device syncs and stream waits, on both runtimes, legacy and per-thread.
APPS += sync-app sync-app-pt sync-real sync-real-pt
APPS_OF_OTHER += sync-real sync-real-pt
$(APPS_OUT)/sync-app $(APPS_OUT)/sync-app-pt: APP_LIBS += -lstdc++
$(APPS_OUT)/sync-app-pt.o: NVCC_FLAGS := --default-stream per-thread
$(APPS_OUT)/sync-real: $(APPS_OUT)/sync-app.o
$(APPS_OUT)/sync-real-pt: $(APPS_OUT)/sync-app-pt.o
$(APPS_OUT)/sync-real $(APPS_OUT)/sync-real-pt: APP_LIBS = $(REAL_CUDART)
# Stream-ordered allocation from memory pools, on NVIDIA's runtime, shared and static.
APPS += pool-real pool-real-static
APPS_OF_OTHER += pool-real pool-real-static
$(APPS_OUT)/pool-real $(APPS_OUT)/pool-real-static: $(APPS_OUT)/pool-app.o
$(APPS_OUT)/pool-real: APP_LIBS = $(REAL_CUDART)
$(APPS_OUT)/pool-real-static: APP_LIBS = $(REAL_CUDART_STATIC)
# A CUDA graph and cuBLAS (the toolkit's) on the same.
APPS += graph-app blas-app
$(APPS_OUT)/graph-app: APP_LIBS = $(REAL_CUDART)
# It carries the C++ runtime, as every C++ program does, which libgprof demangles with.
$(APPS_OUT)/blas-app: APP_LIBS = $(REAL_RPATH) -l:libcublas.so.13 -l:libcudart.so.13 \
			       -Wl,--no-as-needed -lstdc++ -Wl,--as-needed
# __device__ variables, and the same source as a zstd-compressed fatbin and a bare cubin that
# it loads as libraries.
APPS += symbol-real symbol-real-static symbol-app.fatbin symbol-app.cubin
APPS_OF_OTHER += symbol-real symbol-real-static
$(APPS_OUT)/symbol-real: $(APPS_OUT)/symbol-app.o
$(APPS_OUT)/symbol-real-static: $(APPS_OUT)/symbol-app.o
$(APPS_OUT)/symbol-real: APP_LIBS = $(REAL_CUDART)
$(APPS_OUT)/symbol-real-static: APP_LIBS = $(REAL_CUDART_STATIC)
$(APPS_OUT)/symbol-app.fatbin: test/apps/symbol-app.cu
	$(call quiet,NVCC,$@)
	$(Q)$(NVCC) -fatbin -Xfatbin -compress-all -o $@ $<
$(APPS_OUT)/symbol-app.cubin: test/apps/symbol-app.cu
	$(call quiet,NVCC,$@)
	$(Q)$(NVCC) -cubin -arch=sm_90 -o $@ $<
# Copies and memsets of 0 bytes.
APPS += zero-app
$(APPS_OUT)/zero-app: APP_LIBS = $(REAL_CUDART)
# link-app's inputs: a cubin and PTX (and symbol-app.fatbin).
APPS += link-kernels.cubin link-more.ptx
$(APPS_OUT)/link-kernels.cubin: test/apps/link-kernels.cu
	$(call quiet,NVCC,$@)
	$(Q)$(NVCC) -cubin -arch=sm_90 -o $@ $<
$(APPS_OUT)/link-more.ptx: test/apps/link-more.cu
	$(call quiet,NVCC,$@)
	$(Q)$(NVCC) -ptx -arch=sm_90 -o $@ $<
$(addprefix $(APPS_OUT)/,nvcc-real nvcc-real-static nvcc-real-pt graph-app blas-app symbol-real \
	symbol-real-static zero-app sync-real sync-real-pt pool-real pool-real-static): $(FAKE_DRIVER)
endif

# The same code on another runtime: a program linked from another one's object, which no
# pattern can name, so each lists its object above and they share this rule.
$(addprefix $(APPS_OUT)/,$(APPS_OF_OTHER)):
	$(call quiet,LD,$@)
	$(Q)$(link_app)

TEST_DEPS += $(addprefix $(APPS_OUT)/,$(APPS))
