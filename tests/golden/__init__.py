"""What every preset and every model type of the zoo printed before a change, to prove a
refactor changes none of it.

- `tests/data/golden/PRESET.json` holds, for each preset, every number of the JSON reports of
  `model` (full and causal), `infer`, `memory` (two layouts), `conventions` and `sweep` (full
  and causal), flattened to dotted keys (`model_full.params.total`,
  `sweep_causal.rows.3.attention`);
- `tests/data/golden/text/PRESET.json`, every string of the same reports: the "how this was
  counted" lines, the notes, the layers' descriptions. They are what a user reads to know how a
  figure was counted, so a change of wording is made on purpose, never by accident;
- `tests/data/golden/workflows/PRESET.json.gz`, numbers and strings of the commands built on
  the counts: `mfu`, `train`, `step`, `plan`, `serve`, `memory` with adapters and with
  offloading, `infer` with scaled weights;
- `tests/data/golden/zoo/TYPE.json.gz` (gzipped), numbers and strings of `model` (and over
  two images), `conventions`, `memory`, `infer`, `step` and `serve` for the shrunk default
  config of every model type of the sweep (`tests/data/zoo/`, as transformers saves it).
  Presets cover the kinds of the published models; these cover the kinds only the zoo has
  (mixtures of attention heads, short convolutions, audio front ends, image processors),
  whose parameters and FLOPs `tests/hf/test_recorded_model_types.py` holds to PyTorch's and
  whose layout, placements and wording only this file holds.

A change that is meant to move a figure or a line rewrites the files with `python -m
tests.golden` (or `python -m tests.golden NAME ...`) and says why in its commit; the test that
compares is `tests/golden/test_snapshot.py`.
"""

from __future__ import annotations

import functools
import json
import sys
from pathlib import Path
from typing import Any, Callable, Iterator

GOLDEN = Path(__file__).resolve().parents[1] / "data" / "golden"
ZOO = Path(__file__).resolve().parents[1] / "data" / "zoo"


def leaves(doc: Any, prefix: str = "") -> Iterator[tuple[str, Any]]:
    """Every leaf of a JSON document with its dotted key; list items by their `name` when they
    have unique ones (rows of parts: their order is presentation), else by index."""
    if isinstance(doc, dict):
        for key, value in doc.items():
            yield from leaves(value, f"{prefix}{key}.")
    elif isinstance(doc, list):
        names = [v.get("name") if isinstance(v, dict) else None for v in doc]
        named = None not in names and len(set(names)) == len(names)
        for i, value in enumerate(doc):
            yield from leaves(value, f"{prefix}{names[i] if named else i}.")
    else:
        yield prefix[:-1], doc


def numbers(doc: Any) -> Iterator[tuple[str, Any]]:
    """Every number (and null) of a JSON document with its dotted key."""
    for key, value in leaves(doc):
        if value is None or (isinstance(value, (int, float)) and not isinstance(value, bool)):
            yield key, value


def strings(doc: Any) -> Iterator[tuple[str, Any]]:
    """Every string and boolean of a JSON document with its dotted key."""
    for key, value in leaves(doc):
        if isinstance(value, (str, bool)):
            yield key, value


def runs(name: str) -> dict[str, Any]:
    """The reports recorded for one preset (decoder-only ones get `infer` too)."""
    import flopcalc

    spec = flopcalc.load(name).spec
    out = {
        "model_full": flopcalc.model(name),
        "model_causal": flopcalc.model(name, attention="causal", seq="8k", batch=2),
        "model_elementwise": flopcalc.model(name, attention="causal", seq="3k",
                                            elementwise=True),
        "conventions": flopcalc.conventions(name),
        "sweep_full": flopcalc.sweep(name, seqs="1k..64k"),
        "sweep_causal": flopcalc.sweep(name, seqs="100..70k", points=9, attention="causal"),
        # a preset whose kinds these commands cannot count records the one line they print
        "memory_plain": _attempt(lambda: flopcalc.memory(name, seq="2k", accelerator="h100")),
        "memory_split": _attempt(lambda: split_memory(name)),
    }
    if spec.architecture == "decoder-only":
        out["infer"] = _attempt(lambda: flopcalc.infer(name, prompt="6k", gen="3k", batch=3,
                                                       accelerator="h100", count=8))
    return out


