"""The layer-kinds seam, proved: a kind of token mixer defined here, in the tests alone,
registered through the public seam (`flopcalc.kinds.register`), builds a hybrid model that
every command counts, with every figure worked by hand below. No module of flopcalc knows it.

The toy mixer: `in` (d → w, column-parallel), a decay recurrence over its w channels (2 FLOPs
per channel and token: the `scan` family), `out` (w → d, row-parallel), a learned decay vector
of w values, and a recurrent state of w values per sequence.
"""

from __future__ import annotations

from dataclasses import dataclass
from fractions import Fraction
from typing import Annotated, Any

import pytest

from flopcalc.declare import Min
from flopcalc.kinds import (COLUMN, ELEMENTWISE, LAYERS, REPLICATED, ROW, SCAN, WEIGHTS, Cache,
                            Entry, Kind, Part, Span, State, register, unregister)

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]


@dataclass(frozen=True)
class ToyConfig:
    width: Annotated[int, Min(1)]


@dataclass(frozen=True)
class Toy(Kind):
    width: int
    slot = "toy"

    def params(self, d: int, active: bool = False) -> list[Part]:
        w = self.width
        return [Part("in.weight", d * w, LAYERS, (d, w), COLUMN),
                Part("out.weight", w * d, LAYERS, (w, d), ROW),
                Part("decay", w, LAYERS, (w,), REPLICATED)]

    def _flops(self, d: int, tokens: int) -> list[Part]:
        w = self.width
        return [Part("in", 2 * tokens * d * w, WEIGHTS), Part("scan", 2 * tokens * w, SCAN),
                Part("out", 2 * tokens * w * d, WEIGHTS)]

    def forward(self, d: int, x: Span) -> list[Part]:
        return self._flops(d, x.tokens)

    def decode(self, d: int, batch: int, first: int, last: int) -> list[Part]:
        return self._flops(d, batch * (last - first + 1))

    def elementwise(self, d: int, x: Span) -> list[Part]:
        return [Part("elementwise.gate", x.tokens * self.width, ELEMENTWISE)]

    def cache(self) -> Cache:
        return Cache(label="toy", states=(State("state", self.width),))

    def activations(self, d: int, k: Any) -> list[tuple[str, Fraction]]:
        return [("in_output", Fraction(2 * k.seq * k.batch * self.width, k.tp))]

    def tp_units(self) -> int:
        return self.width

    def describe(self) -> str:
        return f"toy recurrence {self.width}"

    def notes(self) -> list[str]:
        return ["toy: a decay recurrence, 2 FLOPs per channel and token (scan family)"]


ENTRY = Entry(layer_types=("toy",), build=lambda cfg, name: Toy(cfg.toy.width),
              blocks=(("toy", ToyConfig),))

# d 4, 2 heads of 2, plain MLP of 8, no norms or biases, vocab 8 tied, layers [toy, full].
TOY = """title: Toy hybrid
source: the test suite
notes: a toy recurrent mixer beside attention
n_layers: 2
d_model: 4
n_heads: 2
d_ff: 8
mlp: plain
bias: false
norm: none
final_norm: false
positions: rotary
max_seq_len: 64
vocab_size: 8
tie_embeddings: true
layer_types: [toy, full]
toy: {width: 2}
"""
# Parameters. Full layer: q, k, v, o 4·4 = 16 each (64) + MLP 4·8 + 8·4 (64) = 128. Toy layer:
# in 4·2 = 8, out 2·4 = 8, decay 2 (18) + MLP 64 = 82. Tied table 8·4 = 32. Total 242; N = 210.
TOTAL, N = 242, 210


@pytest.fixture
def toy(tmp_path):
    register(ENTRY)
    path = tmp_path / "toy.yaml"
    path.write_text(TOY)
    yield str(path)
    unregister(ENTRY)


