# libgprof: `make` builds build/libgprof.so; `make help` lists the rest.

CUDA_HOME ?= /usr/local/cuda
CC        ?= gcc
SAN       ?=
V         ?= 0
WERROR    ?= 0

# Sanitizer builds live beside the plain one, so switching back and forth never mixes objects.
comma  := ,
empty  :=
space  := $(empty) $(empty)
BUILD  := build$(if $(SAN),/san-$(subst $(comma),-,$(SAN)))

CUDA_INC   := $(CUDA_HOME)/include
CUPTI_INC  := $(firstword $(wildcard $(CUDA_HOME)/extras/CUPTI/include/cupti.h $(CUDA_HOME)/include/cupti.h))
CUPTI_INC  := $(patsubst %/cupti.h,%,$(CUPTI_INC))

# A missing dependency stops the build with one line naming what to install.
ifeq ($(filter help format check-format clean,$(MAKECMDGOALS)),)
ifeq ($(wildcard $(CUDA_INC)/cuda_runtime_api.h),)
$(error CUDA headers not found in $(CUDA_INC): install the CUDA toolkit or set CUDA_HOME)
endif
ifeq ($(CUPTI_INC),)
$(error cupti.h not found under $(CUDA_HOME)/include or $(CUDA_HOME)/extras/CUPTI/include: install CUPTI (cuda-cupti-dev) or set CUDA_HOME)
endif
ifneq ($(shell printf '\#include <jansson.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo y),y)
$(error jansson.h not found: apt-get install libjansson-dev)
endif
ifneq ($(shell printf '\#include <zlib.h>\n' | $(CC) -E -x c - >/dev/null 2>&1 && echo y),y)
$(error zlib.h not found: apt-get install zlib1g-dev)
endif
endif

WARN     := -Wall -Wextra -Wshadow -Wstrict-prototypes -Wmissing-prototypes
CFLAGS   ?= -O2 -g
# Sections per function: the library's link drops what only the tests call (--gc-sections).
CFLAGS   += -std=gnu11 $(WARN) -fPIC -fvisibility=hidden -pthread -ffunction-sections -fdata-sections
CPPFLAGS += -I. -I$(CUDA_INC) -I$(CUPTI_INC) -D_GNU_SOURCE -MMD -MP
LDLIBS   := -ljansson -lz -ldl -lpthread
ifeq ($(WERROR),1)
CFLAGS   += -Werror
endif
ifneq ($(SAN),)
CFLAGS   += -fsanitize=$(SAN) -fno-omit-frame-pointer -fno-sanitize-recover=all
LDFLAGS  += -fsanitize=$(SAN)
else
# Link-time optimisation: a recorded hook's calls into the kernel names, the export buffer and
# the clock, each in its own file, are inlined into it (docs/PERFORMANCE.md). Sanitizer builds
# go without: they are for finding faults, and link faster.
CFLAGS   += -flto=auto
LDFLAGS  += -Wl,-z,defs -flto=auto
endif

ifeq ($(V),1)
Q :=
quiet = @true
else
Q := @
quiet = @printf '  %-6s %s\n' $(1) $(2)
endif

MODULES   := common scheduler collector export
CORE_SRCS := $(wildcard $(addsuffix /*.c,$(MODULES)))
CORE_OBJS := $(CORE_SRCS:%.c=$(BUILD)/%.o)
LIB_SRCS  := $(CORE_SRCS) $(wildcard preload/*.c)
LIB_OBJS  := $(LIB_SRCS:%.c=$(BUILD)/%.o)
LIB       := $(BUILD)/libgprof.so
CORE_LIB  := $(BUILD)/libgprof-core.a

TEST_SRCS := test/runner.c $(wildcard test/test-*.c) $(wildcard test/util/*.c)
# preload/'s tables, which its unit tests check (the rest of preload/ defines the hooks).
TEST_OBJS := $(TEST_SRCS:%.c=$(BUILD)/%.o) $(BUILD)/preload/hook-table.o
TEST_BIN  := $(BUILD)/test/run-tests

# Things `make test` builds besides the runner (the simulated GPU and test programs add to it).
TEST_DEPS := $(LIB) $(TEST_BIN)

.PHONY: all test demo help format check-format clean
.DEFAULT_GOAL := all

all: $(LIB)

# Built again when the flags here change.
$(BUILD)/%.o: %.c Makefile
	$(call quiet,CC,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) $(CPPFLAGS) $(CFLAGS) -c -o $@ $<

$(LIB): $(LIB_OBJS)
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,--gc-sections -o $@ $^ $(LDLIBS)

$(CORE_LIB): $(CORE_OBJS)
	$(call quiet,AR,$@)
	$(Q)rm -f $@ && ar rcs $@ $^

# A program on the library's core: the test runner, gprof-summary, the benchmark.
link_core = $(CC) $(LDFLAGS) -o $@ $(filter %.o %.a,$^) $(LDLIBS)

$(TEST_BIN): $(TEST_OBJS) $(CORE_LIB)
	$(call quiet,LD,$@)
	$(Q)$(link_core)

# The fragments, in this order: a rule's prerequisites are expanded as make reads it, so each
# fragment comes after those whose variables it uses. A missing one stops the build.
include test/fakecuda/fakecuda.mk # the simulated CUPTI: FAKECUDA_OUT, FAKECUPTI_LIB
include test/fakecuda/runtime.mk  # the simulated driver and runtime: FAKE_CUDART_LIB
include test/apps/apps.mk	  # the test programs: APPS_OUT, link_app
include bench/bench.mk		  # make bench, whose programs link as the test programs do
include test/gpu/gpu.mk		  # make test-gpu
include scripts/summary/summary.mk # gprof-summary
include scripts/run-wait/run-wait.mk # gprof-run-wait
include test/fuzz/fuzz.mk	  # make fuzz
include test/clients/clients.mk	  # make test-clients: HTA and TensorBoard's plugin read our traces
include test/frameworks/frameworks.mk # make test-frameworks: real PyTorch and Triton (opt-in)
include install.mk		  # make install

# Objects that pattern rules make on the way (test/apps/NAME.o) are kept like every other.
.SECONDARY:

# Tests find what they need through these variables.
TEST_ENV := TEST_BUILD=$(abspath $(BUILD)) TEST_SRC=$(abspath .) TEST_CLIENTS=$(abspath $(CLIENTS_VENV)) \
	    TEST_SAN=$(SAN) CUDA_HOME=$(CUDA_HOME)

# e2e_collector_demo_summary runs make demo's program too.
TEST_DEPS += $(if $(wildcard $(CUDA_HOME)/bin/nvcc),$(BUILD)/demo/train-sim)

test: $(TEST_DEPS)
	$(Q)$(TEST_ENV) $(TEST_BIN) $(T)

# gprof-run finds gprof-run-wait, gprof-summary and the simulated GPU in ../build whatever
# library it preloads: a sanitized suite builds them there too (plain); a fresh clone lacks them.
ifneq ($(SAN),)
test: plain-tools
.PHONY: plain-tools
plain-tools:
	$(Q)$(MAKE) --no-print-directory SAN= WERROR=$(WERROR) build/gprof-run-wait build/gprof-summary \
		build/fakecuda/libcupti.so.13 build/fakecuda/driver/libcuda.so.1
endif

# The demo program, built for the simulated GPU always and for the real one when there is one.
DEMO_OUT  := $(BUILD)/demo
DEMO_GPU  := $(if $(shell nvidia-smi -L 2>/dev/null),$(DEMO_OUT)/train-gpu)

$(DEMO_OUT)/train.o: scripts/demo/train.cu
	$(call quiet,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CUDA_HOME)/bin/nvcc -cudart shared -O2 -c -o $@ $<

# Without a GPU: NVIDIA's runtime on the simulated driver when the toolkit's is the 13.0 one
# that the driver knows (test/fakecuda/README.md), else the simulation's own runtime. Linked
# as the test programs are (link_app, test/apps/apps.mk).
$(DEMO_OUT)/train-sim: $(DEMO_OUT)/train.o $(if $(REAL_RUNTIME),$(FAKE_DRIVER),$(FAKE_CUDART_LIB))
	$(call quiet,LD,$@)
	$(Q)$(link_app)
$(DEMO_OUT)/train-sim: APP_LIBS = $(if $(REAL_RUNTIME),$(REAL_RPATH),$(FAKE_RPATH)) \
				  -l:libcudart.so.13 -lstdc++

$(DEMO_OUT)/train-gpu: scripts/demo/train.cu
	$(call quiet,NVCC,$@)
	@mkdir -p $(@D)
	$(Q)$(CUDA_HOME)/bin/nvcc -cudart shared -O2 -o $@ $<

demo: all $(FAKECUPTI_LIB) $(FAKE_NCCL_LIB) $(DEMO_OUT)/train-sim $(DEMO_GPU)
	$(Q)scripts/demo.sh $(BUILD)

FORMAT_SRCS = $(shell git ls-files '*.c' '*.h' 2>/dev/null)

format:
	$(Q)clang-format -i $(FORMAT_SRCS)

check-format:
	$(Q)clang-format --dry-run -Werror $(FORMAT_SRCS)

clean:
	$(Q)rm -rf build

help:
	@echo 'make                 build build/libgprof.so'
	@echo 'make demo            run a bundled training-loop example under libgprof (simulated GPU if none)'
	@echo 'make test            build and run every test (T=name runs those whose name contains it)'
	@echo 'make test SAN=address,undefined   the same under ASan+UBSan (SAN=thread for TSan)'
	@echo 'make test-frameworks  real PyTorch and Triton under libgprof on the simulated GPU (opt-in; ~4.7 GiB of wheels)'
	@echo 'make bench           measure hook cost, export speed, memory, end-to-end (docs/PERFORMANCE.md)'
	@echo 'build/gprof-summary  TRACE...: the end-of-window summary of trace files; --compare A B, --html OUT'
	@echo 'make fuzz            run each libFuzzer target (test/fuzz/) for FUZZ_SECONDS (30)'
	@echo 'make test-gpu        the GPU suite (test/gpu/README.md); skips without a GPU'
	@echo 'make gpu-carry       what a GPU machine without jansson needs, in build/gpu-carry/'
	@echo 'make install         install libgprof.so, gprof-run, gprof-summary, gprof-repair under PREFIX (/usr/local), DESTDIR'
	@echo 'make check-format    check formatting against .clang-format; make format fixes it'
	@echo 'make clean           remove build/'
	@echo 'Variables: CUDA_HOME (default /usr/local/cuda), V=1 full command lines, WERROR=1'

-include $(shell find build -path build/clients-venv -prune -o -name '*.d' -type f -print 2>/dev/null)