class _Refusal:
    """A command's one-line refusal, recorded as `reports` records one."""

    def __init__(self, error: str):
        self.error = error

    def to_dict(self) -> dict[str, Any]:
        return {"error": self.error}


def _attempt(call: Callable[[], Any]) -> Any:
    import flopcalc

    try:
        return call()
    except flopcalc.FlopcalcError as exc:
        return _Refusal(str(exc))


def reports(calls: dict[str, Callable[[], Any]]) -> dict[str, Any]:
    """Each call's report as JSON; a command that refuses the model records its one-line
    error, which is part of what the user is told."""
    import flopcalc

    out: dict[str, Any] = {}
    for run, call in calls.items():
        try:
            out[run] = call().to_dict()
        except flopcalc.FlopcalcError as exc:
            out[run] = {"error": str(exc)}
    return out


def workflow_runs(name: str) -> dict[str, Any]:
    """The commands that build on the counts (throughput, time, layouts, serving, memory under
    adapters, quantised weights), for `tests/data/golden/workflows/`."""
    import flopcalc

    calls: dict[str, Callable[[], Any]] = {
        "mfu": lambda: flopcalc.mfu(name, tokens_per_second=3900, per_device=True,
                                    accelerator="h100", count=8, seq=4096,
                                    recompute="selective"),
        "train": lambda: flopcalc.train(name, mfu=0.4, accelerator="h100", count=64, price=2),
        "step": lambda: flopcalc.step(name, seq=4096, tp=2, pp=2, dp=2, global_batch=32,
                                      micro_batch=1, accelerator="h100", zero=1,
                                      recompute="selective", sequence_parallel=True,
                                      tokens="1T", price=2),
        "plan": lambda: flopcalc.plan(name, seq=4096, global_batch=64, accelerator="h100",
                                      count=16, top=3),
        "serve": lambda: flopcalc.serve(name, accelerator="h200", prompt=600, gen=200,
                                        batch=8, max_model_len=1024),
        "serve_tp": lambda: flopcalc.serve(name, accelerator="h200", count=8, tp=8,
                                           weights_dtype="fp8", kv_dtype="fp8", prompt=600,
                                           gen=200, batch=8, max_model_len=1024),
        # pipeline stages over a network: the activations each stage sends the next
        "serve_pp": lambda: flopcalc.serve(name, accelerator="h100", count=4, tp=2, pp=2,
                                           network="dgx-h100", weights_dtype="fp8",
                                           prompt=600, gen=200, batch=8, max_model_len=1024),
        # experts split over devices, a shared prompt prefix, a draft model's speculation
        "serve_ep": lambda: flopcalc.serve(name, accelerator="h200", count=8, tp=2, ep=4,
                                           dp=4, weights_dtype="fp8", prompt=600, gen=200,
                                           batch=8, max_model_len=1024, shared_prefix=300),
        "serve_draft": lambda: flopcalc.serve(name, accelerator="h200", count=8, tp=8,
                                              weights_dtype="fp8", prompt=600, gen=200,
                                              batch=8, max_model_len=1024, draft="gpt2",
                                              draft_tokens=3, acceptance=0.7),
        # one page size for every layer: windows and chunks cached as full attention
        "serve_unified": lambda: flopcalc.serve(name, accelerator="h200", count=8, tp=8,
                                                weights_dtype="fp8", prompt=600, gen=200,
                                                hybrid_kv_cache_manager=False,
                                                max_model_len=1024),
        "memory_adapters": lambda: flopcalc.memory(name, seq=2048, lora_rank=16, qlora=True,
                                                   accelerator="h100"),
        "memory_offload": lambda: flopcalc.memory(name, seq=2048, dp=8, zero=3, fp8=True,
                                                  offload_optimizer=True, zero3_buffer=True,
                                                  grad_fp32=True, accelerator="h100"),
        "infer_scaled": lambda: flopcalc.infer(name, prompt=2000, gen=500, batch=4,
                                               weights_dtype="nvfp4", kv_dtype="fp8",
                                               accelerator="b200", count=2),
    }
    return reports(calls)


