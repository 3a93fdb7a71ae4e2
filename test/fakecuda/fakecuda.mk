# The simulated CUPTI: libfakegpu.so (the core, which the fake runtime and driver link too) and
# the fake libcupti.so.13 on top of it. Included by the top Makefile; see test/fakecuda/README.md.

FAKECUDA_OUT  := $(BUILD)/fakecuda
FAKEGPU_LIB   := $(FAKECUDA_OUT)/libfakegpu.so
FAKECUPTI_LIB := $(FAKECUDA_OUT)/libcupti.so.13

# <cupti.h> gives its declarations default visibility when CUPTI_LIB is defined.
$(BUILD)/test/fakecuda/cupti.o: CPPFLAGS += -DCUPTI_LIB -I$(BUILD)/test/fakecuda

# cuptiGetCallbackName's names, as CUPTI gives them: the callback id enums' own, from the headers.
CBID_NAMES := $(BUILD)/test/fakecuda/cbid-names.h
CBID_NAME   = sed -n 's/^ *CUPTI_$(1)_TRACE_CBID_\([a-z_][A-Za-z0-9_]*\) *= *\([0-9][0-9]*\).*/[\2] = "\1",/p'

$(CBID_NAMES): $(CUPTI_INC)/cupti_runtime_cbid.h $(CUPTI_INC)/cupti_driver_cbid.h
	$(call quiet,GEN,$@)
	@mkdir -p $(@D)
	$(Q){ echo '/* Made by fakecuda.mk from the toolkit headers. */'; \
	      echo '#define RUNTIME_CBID_NAMES \'; $(call CBID_NAME,RUNTIME) $< | sed 's/$$/ \\/'; echo; \
	      echo '#define DRIVER_CBID_NAMES \'; $(call CBID_NAME,DRIVER) $(word 2,$^) | sed 's/$$/ \\/'; echo; \
	    } >$@

$(BUILD)/test/fakecuda/cupti.o: $(CBID_NAMES)

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

# The simulated libnccl.so.2 (nccl.c): collectives that launch one kernel each through the
# process's driver; it links no CUDA runtime, so that it can go where the wheel's NCCL would.
FAKE_NCCL_LIB := $(FAKECUDA_OUT)/libnccl.so.2

$(FAKE_NCCL_LIB): $(BUILD)/test/fakecuda/nccl.o
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -Wl,-soname,libnccl.so.2 -o $@ $< -ldl -lpthread

TEST_DEPS += $(FAKE_NCCL_LIB)