def test_model(cli, toy):
    doc = run(cli, "model", toy, "--seq", 8, "--tokens", 1000)
    assert doc["params"]["total"] == TOTAL and doc["params"]["non_embedding"] == N
    c = doc["params"]["components"]
    assert (c["decoder.toy.in.weight"], c["decoder.toy.decay"], c["decoder.attn.q.weight"]) == (
        8, 2, 16)
    # FLOPs at b = 1, s = 8 (T = 8). Weights: attention q, k, v, o 4·2·T·16 = 128T, the two MLPs
    # 2·128T, toy in and out 2·2·T·8 = 32T, LM head 2·T·4·8 = 64T: 480T = 3,840. Attention
    # matrix: 2·2 heads·s²·2 for QKᵀ and for AV = 16·64 = 1,024. Scan 2·T·2 = 32.
    f = doc["flops"]
    assert f["families"] == {"weights": 3840, "attention": 1024, "scan": 32}
    assert (f["weights"], f["attention"], f["scan"], f["forward"]) == (3840, 1024, 32, 4896)
    assert f["components"]["decoder.toy.scan"] == 32
    # Training: 3 x 4,896 / 8 = 1,836 per token; 6ND = 6 x 210 = 1,260 per token.
    t = doc["training"]
    assert (t["exact"], t["six_nd"]) == (1836 * 1000, 1260 * 1000)
    # Crossover: layer weights per token 128 + 128 + 32 + 128 = 416 = 16·s: s* = 26 = 6.5d.
    assert (doc["crossover"]["seq"], doc["crossover"]["d_model_multiple"]) == (26, 6.5)
    assert any("toy: a decay recurrence" in line for line in doc["conventions"])
    kinds = {g["kind"]: g["params"] for g in doc["layers"]}
    assert kinds == {"toy recurrence 2, plain MLP 8": 82, "full causal, plain MLP 8": 128}


def test_causal_crossover_and_elementwise(cli, toy):
    # Causal: 16·s(s+1)/2 = 8s(s + 1) >= 416·s from s + 1 >= 52: s* = 51.
    assert run(cli, "model", toy, "--attention", "causal")["crossover"]["seq"] == 51
    c = run(cli, "model", toy, "--seq", 8, "--elementwise")["flops"]["components"]
    # The toy's own element-wise gate, T·w = 16; its residual add T·d = 32; softmax 5 per score
    # over 2 heads x 64 pairs = 640.
    assert c["decoder.toy.elementwise.gate"] == 16
    assert c["decoder.toy.elementwise.residual"] == 32
    assert c["decoder.attn.elementwise.softmax"] == 640


def test_sweep_and_compare(cli, toy):
    rows = run(cli, "sweep", toy, "--seqs", "8,16")["rows"]
    # s = 16: 484·16 + 16·256 = 11,840; scan 2·16·2 = 64.
    assert [(r["seq"], r["forward"], r["families"]["scan"]) for r in rows] == [
        (8, 4896, 32), (16, 11840, 64)]
    header, first, _ = cli("sweep", toy, "--seqs", "8,16", "-f", "csv").out.splitlines()
    assert dict(zip(header.split(","), first.split(",")))["scan_flops"] == "32"
    models = run(cli, "compare", toy, "gpt2", "--seq", 8)["models"]
    assert models[0]["flops_families"]["scan"] == 32 and "scan" not in models[1][
        "flops_families"]


def test_infer(cli, toy):
    doc = run(cli, "infer", toy, "--prompt", 5, "--gen", 3, "--accelerator", "h100")
    kv = doc["kv_cache"]
    # The full layer's K and V, 2·2 + 2·2 = 8 values (16 bytes in bf16) per token, for 8 tokens;
    # the toy state, 2 fp32 values = 8 bytes per sequence.
    assert (kv["bytes_per_token"], kv["kv_bytes"], kv["state_bytes_per_sequence"],
            kv["bytes"]) == (16, 128, 8, 136)
    assert kv["layers"] == {"decoder.toy.state": 8, "decoder.full": 128}
    d = doc["decode"]
    # A step at position c: attention projections 128 + 16·c over c keys, MLPs 2·64 = 128
    # twice... per token: q, k, v, o 128, pairs 2·2·(2 + 2)·c = 16c, MLPs 256, toy 16 + 4 + 16,
    # LM head 64: 484 + 16c. c = 6, 7, 8.
    assert (d["flops_first"], d["flops_last"], d["flops"]) == (580, 612, 580 + 596 + 612)
    # Bytes of a step: every weight once, 242·2 = 484; K/V read 16·c, written 16; the state
    # read and written, 8 each: 516 + 16c.
    assert (d["bytes_first"], d["bytes_last"]) == (516 + 96, 516 + 128)
    assert d["bytes_components"]["state.read"] == d["bytes_components"]["state.write"] == 24
    # The prefill writes the prompt's K/V (5·16) and the state (8) besides reading the weights.
    assert doc["prefill"]["bytes"] == 484 + 80 + 8


