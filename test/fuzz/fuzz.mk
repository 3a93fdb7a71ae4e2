# libFuzzer targets (test/fuzz/): the configuration parser, the step-marker matcher and the
# JSON string escaper. `make fuzz` builds them with clang into build/fuzz/ and runs each for
# FUZZ_SECONDS (default 30) from its seed corpus in test/fuzz/corpus/<target>/; what it finds
# goes to build/fuzz/corpus-<target>/, a crash to build/fuzz/ (crash-<sha1>, with the input).

FUZZ_CC      ?= clang
FUZZ_SECONDS ?= 30
FUZZ_OUT     := build/fuzz
FUZZ_CFLAGS  := -g -O1 -std=gnu11 -fsanitize=fuzzer,address,undefined \
		-fno-sanitize-recover=all -I. -I$(CUDA_INC) -I$(CUPTI_INC) -D_GNU_SOURCE
FUZZ_TARGETS := config marker escape

$(FUZZ_OUT)/fuzz-config: test/fuzz/fuzz-config.c common/config.c common/log.c common/thread.c
$(FUZZ_OUT)/fuzz-marker: test/fuzz/fuzz-marker.c scheduler/marker.c
$(FUZZ_OUT)/fuzz-escape: test/fuzz/fuzz-escape.c export/json.c common/heap.c

$(FUZZ_OUT)/fuzz-%:
	$(call quiet,FUZZ,$@)
	@mkdir -p $(@D)
	$(Q)$(FUZZ_CC) $(FUZZ_CFLAGS) -o $@ $^ -ljansson

.PHONY: fuzz
fuzz: $(FUZZ_TARGETS:%=$(FUZZ_OUT)/fuzz-%)
	$(Q)for t in $(FUZZ_TARGETS); do \
		mkdir -p $(FUZZ_OUT)/corpus-$$t && \
		$(FUZZ_OUT)/fuzz-$$t -max_total_time=$(FUZZ_SECONDS) -print_final_stats=1 \
			-artifact_prefix=$(FUZZ_OUT)/ $(FUZZ_OUT)/corpus-$$t \
			test/fuzz/corpus/$$t || exit 1; \
	done
