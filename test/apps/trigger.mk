# The trigger tests' program (test/test-trigger.c), on the simulated runtime like steps-app.

$(APPS_OUT)/trig-app: $(BUILD)/test/apps/trig-app.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcudart.so.13 -ldl -lpthread

TEST_DEPS += $(APPS_OUT)/trig-app