def record_workflows(name: str) -> dict[str, Any]:
    documents = workflow_runs(name)
    # plan's search_seconds is how long this machine took to search the layouts
    figures = {k: v for k, v in shared(documents, numbers).items()
               if not k.endswith("search_seconds")}
    return {"numbers": figures, "text": shared(documents, strings)}


def split_memory(name: str) -> Any:
    """Training memory under every kind of split (tensor parallelism of 2 where the heads
    allow it: GPT-2 XL has 25)."""
    import flopcalc

    for tp in (2, 1):
        try:
            return flopcalc.memory(name, seq="4k", batch=2, tp=tp, pp=2, dp=2, zero=3,
                                   recompute="selective", sequence_parallel=tp > 1, flash=True,
                                   accelerator="h100")
        except flopcalc.FlopcalcError:
            if tp == 1:
                raise
    raise AssertionError("unreachable")


def listed(name: str) -> dict[str, Any]:
    """The preset's row of `flopcalc list --format json`."""
    return next(r for r in _list() if r["model"] == name)


@functools.lru_cache(maxsize=1)
def _list() -> list[dict[str, Any]]:
    import contextlib
    import io

    from flopcalc.cli import main

    out = io.StringIO()
    with contextlib.redirect_stdout(out):
        assert main(["list", "--format", "json"]) == 0
    return json.loads(out.getvalue())["presets"]


def docs(name: str) -> dict[str, Any]:
    out = {run: report.to_dict() for run, report in runs(name).items()}
    out["list"] = listed(name)
    return out


def flat(documents: dict[str, Any], kind: Callable[[Any], Iterator[tuple[str, Any]]]) \
        -> dict[str, Any]:
    return {f"{run}.{key}": value for run, doc in documents.items() for key, value in kind(doc)}


def record(name: str) -> dict[str, Any]:
    return flat(docs(name), numbers)


def record_text(name: str) -> dict[str, Any]:
    return shared(docs(name), strings)


def shared(documents: dict[str, Any], kind: Callable[[Any], Iterator[tuple[str, Any]]]) \
        -> dict[str, Any]:
    """Every leaf of the reports under its dotted key, once: a value that several runs print
    alike (the model's notes, its parameters in each report) is kept under the first run's
    key, without the run's name, and a run that prints it differently keeps its own under its
    name."""
    out: dict[str, Any] = {}
    for run, doc in documents.items():
        for key, value in kind(doc):
            if key not in out:
                out[key] = value
            elif out[key] != value:
                out[f"{run}:{key}"] = value
    return out


# ---------------------------------------------------------------------------------- the zoo

def zoo_types() -> list[str]:
    return sorted(p.stem for p in ZOO.glob("*.json"))


def zoo_configs(model_type: str) -> list[tuple[str, dict[str, Any]]]:
    """The shrunk configs of a model type as transformers saves them (`tests/data/zoo/`): every
    feature of the architecture, few layers, small widths; the default config first, then each
    variant of each case (features a default leaves off: biases, adapters, relative attention,
    other layer patterns), labelled `CASE.LABEL`."""
    doc = json.loads((ZOO / f"{model_type}.json").read_text())
    return [(f"{i}.{entry['label']}", entry["config"])
            for i, case in enumerate(doc["cases"]) for entry in case["flops"]]


