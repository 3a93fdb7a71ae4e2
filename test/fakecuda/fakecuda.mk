# The simulated CUPTI: libfakegpu.so (the core, which the fake runtime and driver link too) and
# the fake libcupti.so.13 on top of it. Included by the top Makefile; see test/fakecuda/README.md.

FAKECUDA_OUT  := $(BUILD)/fakecuda
FAKEGPU_LIB   := $(FAKECUDA_OUT)/libfakegpu.so
FAKECUPTI_LIB := $(FAKECUDA_OUT)/libcupti.so.13

# <cupti.h> gives its declarations default visibility when CUPTI_LIB is defined.
$(BUILD)/test/fakecuda/cupti.o: CPPFLAGS += -DCUPTI_LIB

$(FAKEGPU_LIB): $(BUILD)/test/fakecuda/fakegpu.o test/fakecuda/libfakegpu.map
	$(call quiet,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libfakegpu.so \
		-Wl,--version-script=test/fakecuda/libfakegpu.map -o $@ $< -lpthread

$(FAKECUPTI_LIB): $(BUILD)/test/fakecuda/cupti.o test/fakecuda/libcupti.map $(FAKEGPU_LIB)
	$(call quiet,LD,$@)
	@mkdir -p $(@D)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libcupti.so.13 \
		-Wl,--version-script=test/fakecuda/libcupti.map -Wl,-rpath,'$$ORIGIN' \
		-o $@ $< -L$(FAKECUDA_OUT) -lfakegpu -ldl -lpthread

TEST_DEPS += $(FAKEGPU_LIB) $(FAKECUPTI_LIB)

# The simulated libnccl.so.2 (nccl.c): collectives that launch one kernel each on the runtime.
FAKE_NCCL_LIB := $(FAKECUDA_OUT)/libnccl.so.2

$(FAKE_NCCL_LIB): $(BUILD)/test/fakecuda/nccl.o $(FAKECUDA_OUT)/libcudart.so.13
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libnccl.so.2 -Wl,-rpath,'$$ORIGIN' \
		-o $@ $< -L$(FAKECUDA_OUT) -l:libcudart.so.13 -lpthread

TEST_DEPS += $(FAKE_NCCL_LIB)
