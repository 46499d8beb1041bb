#!/bin/bash
# Minimal CPU environment (no CUDA wheels) able to run reference.py / check.py / dump.py against
# vLLM 0.33.0's own KV-cache planning code.  Makes ./venv next to this script (git-ignored),
# about 2.2 GB, then runs check.py (expect "39 passed, 0 failed").
#
# vllm 0.33.0 is installed with --no-deps: its pins pull the CUDA torch 2.14.0 and the CUDA
# runtime wheels (GBs), none of which the planning code needs.  torch 2.13.0 CPU is used instead
# of the pinned 2.14.0; where pip's index serves a CUDA build of torch, install it first from
# https://download.pytorch.org/whl/cpu.  Only the pure-Python parts of the vllm wheel are used.
set -e
cd "$(dirname "$0")"
rm -rf venv
python3 -m venv venv
P=./venv/bin/pip
S=$(date +%s)
$P install -q torch==2.13.0                      # a CPU build of torch
$P install -q --no-deps vllm==0.33.0             # 336 MB wheel, pure-Python parts used only
$P install -q --no-deps xgrammar==0.2.8 llguidance==1.7.6 oss-harmony==0.0.11 apache-tvm-ffi==0.1.11 compressed-tensors==0.17.0
$P install -q loguru "transformers==5.20.2" pydantic cachetools psutil msgspec cloudpickle pyzmq \
    blake3 numpy regex tqdm pyyaml "huggingface_hub>=1.31" tokenizers safetensors \
    sentencepiece einops typing_extensions filelock requests partial-json-parser \
    prometheus_client openai "fastapi<0.137" py-cpuinfo cbor2 pybase64 ijson setproctitle \
    watchfiles python-json-logger opentelemetry-api opentelemetry-sdk aiohttp pillow uvloop \
    ninja
E=$(date +%s)
echo "install wall seconds: $((E-S))"
du -sh venv
./venv/bin/python -c "import torch; print('torch', torch.__version__)"
./venv/bin/python - <<'PY'
import time; t=time.time()
import vllm.v1.core.kv_cache_utils, vllm.v1.kv_cache_interface, vllm.v1.core.kv_cache_planning
print("import ok", round(time.time()-t,1), "s")
PY
# the real planning code on CPU torch (reference.py / check.py)
S=$(date +%s)
./venv/bin/python check.py > check_out.txt 2> check_err.txt || true
echo "check.py in venv: $(tail -1 check_out.txt) in $(( $(date +%s)-S )) s (table: check_out.txt)"
du -sh venv
