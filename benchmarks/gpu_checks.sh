#!/usr/bin/env bash
# The GPU checks as one prepared run (minutes), for a machine with a CUDA GPU, PyTorch and
# Triton. Each step logs to its own file under $OUT (or ./gpu-out); a summary of every
# step's exit status and key figures goes to $OUT/results.txt.
#
#  1. the Triton paged kernels against the torch reference on CUDA (fp32, fp16, bf16 and
#     an fp8 KV pool; decode and paged context);
#     the fused decoder kernels against the torch ops they replace (fp32/fp16/bf16) and a
#     whole model's greedy tokens with them on and off, the decode kernel with RoPE and the
#     K/V store against the two launches it replaces, and mixed steps' decode rows through
#     the Triton decode kernel; then the three Triton paged decode kernels (grouped: one
#     program per KV head; grouped-dot: the same with tl.dot; per-head) side by side on
#     the ~0.5B model's attention shape, us per call and KV GB/s (bench_decode_kernel.py):
#     every later step runs with the one fastest at batch 128 (per-head if the default
#     disagrees or fails), a grouped one in its fastest shape (keys per step, warps);
#  2. decode of a ~0.5B random Llama in bf16 at batch 1, 32 and 128, eager, replayed from
#     CUDA graphs, and replayed in 8-step decode windows (num_scheduler_steps 8) chained
#     and one at a time, with the fused kernels (RMSNorm+residual, SiLU-mul, RoPE + store,
#     in decode steps inside the decode kernel) on and
#     off, as a fraction of the memory-bandwidth limit, with the per-step breakdown, the
#     CUDA kernels per decode step with and without fusion (torch profiler), and the bf16
#     divergence diagnosis: eager/graph tokens with prefix caching off and on, fresh
#     engines, first-divergence positions (bench_engine.py --cuda-only);
#  3. token identity on CUDA: greedy tokens of the engine equal transformers' on CUDA for
#     Llama, Mistral (sliding window) and Qwen2, block sizes 16/32, chunking, reuse; with
#     CUDA graphs on and off (enforce_eager), over several captured batch sizes; and no
#     host sync inside a decode forward, eager or captured;
#  4. the request-stream benchmark against transformers on CUDA (bench_stream.py), and its
#     mixed stream again with 8-step decode windows;
#  5. the slow-marked rest of step 1's kernel tests (the whole kernel matrix, the fused
#     model), time allowing.
#
# One call of a device machine may last 600 s: GPU_CHECKS_BUDGET_S (default 570) caps the
# run, each step's limit clipped to what is left, a step with under 20 s left skipped.
#
# `benchmarks/gpu_checks.sh --dry-run` runs the same steps on a machine without a GPU, small:
# the CUDA tests (which skip there), the CUDA decode section's code on the CPU (small model,
# static decode steps without capture) and a 4-request stream on the CPU; it proves the script, its commands and its results file
# work, not the GPU figures.
#
# The benchmarks import the arbiter, which needs ortools and pydantic; a machine without
# them can be given wheels first, e.g. in a folder `.whl` installed with
#   python3 -m pip install --no-index --no-deps --target /tmp/site .whl/*.whl
#   export PYTHONPATH=/tmp/site
# (ortools, protobuf, absl-py, immutabledict, pydantic, pydantic-core, annotated-types,
# typing-inspection, networkx, pyyaml, typer, rich, safetensors, tokenizers; hypothesis,
# attrs and sortedcontainers for the tests' conftest).
set -uo pipefail
dry=0
if [ "${1:-}" = "--dry-run" ]; then
    dry=1
fi
cd "$(dirname "$0")/.."
out=${OUT:-gpu-out}
mkdir -p "$out"
export PYTHONPATH="${PYTHONPATH:+$PYTHONPATH:}$PWD"
results="$out/results.txt"
: > "$results"

# The whole run's budget in seconds (GPU_CHECKS_BUDGET_S, default 570: a device call may
# last 600): no step runs past it, and a step with under 20 s left is skipped, so the
# results file is complete for every step that ran however the time falls.
budget=${GPU_CHECKS_BUDGET_S:-570}

step() {  # step NAME TIMEOUT_S COMMAND...: run, log, record the exit status; a dry run
    # allows four times as long (the CPU stands in for the GPU, often on a shared machine)
    local name=$1 limit=$2
    shift 2
    if [ "$dry" = 1 ]; then
        limit=$((limit * 4))
    else
        local left=$((budget - SECONDS))
        if [ "$left" -lt 20 ]; then
            echo "== $name: skipped, ${left} s of the ${budget} s budget left" >> "$results"
            return 0
        fi
        if [ "$left" -lt "$limit" ]; then
            limit=$left
        fi
    fi
    local start=$SECONDS
    timeout "$limit" "$@" > "$out/$name.txt" 2>&1
    local rc=$?
    echo "== $name: exit $rc in $((SECONDS - start)) s" >> "$results"
    return 0
}

