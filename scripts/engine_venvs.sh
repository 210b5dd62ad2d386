#!/usr/bin/env bash
# Throwaway virtual environments holding vLLM 0.33.0 (or 0.24.0) and SGLang 0.5.23 (or
# 0.5.16) for scripts/extract_fields.py and benchmarks/oracle_{vllm,sglang}.py
# (docs/engines.md). Run from the repository root (the 0.5.16 check imports benchmarks/).
# They reuse the system's CPU torch, transformers and pydantic (--system-site-packages)
# and install every engine and import dependency with --no-deps: the engines' full
# dependency sets pull CUDA wheels that are of no use on a CPU machine.
# Usage: scripts/engine_venvs.sh [DIR] [WHICH]   (default /tmp: /tmp/v-vllm, /tmp/v-sglang)
#   WHICH: all (default), vllm, vllm-0.24 (/tmp/v-vllm-0.24: vLLM 0.24.0, the same
#   packages), sglang, or sglang-0.5.16 (/tmp/v-sglang-0.5.16: SGLang 0.5.16, the same
#   packages plus the transformers, tokenizers and huggingface-hub its wheel pins, which
#   the system's newer ones do not satisfy); one engine's venv only, so two people never
#   write the same one
set -euo pipefail
DIR=${1:-/tmp}
WHICH=${2:-all}

VLLM_PKGS="vllm==0.33.0 cbor2 psutil pyzmq aiohttp multidict yarl propcache aiohappyeyeballs
  aiosignal frozenlist openai-harmony openai msgspec pybase64 cachetools uvloop xgrammar
  apache-tvm-ffi partial-json-parser llguidance compressed-tensors loguru frozendict
  sentencepiece blake3 tiktoken lark mistral_common einops depyf python-json-logger ijson
  setproctitle prometheus-fastapi-instrumentator outlines_core lm-format-enforcer interegular"
SGLANG_PKGS="sglang==0.5.23 psutil pybase64 msgspec pyzmq aiohttp multidict yarl propcache
  aiohappyeyeballs aiosignal frozenlist dill apache-tvm-ffi sentencepiece compressed-tensors
  loguru gguf setproctitle einops interegular llguidance xgrammar openai openai-harmony
  partial_json_parser python-multipart tiktoken uvloop xxhash zstandard blobfile easydict
  distro cachetools"

vllm_venv() {  # vllm_venv NAME VERSION
  python3 -m venv --system-site-packages "$DIR/$1"
  "$DIR/$1/bin/pip" install -q --no-deps ${VLLM_PKGS/vllm==0.33.0/vllm==$2}
  VLLM_TARGET_DEVICE=cpu "$DIR/$1/bin/python" -c "import vllm.engine.arg_utils"
  echo "ready: $DIR/$1"
}
case "$WHICH" in all | vllm) vllm_venv v-vllm 0.33.0 ;; esac
case "$WHICH" in vllm-0.24) vllm_venv v-vllm-0.24 0.24.0 ;; esac
case "$WHICH" in all | sglang)
  python3 -m venv --system-site-packages "$DIR/v-sglang"
  "$DIR/v-sglang/bin/pip" install -q --no-deps $SGLANG_PKGS
  # torchvision is deliberately absent: its wheel is a CUDA build (see oracle_sglang.py).
  "$DIR/v-sglang/bin/python" -c "from sglang.srt.server_args import ServerArgs"
  echo "ready: $DIR/v-sglang"
  ;;
esac
case "$WHICH" in sglang-0.5.16)
  python3 -m venv --system-site-packages "$DIR/v-sglang-0.5.16"
  # sglang 0.5.16's wheel pins transformers==5.12.1, which wants tokenizers <= 0.23.0 and
  # huggingface-hub < 2 (its dependency_versions_check refuses the newer system ones)
  "$DIR/v-sglang-0.5.16/bin/pip" install -q --no-deps ${SGLANG_PKGS/sglang==0.5.23/sglang==0.5.16} \
    transformers==5.12.1 tokenizers==0.22.2 "huggingface-hub==1.*"
  # 0.5.16's server_args imports torchvision at module level: check through the oracle's
  # CPU shims (benchmarks/oracle_sglang.py install_cpu_shims)
  "$DIR/v-sglang-0.5.16/bin/python" -c "import sys; sys.path.insert(0, 'benchmarks')
import oracle_sglang as o; o.install_cpu_shims()
from sglang.srt.server_args import ServerArgs"
  echo "ready: $DIR/v-sglang-0.5.16"
  ;;
esac
