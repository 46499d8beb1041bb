"""Regenerate ``expected.json`` next to this file from transformers itself (``tests/hfref.py``).

Run from anywhere, with torch and transformers installed (the numbers in expected.json were made
with torch 2.13.0 and transformers 5.24.0, float32, eager attention):

    python tests/data/hf/small/generate.py

For every small config in this directory (real CPU tensors):

* ``params``: parameters, shared ones counted once;
* ``forward``: FlopCounterMode FLOPs of one forward at two lengths (one longer than the window
  and not a multiple of it, one shorter than the window) and batch 1 and 3; t5 rows have their
  own source (``seq``) and target (``tgt_seq``) lengths;
* ``visible_pairs``: per attention call (module path, in call order), the (query, key) entries
  the mask handed to eager attention leaves visible, per sequence, at both lengths (batch 1);
* ``decode`` (decoder-only types): a prefill shorter and one longer than the window, then
  one-token steps: key-tensor length and visible keys of the last query per layer and step,
  and the K/V length each cache layer holds at the end;
* ``layer_types`` and ``sliding_window`` as transformers derived them from the config.

For every published config in ``tests/data/hf/`` that this file covers: parameters on the meta
device, and the FLOPs of one forward of 128 tokens (batch 1).
"""

from __future__ import annotations

import json
import sys
import warnings
from pathlib import Path

HERE = Path(__file__).resolve().parent
sys.path.insert(0, str(HERE.parents[3]))

from tests import hfref  # noqa: E402

LONG, SHORT = 13, 4  # every small window is 5 or 6: 13 is past it and no multiple, 4 is inside
T5_LENGTHS = ((13, 7), (4, 9))  # (source, target): encoder and decoder lengths differ
BATCHES = (1, 3)
DECODE = ((3, 4), (8, 3))  # (prompt, generated tokens)
PUBLISHED = (
    "gemma-2-9b", "gemma-3-27b", "gemma-3-1b", "qwen3-8b", "olmo-2-7b", "phi-3-mini",
    "pythia-1.4b", "bert-base-uncased", "t5-base", "flan-t5-base", "mistral-7b-v0.1",
)
PUBLISHED_SEQ = 128


def small(path: Path) -> dict:
    config = hfref.load_config(path)
    model = hfref.build(config, "cpu")
    lengths = T5_LENGTHS if config.model_type == "t5" else ((LONG, None), (SHORT, None))
    entry = {
        "model_type": config.model_type,
        "class": type(model).__name__,
        "layer_types": getattr(model.config, "layer_types", None),
        "sliding_window": getattr(model.config, "sliding_window", None),
        "params": hfref.param_count(model),
        "forward": [
            {"seq": seq, "tgt_seq": tgt, "batch": batch,
             "flops": hfref.forward_flops(config, seq, batch, tgt, device="cpu")}
            for seq, tgt in lengths for batch in BATCHES
        ],
        "visible_pairs": [
            {"seq": seq, "tgt_seq": tgt, "pairs": hfref.visible_pairs(config, seq, 1, tgt)}
            for seq, tgt in lengths
        ],
    }
    if config.model_type not in ("bert", "t5"):
        entry["decode"] = [
            {"prompt": prompt, "gen": gen, **hfref.decode_cache_lengths(config, prompt, gen)}
            for prompt, gen in DECODE
        ]
    return entry


def published(name: str) -> dict:
    config = hfref.load_config(HERE.parent / f"{name}.json")
    model = hfref.build(config, "meta")
    entry = {
        "class": type(model).__name__,
        "params": hfref.param_count(model),
        "forward": {"seq": PUBLISHED_SEQ, "batch": 1,
                    "flops": hfref.forward_flops(config, PUBLISHED_SEQ)},
    }
    if config.model_type == "t5":
        # transformers 5 always ties T5's LM head to the shared embedding (T5Config.__post_init__);
        # a v1.1 checkpoint (tie_word_embeddings false) really has its own vocab x d_model head.
        entry["lm_head_tied_in_transformers"] = model.lm_head.weight is model.shared.weight
        entry["params_with_untied_lm_head"] = entry["params"] + model.lm_head.weight.numel()
    return entry


def main() -> None:
    import torch
    import transformers

    warnings.filterwarnings("ignore")
    transformers.logging.set_verbosity_error()
    expected = {
        "generated_with": {"torch": torch.__version__, "transformers": transformers.__version__},
        "small": {path.stem: small(path) for path in sorted(HERE.glob("*.json"))
                  if path.name != "expected.json"},
        "published": {name: published(name) for name in PUBLISHED},
    }
    (HERE / "expected.json").write_text(json.dumps(expected, indent=1) + "\n")


if __name__ == "__main__":
    main()
