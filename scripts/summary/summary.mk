# gprof-summary (scripts/summary/): the library's end-of-window summary read back from trace
# files, --compare and --html. Built by `make` into $(BUILD)/gprof-summary.

SUMMARY_TOOL := $(BUILD)/gprof-summary
SUMMARY_OBJS := $(patsubst %.c,$(BUILD)/%.o,$(wildcard scripts/summary/*.c))

$(SUMMARY_TOOL): $(SUMMARY_OBJS) $(CORE_LIB)
	$(call quiet,LD,$@)
	$(Q)$(link_core)
$(SUMMARY_TOOL): LDLIBS := -lm $(LDLIBS)

all: $(SUMMARY_TOOL)
TEST_DEPS += $(SUMMARY_TOOL)
