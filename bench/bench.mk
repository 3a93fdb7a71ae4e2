# `make bench`: libgprof's performance figures (docs/PERFORMANCE.md), built into $(BUILD)/bench/.

BENCH_OUT  := $(BUILD)/bench
BENCH_STUB := $(BENCH_OUT)/stub/libcudart.so.13
BENCH_BINS := $(BENCH_OUT)/bench $(BENCH_OUT)/hook-loop $(BENCH_OUT)/steps-loop
# B4 on NVIDIA's runtime over the simulated driver, too, where that runs.
BENCH_BINS += $(if $(REAL_RUNTIME),$(BENCH_OUT)/steps-loop-real)
BENCH_OBJS := $(addprefix $(BUILD)/bench/,bench.o run.o export-bench.o)

.PHONY: bench

# The runtime whose calls cost nothing, under the real soname and version node.
$(BENCH_STUB): $(BUILD)/bench/stub-cudart.o bench/stub-cudart.map
	$(call quiet,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libcudart.so.13 \
		-Wl,--version-script=bench/stub-cudart.map -o $@ $<

# Its programs are linked as test/apps/apps.mk links the test programs (link_app): hook-loop
# against the stub, steps-loop against the simulated GPU, steps-loop-real from the same object
# against NVIDIA's runtime (no pattern names its object, hence its own rule).
$(BENCH_OUT)/%: $(BENCH_OUT)/%.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(link_app)

$(BENCH_OUT)/hook-loop: $(BENCH_STUB)
$(BENCH_OUT)/hook-loop: APP_LIBS = -Wl,-rpath,'$$ORIGIN/stub' -L$(BENCH_OUT)/stub \
				   -l:libcudart.so.13 -lz

$(BENCH_OUT)/steps-loop-real: $(BENCH_OUT)/steps-loop.o $(FAKE_DRIVER)
	$(call quiet,LD,$@)
	$(Q)$(link_app)
$(BENCH_OUT)/steps-loop-real: APP_LIBS = $(REAL_RPATH) -l:libcudart.so.13

$(BENCH_OUT)/bench: $(BENCH_OBJS) $(CORE_LIB)
	$(call quiet,LD,$@)
	$(Q)$(link_core)

bench: $(LIB) $(BENCH_BINS) $(FAKECUPTI_LIB) $(FAKE_DRIVER)
	$(Q)$(BENCH_OUT)/bench $(BUILD)