def zoo_runs(path: str, variant: bool = False) -> dict[str, Any]:
    """The reports recorded for one model type (for a `variant`, the model, its memory and its
    decode)."""
    import flopcalc

    calls: dict[str, Callable[[], Any]] = {
        "model": lambda: flopcalc.model(path, attention="causal", seq=96, batch=2,
                                        elementwise=True),
        # a multimodal type's tower over two images (the others refuse --images)
        "model_images": lambda: flopcalc.model(path, seq=96, images=2, image_size="640x480",
                                               elementwise=True),
        # tiny (a processor's floor), odd-sized and very wide images
        "model_images_small": lambda: flopcalc.model(path, seq=96, images=1, image_size="30x21"),
        "model_images_odd": lambda: flopcalc.model(path, seq=96, images=3, image_size="641x479"),
        "model_images_wide": lambda: flopcalc.model(path, seq=96, images=1,
                                                    image_size="300x2000"),
        "conventions": lambda: flopcalc.conventions(path, seq=64),
        "memory_split": lambda: split_memory(path),
        "infer": lambda: flopcalc.infer(path, prompt=40, gen=24, batch=3, accelerator="h100",
                                        count=8),
        "infer_scaled": lambda: flopcalc.infer(path, prompt=40, gen=24, weights_dtype="nvfp4",
                                               kv_dtype="fp8", accelerator="b200"),
        "memory_adapters": lambda: flopcalc.memory(path, seq=64, lora_rank=4, qlora=True),
        "memory_offload": lambda: flopcalc.memory(path, seq=64, dp=4, zero=3, fp8=True,
                                                  offload_optimizer=True, zero3_buffer=True),
        "step": lambda: flopcalc.step(path, seq=64, tp=2, pp=2, dp=2, global_batch=8,
                                      micro_batch=1, accelerator="h100", zero=1,
                                      recompute="selective", sequence_parallel=True),
        "serve": lambda: flopcalc.serve(path, accelerator="h100", prompt=40, gen=24, batch=3),
    }
    if variant:
        calls = {k: calls[k] for k in ("model", "memory_split", "infer")}
    return reports(calls)


def record_zoo(model_type: str) -> dict[str, Any]:
    import tempfile

    documents: dict[str, Any] = {}
    with tempfile.TemporaryDirectory() as tmp:
        # the model is named after its folder, and its path is printed as its source: both are
        # kept the same from run to run
        path = Path(tmp) / model_type / "config.json"
        path.parent.mkdir()
        for n, (label, config) in enumerate(zoo_configs(model_type)):
            path.write_text(json.dumps(config))
            runs = zoo_runs(str(path), variant=n > 0)
            # the default's runs under their own names; a variant's under its label, where
            # `shared` keeps only what differs from the default
            documents.update(runs if n == 0 else {f"{label}/{k}": v for k, v in runs.items()})
        documents = json.loads(json.dumps(documents).replace(tmp, "ZOO"))
    # a layer's rows (`layers.N.flop_rows`) are the model's rows (`flops.rows`) before they
    # are summed over the layers of each stack: their numbers are left out, their text kept
    figures = {k: v for k, v in shared(documents, numbers).items()
               if not k.split(":")[-1].startswith("layers.")}
    return {"numbers": figures, "text": shared(documents, strings)}


def write(path: Path, doc: Any) -> None:
    """One golden file, replaced whole; `.json.gz` gzipped (without a timestamp, so that the
    same figures make the same bytes)."""
    import gzip

    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".tmp")
    text = json.dumps(doc, indent=0) + "\n"
    if path.name.endswith(".gz"):
        tmp.write_bytes(gzip.compress(text.encode(), mtime=0))
    else:
        tmp.write_text(text)
    tmp.replace(path)


def read(path: Path) -> Any:
    import gzip

    data = path.read_bytes()
    return json.loads(gzip.decompress(data) if path.name.endswith(".gz") else data)


def main() -> None:
    from flopcalc.models.registry import preset_names

    names = sys.argv[1:]
    presets = preset_names()
    for name in [n for n in presets if not names or n in names]:
        write(GOLDEN / f"{name}.json", record(name))
        write(GOLDEN / "text" / f"{name}.json", record_text(name))
        write(GOLDEN / "workflows" / f"{name}.json.gz", record_workflows(name))
        print(name)
    for model_type in [t for t in zoo_types() if not names or t in names]:
        write(GOLDEN / "zoo" / f"{model_type}.json.gz", record_zoo(model_type))
        print(model_type)

