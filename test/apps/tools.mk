# Test programs of test/test-tools.c: the native part of the stand-in torch (test/stand-ins/),
# built against the simulated runtime like test/apps/apps.mk's programs.

$(APPS_OUT)/libtool-steps.so: $(BUILD)/test/apps/tool-steps.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcudart.so.13 -ldl

TEST_DEPS += $(APPS_OUT)/libtool-steps.so
