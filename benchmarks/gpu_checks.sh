#!/usr/bin/env bash
# The GPU checks as one prepared run, for a machine with a CUDA GPU (PyTorch and Triton
# installed): the Triton paged kernels against the torch reference, then the engine
# benchmark's CUDA section (decode against the bandwidth limit; the CPU sections are
# measured on CPU machines).
# Results land under $OUT (or ./gpu-out), one log per step.
#
# The engine benchmark imports the arbiter, which needs ortools and pydantic; a machine
# without them can be given wheels first, e.g. in a folder `.whl` installed with
#   python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
# (ortools, protobuf, absl-py, immutabledict, pydantic, pydantic-core, annotated-types,
# typing-inspection, networkx, pyyaml, typer, rich, safetensors; hypothesis, attrs and
# sortedcontainers for the tests' conftest).
set -uo pipefail
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
nvidia-smi > "$out/nvidia-smi.txt" 2>&1
python3 -c "import torch, triton; print(torch.__version__, triton.__version__, torch.cuda.get_device_name())" \
    > "$out/versions.txt" 2>&1
python3 -m pytest -q -p no:cacheprovider tests/engine/test_kernels_triton.py tests/engine/test_kernels.py \
    > "$out/triton_tests.txt" 2>&1
echo "triton tests exit $?" >> "$out/triton_tests.txt"
python3 benchmarks/bench_engine.py --cuda-only > "$out/bench_engine.txt" 2>&1
echo "bench exit $?" >> "$out/bench_engine.txt"
tail -n 3 "$out/triton_tests.txt" "$out/bench_engine.txt"
