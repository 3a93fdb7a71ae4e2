#!/bin/sh
# make demo: runs scripts/demo/train.cu under libgprof with the default schedule, on the GPU
# when this machine has one, otherwise on the simulated GPU of test/fakecuda, and says which.
# Usage: demo.sh BUILD_DIR
set -eu
build=${1:-build}
out="$build/demo/traces"
rm -rf "$out"
if [ -x "$build/demo/train-gpu" ] && nvidia-smi -L >/dev/null 2>&1; then
	echo "demo: running on the GPU: $(nvidia-smi -L | head -n 1)"
	app="$build/demo/train-gpu"
else
	echo "demo: no GPU here: running on the simulated GPU (test/fakecuda), which times"
	echo "      kernels and copies with a model instead of running them"
	if ldd "$build/demo/train-sim" | grep -q 'fakecuda/libcudart'; then
		echo "      (on the simulation's own CUDA runtime)"
	else
		echo "      (on NVIDIA's CUDA runtime over a simulated driver)"
	fi
	app="$build/demo/train-sim"
	export GPROF_CUPTI_LIB="$PWD/$build/fakecuda/libcupti.so.13"
fi
GPROF_OUTPUT="$out" LD_PRELOAD="$PWD/$build/libgprof.so" "$app" 20
if [ "$app" = "$build/demo/train-sim" ]; then
	echo "demo: (the simulated GPU runs no kernel code, so the loss read back is 0)"
fi
trace=$(ls "$out"/*.pt.trace.json.gz 2>/dev/null | head -n 1)
if [ -z "$trace" ]; then
	echo "demo: no trace was written" >&2
	exit 1
fi
echo "demo: trace of steps 2-4: $trace"
echo "demo: open it at https://ui.perfetto.dev (Open trace file), in chrome://tracing,"
echo "      or with: tensorboard --logdir $out  (PyTorch profiler plugin)"