def test_train_memory_conventions_check(cli, toy):
    train = run(cli, "train", toy, "--seq", 8, "--tokens", 1000, "--peak", 1000, "--mfu", 1,
                "--attention", "full")
    assert train["training"]["exact"] == 1_836_000 and train["seconds"]["exact"] == 1836
    # train counts causal by default: the attention layer (d_q = 4) sees 4.5 keys per token on
    # average instead of 8, 4·4·(8 − 4.5) = 56 FLOPs fewer per token: 3·(612 − 56)·1,000
    train = run(cli, "train", toy, "--seq", 8, "--tokens", 1000, "--peak", 1000, "--mfu", 1)
    assert train["training"]["exact"] == 1_668_000
    mem = run(cli, "memory", toy, "--seq", 8, "--no-flash")
    # The eager kernel (its softmax kept). Attention layer: input 2·8·4 = 64, Q and K 2·8·8 =
    # 128, softmax 2·2·64 = 256, V 64, o's
    # input 64, MLP input 64 and hidden 2·8·8·2 = 256: 896. Toy layer: input 64, its own
    # in_output 2·8·2 = 32, MLP input 64 and hidden 256: 416. Output: LM head input 64 and fp32
    # logits 4·8·8 = 256. Activations 1,632; state 242 x 16 = 3,872.
    assert mem["activations"]["components"]["layers.toy.in_output"] == 32
    assert (mem["memory"]["activations"], mem["memory"]["total"]) == (1632, 1632 + 3872)
    rows = {r["name"]: r for r in run(cli, "conventions", toy, "--seq", 8)["conventions"]}
    # 6ND 6·210; exact 3·612; PaLM 6·242 (every matmul weight, the tied table included) +
    # 12·4·8 (the one attention layer's h·d_h = 4).
    assert (rows["six_nd"]["per_token"], rows["exact_full"]["per_token"],
            rows["palm"]["per_token"]) == (1260, 1836, 6 * 242 + 12 * 4 * 8)
    r = cli("check", toy, "--seq", 8, "--max", "flops.scan=32", "--min", "flops.scan=33")
    assert r.code == 1 and r.out.splitlines()[0].startswith("PASS")
    r = cli("check", toy, "--command", "memory", "--seq", 8, "--tp", 3, "--max", "memory.total=1")
    assert r.code == 2 and "--tp 3 must divide the 2" in r.err


def test_plot(cli, toy, tmp_path):
    pytest.importorskip("matplotlib")
    path = tmp_path / "sweep.svg"
    r = cli("sweep", toy, "--seqs", "8,16,32", "--plot", path)
    assert r.code == 0 and "state/scan (recurrent core)" in path.read_text()
    path = tmp_path / "infer.svg"
    assert cli("infer", toy, "--prompt", 5, "--gen", 3, "--plot", path).code == 0
    assert "recurrent state read" in path.read_text()


def test_unknown_kind_without_registration(cli, tmp_path):
    path = tmp_path / "toy.yaml"
    path.write_text(TOY)
    r = cli("model", path)
    assert r.code == 2 and "unknown key 'toy'" in r.err


@pytest.mark.parametrize("layer_type, block", [("full", "toy_block"), ("toy2", "mamba2"),
                                              ("mamba2", "toy_block")])
def test_a_kind_cannot_take_a_name_in_use(layer_type, block):
    # "full" is a layer type, "mamba2" both a layer type and a config block; either clash is
    # refused, and nothing is registered
    from dataclasses import replace

    entry = replace(ENTRY, layer_types=(layer_type,), blocks=((block, ENTRY.blocks[0][1]),))
    from flopcalc.kinds.registry import mixer_names

    with pytest.raises(ValueError, match="kind names already taken"):
        register(entry)
    assert "toy2" not in mixer_names()
