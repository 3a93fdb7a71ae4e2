# gprof-run-wait (scripts/run-wait/): gprof-run's child that tells it whether the command
# exited or was killed by a signal. Built by `make` into $(BUILD)/gprof-run-wait.

RUN_WAIT := $(BUILD)/gprof-run-wait

$(RUN_WAIT): $(BUILD)/scripts/run-wait/main.o
	$(call quiet,LD,$@)
	$(Q)$(CC) $(LDFLAGS) -o $@ $^

all: $(RUN_WAIT)
TEST_DEPS += $(RUN_WAIT)
