# The GPU suite (test/gpu/README.md), included by the top Makefile.
#   make test-gpu      runs it on this machine's GPU; without one prints "skipped: no GPU" only
#   make gpu-carry     libgprof.so and the libjansson.so.4 it needs, in build/gpu-carry/, to
#                      carry to a GPU machine that has no jansson
#   make test-gpu-sim  cases 1, 8 and 9 on the simulated GPU: tries the suite's checks without one

GPU_SUITE := test/gpu/run.py
GPU_CARRY := build/gpu-carry
# Asked only when test-gpu is a goal: without a GPU it builds nothing.
HAVE_GPU   = $(shell nvidia-smi -L >/dev/null 2>&1 && echo y)

.PHONY: test-gpu gpu-carry test-gpu-sim

# The runner exits 77 without a GPU; make cannot pass 77 on (it exits 0, 1 or 2), so a skip
# is a success here and the runner's one line says what happened.
test-gpu: $(if $(filter test-gpu,$(MAKECMDGOALS)),$(if $(HAVE_GPU),$(LIB)))
	$(Q)python3 $(GPU_SUITE) --lib $(LIB) --out $(BUILD)/gpu; rc=$$?; \
		if [ $$rc -eq 77 ]; then rc=0; fi; exit $$rc

gpu-carry: $(LIB)
	$(call quiet,CP,$(GPU_CARRY))
	$(Q)mkdir -p $(GPU_CARRY)
	$(Q)cp $(LIB) $(GPU_CARRY)/libgprof.so
	$(Q)cp -L $$(ldd $(LIB) | awk '/libjansson/ { print $$3 }') $(GPU_CARRY)/

# Also compiles every program and script of the suite, which is all a machine without a GPU
# can do with the rest.
test-gpu-sim: $(LIB) $(FAKE_CUDART_LIB) $(FAKECUPTI_LIB)
	$(Q)mkdir -p $(BUILD)/gpu-sim
	$(Q)for f in test/gpu/*.cu; do $(CUDA_HOME)/bin/nvcc -cudart shared -c \
		-o $(BUILD)/gpu-sim/$$(basename $$f .cu).o $$f || exit 1; done
	$(Q)python3 -c 'import sys; [compile(open(f).read(), f, "exec") for f in sys.argv[1:]]' \
		test/gpu/*.py
	$(Q)python3 $(GPU_SUITE) --lib $(LIB) --out $(BUILD)/gpu-sim --sim $(BUILD) --only 1,8,9
	$(Q)python3 test/gpu/selftest.py $(BUILD)/gpu-sim/case-1/traces
