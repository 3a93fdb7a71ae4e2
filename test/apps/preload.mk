# Programs for the preload tests: steps-app on the simulated runtime, and the same program
# linked against the toolkit's real libcudart (which, with no GPU, fails every call with 35).

$(APPS_OUT)/steps-app: $(BUILD)/test/apps/steps-app.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcudart.so.13 -ldl -lpthread

$(APPS_OUT)/steps-app-real: $(BUILD)/test/apps/steps-app.o
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< -L$(CUDA_HOME)/lib64 -Wl,-rpath,$(CUDA_HOME)/lib64 \
		-l:libcudart.so.13 -ldl -lpthread

TEST_DEPS += $(APPS_OUT)/steps-app $(APPS_OUT)/steps-app-real

# A program whose CUDA runtime is loaded RTLD_LOCAL, inside a plugin.
$(APPS_OUT)/local-plugin.so: $(BUILD)/test/apps/local-plugin.o $(FAKE_CUDART_LIB)
	$(call quiet,LD,$@)
	$(Q)$(CC) -shared $(LDFLAGS) -o $@ $< $(APPS_RPATH) -l:libcudart.so.13

$(APPS_OUT)/local-app: $(BUILD)/test/apps/local-app.o
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $< -ldl

TEST_DEPS += $(APPS_OUT)/local-plugin.so $(APPS_OUT)/local-app
