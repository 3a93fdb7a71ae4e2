# Test programs of the reliability tests (test/test-reliability.c), built into $(APPS_OUT)
# against the simulated runtime like test/apps/apps.mk's.

REL_APPS := $(addprefix $(APPS_OUT)/,rel-nvtx rel-kernels rel-exit rel-fork rel-load rel-long)

$(REL_APPS): $(APPS_OUT)/%: $(BUILD)/test/apps/%.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcudart.so.13 $(LDLIBS_REL) -ldl -lpthread

# rel-kernels carries the C++ runtime (for libgprof's demangler) without using it itself.
$(APPS_OUT)/rel-kernels: LDLIBS_REL := -Wl,--no-as-needed -lstdc++ -Wl,--as-needed

TEST_DEPS += $(REL_APPS)
