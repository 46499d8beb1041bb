#!/bin/sh
# Regenerate the pictures in docs/ (the README shows them): from the repository root,
# with the plot extra installed (pip install -e '.[plot]'), run: sh docs/make-pictures.sh
set -eu
cd "$(dirname "$0")/.."
flopcalc sweep gpt3 --seqs 1k..1M --plot docs/sweep-gpt3.png >/dev/null
flopcalc compare gpt3 llama-3.1-70b mixtral-8x7b deepseek-v3 --seq 8k --plot docs/compare.png >/dev/null
flopcalc infer llama-3.1-8b --prompt 32k --gen 8k --accelerator h100 --plot docs/infer-llama-3.1-8b.png >/dev/null
flopcalc memory llama-3.1-70b --count 64 --tp 8 --zero 3 --recompute selective --sequence-parallel --flash --accelerator h100 --plot docs/memory-llama-3.1-70b.png >/dev/null
