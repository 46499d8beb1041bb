"""Record SGLang's own pool sizes for the cases of cases.py, per release, as JSON for flopcalc's
tests (`tests/data/serve/sglang_reference.json`, read by
`tests/engines/test_sglang_reference.py`).

    tools/sglang_reference/install.sh                                   # once
    /work/venvs/sglang/venv/bin/python tools/sglang_reference/dump.py   # writes the JSON

Each release runs in its own process (reference.py VERSION): its modules share names.
Refresh on a new release: add it to install.sh's VERSIONS and RELEASES here, re-run both.
"""
import json
import os
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
OUT = os.path.normpath(os.path.join(HERE, os.pardir, os.pardir, "tests", "data", "serve",
                                    "sglang_reference.json"))
RELEASES = ("0.4.9", "0.5.5", "0.5.23")

results = {}
for version in RELEASES:
    out = subprocess.run([sys.executable, os.path.join(HERE, "reference.py"), version],
                         check=True, capture_output=True, text=True).stdout
    results[version] = json.loads(out)
with open(OUT + ".tmp", "w") as f:
    json.dump({"source": "SGLang's own code on CPU (tools/sglang_reference/reference.py: "
               "ServerArgs' memory defaults, ModelRunner.profile_max_num_token, "
               "handle_max_mamba_cache and init_memory_pool up to the request pool, "
               "ModelConfig.get_num_kv_heads, the hybrid config classes and mamba_utils), "
               "with a stand-in device; installed from the package index with --no-deps",
               "releases": results}, f, indent=1)
    f.write("\n")
os.replace(OUT + ".tmp", OUT)
print(OUT, {v: len(r) for v, r in results.items()})