summary() {  # pytest's count line (a library may print after it at exit)
    grep -E "[0-9]+ (passed|failed|skipped|error)" "$1" | tail -n 1 >> "$results"
}

if [ "$dry" = 1 ]; then
    echo "dry run: no GPU expected; CPU stand-ins for the CUDA steps" >> "$results"
    python3 -c "import torch; print('torch', torch.__version__, 'cuda', torch.cuda.is_available())" \
        >> "$results" 2>&1
    stream_args=(--device cpu --requests 4 --batch 4 --streams mixed)
    decode_args=(--cuda-only --cuda-smoke-cpu)
    kernel_args=(--cpu-smoke)
else
    nvidia-smi > "$out/nvidia-smi.txt" 2>&1
    python3 -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__, torch.cuda.get_device_name())" \
        >> "$results" 2>&1
    stream_args=(--device cuda --requests 48 --batch 16)
    decode_args=(--cuda-only)
    kernel_args=()
fi

# The kernel tests of the default run first (a pairwise cover of the kernel matrix); the
# slow-marked rest of it (the whole product, the fused model) at the end, time allowing.
kernel_tests=(tests/engine/test_kernels_triton.py tests/engine/test_kernels.py
    tests/engine/test_triton_fused.py tests/engine/test_triton_views.py
    tests/engine/test_kernels_rope_store_decode.py tests/engine/test_kernels_mixed_triton.py)
step triton_kernels 200 python3 -m pytest -p no:cacheprovider "${kernel_tests[@]}"
summary "$out/triton_kernels.txt"

step decode_kernels 120 python3 benchmarks/bench_decode_kernel.py "${kernel_args[@]}"
sed -n '2,$p' "$out/decode_kernels.txt" | grep -vE "leaked|nanobind|refleaks" >> "$results"
# The later steps run with the decode kernel that was faster at batch 128 (the default,
# "grouped", unless "per-head" won).
faster=$(sed -n 's/^faster at batch [0-9]*: //p' "$out/decode_kernels.txt" | tail -n 1)
if [ "$faster" = "per-head" ] || [ "$faster" = "grouped-dot" ]; then
    export ENGINE_TRITON_DECODE=$faster
fi
if [ "$faster" != "per-head" ]; then
    # and that grouped kernel's fastest shape there (keys per step, warps)
    shape=$(sed -n 's/^best [a-z-]* shape at batch [0-9]*: keys \([0-9]*\) warps \([0-9]*\)$/\1 \2/p' \
        "$out/decode_kernels.txt" | tail -n 1)
    if [ -n "$shape" ]; then
        export ENGINE_TRITON_DECODE_KEYS=${shape% *} ENGINE_TRITON_DECODE_WARPS=${shape#* }
    fi
fi
echo "decode kernel for the later steps: ${ENGINE_TRITON_DECODE:-grouped}" \
    "(keys ${ENGINE_TRITON_DECODE_KEYS:-default}, warps ${ENGINE_TRITON_DECODE_WARPS:-default})" \
    >> "$results"

# Fused kernels are off by default until they have passed here; this script turns them on
# (ENGINE_FUSED_OPS=1 below). Should identity fail, the same tests with them
# off tell whether fusion (float32 rounding) or something else moved a token.
export ENGINE_FUSED_OPS=1
# The decode figures first (the issue's goal), so that a run cut short still has them.
step decode_bandwidth 420 python3 benchmarks/bench_engine.py "${decode_args[@]}"
sed -n '/\[4\]/,$p' "$out/decode_bandwidth.txt" >> "$results"

step token_identity 240 python3 -m pytest -p no:cacheprovider tests/engine/test_cuda_identity.py
summary "$out/token_identity.txt"
if grep -qE "^== token_identity: exit [1-9]" "$results"; then
    step token_identity_unfused 240 env ENGINE_FUSED_OPS=0 \
        python3 -m pytest -p no:cacheprovider tests/engine/test_cuda_identity.py
    summary "$out/token_identity_unfused.txt"
fi

step request_stream 300 python3 benchmarks/bench_stream.py "${stream_args[@]}"
grep -E "stream|at once|/s " "$out/request_stream.txt" >> "$results"
# The mixed stream again with 8-step decode windows (they run where no request waits)
step request_stream_windows 200 python3 benchmarks/bench_stream.py "${stream_args[@]}" \
    --streams mixed --num-scheduler-steps 8
grep -E "mixed|windows" "$out/request_stream_windows.txt" >> "$results"

step triton_kernels_slow 240 python3 -m pytest -p no:cacheprovider -m slow "${kernel_tests[@]}"
summary "$out/triton_kernels_slow.txt"

cat "$results"
# Non-zero when a step failed, so a caller (or CI's dry run) notices.
! grep -qE "^== .*: exit [1-9]" "$results"
