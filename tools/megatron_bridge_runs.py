"""Published Megatron-Bridge training runs as data: every row of its performance pages.

    python tools/megatron_bridge_runs.py PAGE.md [PAGE.md ...] > tests/data/training/megatron-bridge.json

PAGE is `docs/performance-summary.md` or `docs/performance-summary-archive.md` of
NVIDIA-NeMo/Megatron-Bridge (a clone of the repository; the commit is written into the output
with `--commit`). Each table row becomes one run: the release section, the kind of run
(pre-training, SFT, LoRA), model, system, precision, batch sizes, sequence length, FSDP, TP, PP,
CP, VP, EP and the measured tokens/s and model TFLOP/s per GPU. A cell written `A (B)` holds two
runs (the page's parentheses: another quantisation granularity or another layout); both are
kept, the second marked `variant: 1`. Nothing is computed here: the figures are the page's.
"""

from __future__ import annotations

import json
import re
import sys
from typing import Any, Optional

FIELDS = {"Model": "model", "System": "system", "#-GPUs": "gpus", "Precision": "precision",
          "GBS": "global_batch", "MBS": "micro_batch", "Sequence Length": "seq",
          "FSDP": "fsdp", "TP": "tp", "PP": "pp", "CP": "cp", "VP": "vp", "EP": "ep",
          "GA": "grad_accumulation", "Tokens / sec / GPU": "tokens_per_second_per_gpu",
          "Model TFLOP / sec / GPU": "model_tflops_per_gpu"}
NUMBERS = set(FIELDS.values()) - {"model", "system", "precision"}
KINDS = {"Pre-Training": "pretrain", "SFT": "sft", "LoRA": "lora", "Fine-Tuning": "sft"}


def _cell(text: str) -> tuple[str, Optional[str], list[str]]:
    """A cell's value, its parenthesised alternative, and the footnotes it cites."""
    notes = re.findall(r"\[\^([^\]]+)\]", text)
    text = re.sub(r"\[\^[^\]]+\]", "", text).strip()
    m = re.fullmatch(r"(.*?)\s*\((.*)\)", text)
    if m and not m.group(1).endswith("w/o MTP") and "MTP" not in m.group(2):
        return m.group(1).strip(), m.group(2).strip(), notes
    return text, None, notes


def _value(name: str, text: str) -> Any:
    if name in NUMBERS:
        return None if text.lower() in ("n/a", "", "-") else int(text.replace(",", ""))
    return text


def parse(page: str, source: str) -> list[dict[str, Any]]:
    runs: list[dict[str, Any]] = []
    release = kind = None
    heading: dict[str, str] = {}
    header: list[str] = []
    for line in page.splitlines():
        if m := re.match(r"## (\S+) NeMo Container", line):
            release, kind, heading = m.group(1), None, {}
        elif m := re.match(r"### (.+?) Performance", line):
            kind, heading = KINDS.get(m.group(1).strip(), m.group(1).strip()), {}
        elif m := re.match(r"#### (Model|System): (.+)", line):
            heading = {FIELDS[m.group(1)]: m.group(2).strip()}
        elif line.startswith("|") and release and kind:
            cells = [c.strip() for c in line.strip().strip("|").split("|")]
            if set("".join(cells)) <= set("-: "):
                continue
            if "GBS" in cells:
                header = [FIELDS[c] for c in cells]
                continue
            split = [_cell(c) for c in cells]
            variants = 2 if any(alt is not None for _, alt, _ in split) else 1
            for v in range(variants):
                run: dict[str, Any] = {"release": release, "kind": kind, **heading}
                notes: list[str] = []
                for name, (value, alt, cited) in zip(header, split):
                    run[name] = _value(name, alt if v and alt is not None else value)
                    notes += cited
                run["variant"] = v
                run["footnotes"] = sorted(set(notes))
                run["source"] = source
                runs.append(run)
    return runs


def main(argv: list[str]) -> None:
    commit = ""
    if "--commit" in argv:
        i = argv.index("--commit")
        commit = argv[i + 1]
        del argv[i:i + 2]
    runs = []
    for path in argv:
        name = "docs/" + path.rsplit("/", 1)[-1]
        runs += parse(open(path, encoding="utf-8").read(),
                      f"NVIDIA-NeMo/Megatron-Bridge {name}" + (f" at {commit}" if commit else ""))
    doc = {"description": "Megatron-Bridge's published training throughput, one row of its "
                          "performance pages per run (tools/megatron_bridge_runs.py). MoE "
                          "runs are force-balanced and dropless (the pages' note).",
           "runs": runs}
    json.dump(doc, sys.stdout, indent=1)
    sys.stdout.write("\n")


if __name__ == "__main__":
    main(sys.argv[1:])
