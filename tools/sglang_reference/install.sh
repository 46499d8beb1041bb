#!/bin/bash
# Environment able to run reference.py / dump.py against SGLang's own memory-pool code, one
# release per folder.  No GPU and no CUDA wheels: only SGLang's pure-Python source is used
# (installed from the package index with --no-deps), plus torch (any CPU build), numpy,
# transformers and regex, which the code run touches (torch._utils._element_size and the
# dtypes, numpy.prod in mamba_utils, the hybrid config classes).
#
#   tools/sglang_reference/install.sh            # venv in /work/venvs/sglang (SGLANG_VENV)
#   REUSE_SITE=/path/to/site-packages tools/sglang_reference/install.sh
#                                                # borrow an environment's torch, transformers
#
# Makes $SGLANG_VENV/venv and $SGLANG_VENV/sglang-<version> for each release in VERSIONS
# (16 MB for 0.4.9, 34 MB for 0.5.5, 223 MB for 0.5.23), outside the work tree.
set -e
HERE=$(cd "$(dirname "$0")" && pwd)
VENV=${SGLANG_VENV:-/work/venvs/sglang}
VERSIONS=${VERSIONS:-"0.4.9 0.5.5 0.5.23"}
mkdir -p "$VENV"
[ -x "$VENV/venv/bin/python" ] || python3 -m venv "$VENV/venv"
SITE=$("$VENV/venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [ -n "$REUSE_SITE" ]; then
    echo "$REUSE_SITE" > "$SITE/zz_reuse.pth"
else
    # a CPU build of torch where the index serves one; transformers and regex: the hybrid
    # models' config classes (Qwen3-Next, Nemotron-H) subclass PretrainedConfig
    "$VENV/venv/bin/pip" install -q torch==2.13.0 numpy transformers regex
fi
for v in $VERSIONS; do
    [ -d "$VENV/sglang-$v/sglang" ] && continue
    "$VENV/venv/bin/pip" install -q --no-deps --target "$VENV/sglang-$v" "sglang==$v"
done
"$VENV/venv/bin/python" -c "import torch, numpy; print('torch', torch.__version__)"
# SGLang's code on every case: compare with nothing, just show it runs (dump.py records it)
for v in $VERSIONS; do
    "$VENV/venv/bin/python" "$HERE/reference.py" "$v" --summary
done
