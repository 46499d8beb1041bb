"""--scan by hand: the four chunked-scan kinds counted `chunked` (the default, Hugging Face's
padded chunks) and `recurrent` (token by token: the decode step's core on every real token),
on mixers small enough that every count is worked in the comment beside it.

Every model: d 4, one layer (an RMSNorm and the mixer, no MLP), a final RMSNorm, a tied
vocabulary of 8, at seq 5, which is not a multiple of any chunk here (4, or lightning's blocks
of 2). The LM head is 2·5·4·8 = 320 throughout; --scan moves the `scan` family only (and the
element-wise work of the core).
"""

from __future__ import annotations

import pytest

import flopcalc
from flopcalc.commands.options import SCANS as DECLARED_SCANS
from flopcalc.kinds.base import SCANS

from tests.conftest import run

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

HEAD = """n_layers: 1
d_model: 4
norm: rmsnorm
activation: silu
positions: none
vocab_size: 8
tie_embeddings: true
"""

# 2 heads of 2 channels (E = 4), a state of 2 per head in 1 group, a conv of 3, chunks of 4:
# the state H·P·N = 2·2·2 = 8 values.
MAMBA2 = HEAD + """layer_types: [mamba2]
mamba2: {n_heads: 2, head_dim: 2, d_state: 2, n_groups: 1, d_conv: 3, chunk_size: 4}
"""
# 1 query/key head of 2, 2 value heads of 2 (H_v·d_v = 4), a conv of 3, chunks of 4: the state
# H_v·d_k·d_v = 2·2·2 = 8 values.
GDN = HEAD + """layer_types: [gdn]
gated_deltanet: {n_key_heads: 1, n_value_heads: 2, key_head_dim: 2, value_head_dim: 2,
                 d_conv: 3, chunk_size: 4}
"""
# 2 heads of 2 (HD = 4), a conv of 3 over q, k, v (12 channels), chunks of 4: the state
# H·D·D = 8 values.
KDA = HEAD + """layer_types: [kda]
kimi_delta: {num_heads: 2, head_dim: 2, short_conv_kernel_size: 3, chunk_size: 4}
"""
# 2 heads of 2 (HD = 4), blocks of 2: the state H·D·D = 8 values.
LIGHTNING = HEAD + """n_heads: 2
layer_types: [lightning]
lightning: {block_size: 2}
"""
# Mamba-1 (already token by token in Hugging Face) and LFM2's short conv: no chunked scan.
MAMBA1 = HEAD + """layer_types: [mamba1]
mamba1: {d_inner: 6, d_state: 2, d_conv: 3, dt_rank: 2}
"""


def write(tmp_path, name: str, text: str) -> str:
    path = tmp_path / f"{name}.yaml"
    path.write_text(text)
    return str(path)


def flops(cli, path: str, *args) -> dict:
    return run(cli, "model", path, "--seq", 5, *args)["flops"]


def decode_scan(cli, path: str) -> int:
    """The recurrence's FLOPs in one decode step (one token of one sequence)."""
    c = run(cli, "infer", path, "--prompt", 5, "--gen", 1)["decode"]["components"]
    return sum(v for k, v in c.items() if ".scan." in k)


def test_mamba2(cli, tmp_path):
    path = write(tmp_path, "mamba2", MAMBA2)
    chunked, recurrent = flops(cli, path), flops(cli, path, "--scan", "recurrent")
    # Chunked, 5 padded to 2 chunks of 4: C·Bᵀ 2·2·4²·2·2 = 256, the masked product 256, the
    # chunk states 2·2·4·2·2·2 = 128, the states passed over 3 chunks 2·3²·2·2·2 = 144, the
    # read-out 128: 912.
    assert chunked["families"]["scan"] == 912
    # Recurrent, on the 5 real tokens: the update h·exp(dt·A) + (dt·x)·B 3 FLOPs per state value
    # 3·5·8 = 120, the read-out C·h 2·5·8 = 80: 200 = 5 x a decode step's 5·8 = 40.
    c = recurrent["components"]
    assert (c["decoder.mamba.scan.update"], c["decoder.mamba.scan.readout"]) == (120, 80)
    assert not any(".ssd." in name for name in c)
    assert recurrent["families"]["scan"] == 200 == 5 * decode_scan(cli, path)
    # Everything else as chunked: in_proj 560, conv 336, out_proj 160, the LM head 320.
    assert recurrent["weights"] == chunked["weights"] == 560 + 336 + 160 + 320
    assert (chunked["forward"], recurrent["forward"]) == (2288, 1376 + 200)


def test_mamba2_elementwise(cli, tmp_path):
    path = write(tmp_path, "mamba2", MAMBA2)
    f = flops(cli, path, "--scan", "recurrent", "--elementwise")
    c = f["components"]
    # every element-wise part is counted in the element-wise family
    assert f["families"]["elementwise"] == sum(v for k, v in c.items() if "elementwise" in k)
    # Token by token: exp(dt·A) per token and head 5·2 = 10 (chunked: the padded cumsums and
    # segment sums, 488); the output D·x + y per channel 2·5·4 = 40 (chunked: 4 on each padded
    # channel, 128). The conv's SiLU and bias 216, the discretisation 94 and the gated norm 190
    # as chunked.
    assert (c["decoder.mamba.elementwise.conv"], c["decoder.mamba.elementwise.discretize"],
            c["decoder.mamba.elementwise.decay"], c["decoder.mamba.elementwise.output"],
            c["decoder.mamba.elementwise.gated_norm"]) == (216, 94, 10, 40, 190)


def test_gated_deltanet(cli, tmp_path):
    path = write(tmp_path, "gdn", GDN)
    chunked, recurrent = flops(cli, path), flops(cli, path, "--scan", "recurrent")
    # Chunked on 16 padded rows (2 chunks of 4 x 2 value heads): k_β·kᵀ, q·kᵀ and attn·v_new
    # 2·16·4·2 = 256 each, k_cumdecay·S, q·S and kᵀ·v_new 2·16·2·2 = 128 each: 1,152.
    assert chunked["families"]["scan"] == 1152
    # Recurrent on the 5 tokens: the decay S·exp(g) 5·8 = 40, Sᵀk 2·5·8 = 80, δ = β·(v − Sᵀk)
    # 2·5·4 = 40, the update S + k⊗δ 80, the output Sᵀq 80: 320 = 5 x (8 + 16 + 8 + 16 + 16).
    c = recurrent["components"]
    assert {k: v for k, v in c.items() if ".scan." in k} == {
        "decoder.gdn.scan.decay": 40, "decoder.gdn.scan.retrieve": 80,
        "decoder.gdn.scan.delta": 40, "decoder.gdn.scan.update": 80,
        "decoder.gdn.scan.readout": 80}
    assert recurrent["families"]["scan"] == 320 == 5 * decode_scan(cli, path)
    # in_proj_qkvz 480, in_proj_ba 160, the conv 336, out_proj 160, the LM head 320: 1,456.
    assert recurrent["weights"] == chunked["weights"] == 1456
    assert (chunked["forward"], recurrent["forward"]) == (2608, 1776)


def test_gated_deltanet_elementwise(cli, tmp_path):
    path = write(tmp_path, "gdn", GDN)
    f = flops(cli, path, "--scan", "recurrent", "--elementwise")
    c = f["components"]
    # every element-wise part is counted in the element-wise family
    assert f["families"]["elementwise"] == sum(v for k, v in c.items() if "elementwise" in k)
    # exp(g) per token and value head 5·2 = 10 (chunked: 500 of padded decays); no chunk-by-
    # chunk adds (chunked: 96). The conv's SiLU 160, the gates 94, the l2-norms and q·scale 180
    # and the gated norm 200 as chunked; the layer's RMSNorm 4·5·4 = 80 and residual add 5·4 = 20.
    assert {k: v for k, v in c.items() if k.startswith("decoder.gdn.elementwise.")} == {
        "decoder.gdn.elementwise.conv": 160, "decoder.gdn.elementwise.gates": 94,
        "decoder.gdn.elementwise.qk_norm": 180, "decoder.gdn.elementwise.decay": 10,
        "decoder.gdn.elementwise.gated_norm": 200, "decoder.gdn.elementwise.norm": 80,
        "decoder.gdn.elementwise.residual": 20}


def test_kimi_delta(cli, tmp_path):
    path = write(tmp_path, "kda", KDA)
    chunked, recurrent = flops(cli, path), flops(cli, path, "--scan", "recurrent")
    # Chunked, 2·B·H·Lp·(3·C·D + 3·D²) = 2·2·8·(24 + 12) = 1,152.
    assert chunked["families"]["scan"] == 1152
    # Recurrent: the decay S·e^g 5·8 = 40; kᵀS 2 and S + k⊗δ 2 per state value, (v − kᵀS)·β 2
    # per value channel, 5·(4·8 + 2·4) = 200; the read-out Sᵀq 2·5·8 = 80: 320 = 5 x 64.
    c = recurrent["components"]
    assert (c["decoder.kda.scan.decay"], c["decoder.kda.scan.delta"],
            c["decoder.kda.scan.readout"]) == (40, 200, 80)
    assert not any(".chunk." in name for name in c)
    assert recurrent["families"]["scan"] == 320 == 5 * decode_scan(cli, path)
    # q, k, v, o 160 each, the conv 504, f_a, f_b, b, g_a, g_b 80 each, the LM head 320: 1,864.
    assert recurrent["weights"] == chunked["weights"] == 1864
    assert (chunked["forward"], recurrent["forward"]) == (3016, 2184)


def test_kimi_delta_elementwise(cli, tmp_path):
    path = write(tmp_path, "kda", KDA)
    f = flops(cli, path, "--scan", "recurrent", "--elementwise")
    c = f["components"]
    # every element-wise part is counted in the element-wise family
    assert f["families"]["elementwise"] == sum(v for k, v in c.items() if "elementwise" in k)
    # q·scale and exp(g) per token and channel 2·5·4 = 40 (chunked: 6 per padded channel, 192);
    # no intra-chunk or chunk-by-chunk work. The conv's SiLU 4·12·5 = 240; the gates
    # (1 + 4 + 1)·5·4 + 2·2 + 4·5·2 = 164; the l2-norms 2·(3·5·4 + 2·5·2) = 160; the gated
    # norm 9·5·4 + 2·5·2 = 200; the layer's RMSNorm 4·5·4 = 80 and residual add 5·4 = 20.
    assert {k: v for k, v in c.items() if k.startswith("decoder.kda.elementwise.")} == {
        "decoder.kda.elementwise.conv": 240, "decoder.kda.elementwise.gates": 164,
        "decoder.kda.elementwise.l2norm": 160, "decoder.kda.elementwise.prepare": 40,
        "decoder.kda.elementwise.gated_norm": 200, "decoder.kda.elementwise.norm": 80,
        "decoder.kda.elementwise.residual": 20}


def test_lightning(cli, tmp_path):
    path = write(tmp_path, "lightning", LIGHTNING)
    chunked, recurrent = flops(cli, path), flops(cli, path, "--scan", "recurrent")
    # Chunked, blocks of 2, 2 and 1: 4·B·H·D·(Σ s² + L·D) = 16·(9 + 10) = 304.
    assert chunked["families"]["scan"] == 304
    # Recurrent: S ← λ·S + kᵀv 3 per state value 3·5·8 = 120, o = q·S 2·5·8 = 80: 200 = 5 x 40.
    c = recurrent["components"]
    assert (c["decoder.lightning.scan.update"], c["decoder.lightning.scan.readout"]) == (120, 80)
    assert not any(".blocks." in name for name in c)
    assert recurrent["families"]["scan"] == 200 == 5 * decode_scan(cli, path)
    # qkv 480, the gate 160, out 160, the LM head 320.
    assert recurrent["weights"] == chunked["weights"] == 1120
    assert (chunked["forward"], recurrent["forward"]) == (1424, 1320)


def test_lightning_elementwise(cli, tmp_path):
    path = write(tmp_path, "lightning", LIGHTNING)
    f = flops(cli, path, "--scan", "recurrent", "--elementwise")
    c = f["components"]
    # every element-wise part is counted in the element-wise family
    assert f["families"]["elementwise"] == sum(v for k, v in c.items() if "elementwise" in k)
    # The decay λ = exp(−slope) once per head, negate and exp: 2·2 = 4 (chunked: 144). SiLU on
    # q, k, v 4·5·12 = 240 and the norm and gate 190 as chunked.
    assert (c["decoder.lightning.elementwise.activation"],
            c["decoder.lightning.elementwise.blocks"],
            c["decoder.lightning.elementwise.norm_gate"]) == (240, 4, 190)


def test_a_multiple_of_the_chunk_still_differs(cli, tmp_path):
    path = write(tmp_path, "mamba2", MAMBA2)
    # At seq 8 (2 whole chunks, no padding) the SSD still is five matmuls: C·Bᵀ 2·2·16·2·2 = 256,
    # the masked product 256, the states 128, the passing 144, the read-out 128: 912; token by
    # token 5·8·8 = 320.
    assert run(cli, "model", path, "--seq", 8)["flops"]["families"]["scan"] == 912
    assert run(cli, "model", path, "--seq", 8, "--scan", "recurrent")["flops"]["families"][
        "scan"] == 320


def test_json_says_which_scan(cli, tmp_path):
    path = write(tmp_path, "gdn", GDN)
    doc = run(cli, "model", path, "--seq", 5, "--scan", "recurrent")
    assert doc["settings"]["attention"] == "full" and doc["settings"]["scan"] == "recurrent"
    assert any(line.startswith("scan recurrent (--scan): each chunked scan's core counted token "
                               "by token") for line in doc["conventions"])
    doc = run(cli, "model", path, "--seq", 5)
    assert doc["settings"]["scan"] == "chunked"
    assert any(line.startswith("scan chunked (the default)") for line in doc["conventions"])


def test_csv_says_which_scan(cli, tmp_path):
    import csv
    import io

    path = write(tmp_path, "lightning", LIGHTNING)
    for command, args in (("model", ["--seq", "5"]), ("sweep", ["--seqs", "5"]),
                          ("compare", [path, "--seq", "5"])):
        for scan in ("chunked", "recurrent"):
            r = cli(command, path, *args, "--scan", scan, "--format", "csv")
            assert r.code == 0, r.err
            rows = list(csv.DictReader(io.StringIO(r.out)))
            assert rows and {row["scan"] for row in rows} == {scan}, command
    # the recurrent forward, 1,320 at seq 5 (below), in its own column
    r = cli("sweep", path, "--seqs", "5", "--scan", "recurrent", "--format", "csv")
    assert next(csv.DictReader(io.StringIO(r.out)))["forward_flops"] == "1320"


def test_every_forward_command_takes_scan(cli, tmp_path):
    path = write(tmp_path, "lightning", LIGHTNING)
    # sweep rows, the compare summary, the infer prefill and train's exact follow the model's
    # recurrent count: forward 1,320 at seq 5.
    rows = run(cli, "sweep", path, "--seqs", "5", "--scan", "recurrent")["rows"]
    assert (rows[0]["forward"], rows[0]["families"]["scan"]) == (1320, 200)
    doc = run(cli, "compare", path, path, "--seq", 5, "--scan", "recurrent")
    assert doc["settings"]["scan"] == "recurrent"
    assert [m["flops_forward"] for m in doc["models"]] == [1320, 1320]
    doc = run(cli, "infer", path, "--prompt", 5, "--gen", 1, "--scan", "recurrent")
    assert (doc["settings"]["scan"], doc["prefill"]["flops"]) == ("recurrent", 1320)
    doc = run(cli, "train", path, "--seq", 5, "--tokens", 5, "--peak", "1T", "--mfu", "50%",
              "--scan", "recurrent")
    # 3 x 1,320 per 5 tokens x 5 tokens
    assert (doc["settings"]["scan"], doc["training"]["exact"]) == ("recurrent", 3960)
    assert any(line.startswith("scan recurrent") for line in doc["conventions"])


def test_conventions_and_mfu_take_scan(cli, tmp_path):
    path = write(tmp_path, "lightning", LIGHTNING)
    # The exact rows are 3 x the forward per token (no attention: full = causal): recurrent
    # 3·1,320/5 = 792 (x 5 tokens = 3,960); chunked 3·1,424/5 = 4,272/5.
    for scan, per_token in (("recurrent", "792"), ("chunked", "4272/5")):
        doc = run(cli, "conventions", path, "--seq", 5, "--tokens", 5, "--scan", scan)
        assert doc["settings"]["scan"] == scan
        exact = {r["name"]: r["per_token_exact"] for r in doc["conventions"]
                 if r["name"].startswith("exact")}
        assert exact == {"exact_full": per_token, "exact_causal": per_token}
        assert any(line.startswith(f"exact rows: scan {scan}") for line in doc["how_counted"])
        doc = run(cli, "mfu", path, "--seq", 5, "--tokens-per-second", 1000, "--peak", "1T",
                  "--scan", scan)
        assert doc["scan"] == scan
        rows = {r["name"]: r["flops_per_token_exact"] for r in doc["rows"]}
        # without recomputation the HFU rows are the exact rows
        assert {rows[k] for k in ("exact_full", "exact_causal", "hfu_exact_full",
                                  "hfu_exact_causal")} == {per_token}
    # the published rows do not move: 6ND is 6·N per token, N = 92 (qkv 48, gate 16, out 16,
    # the norms 4 + 4, the group norm... as `model` counts it), whatever --scan says
    six = {scan: next(r["per_token"] for r in run(cli, "conventions", path, "--seq", 5,
                                                   "--scan", scan)["conventions"]
                      if r["name"] == "six_nd") for scan in ("chunked", "recurrent")}
    assert six["chunked"] == six["recurrent"]
    # model's one-line pointer to conventions repeats a non-default --scan
    line = run(cli, "model", path, "--seq", 5, "--scan", "recurrent")["training"][
        "conventions_line"]
    assert line.endswith(f"flopcalc conventions {path} --seq 5 --scan recurrent adds Kaplan, "
                         "Megatron, Chinchilla and the Megatron-LM and MaxText codebases")
    line = run(cli, "model", path, "--seq", 5)["training"]["conventions_line"]
    assert "--scan" not in line


def test_check_holds_the_recurrent_count(cli, tmp_path):
    path = write(tmp_path, "lightning", LIGHTNING)
    r = cli("check", path, "--seq", "5", "--scan", "recurrent", "--max", "flops.forward=1320",
            "-f", "json")
    assert r.code == 0, r.err
    row = r.json()["rows"][0]
    assert row["value"] == 1320 and "scan=recurrent" in row["settings"]
    # chunked (the default, 1,424) exceeds the same limit; its settings leave scan out
    r = cli("check", path, "--seq", "5", "--max", "flops.forward=1320", "-f", "json")
    assert r.code == 1 and "scan=" not in r.json()["rows"][0]["settings"]
    budget = tmp_path / "budget.yaml"
    budget.write_text("checks:\n  - model: lightning.yaml\n    seq: 5\n    scan: recurrent\n"
                      "    max: {flops.forward: 1320}\n")
    assert cli("check", "--budget", str(budget)).code == 0


def test_a_bad_scan_is_a_one_line_usage_error(cli, tmp_path):
    path = write(tmp_path, "gdn", GDN)
    for command in (["model", path], ["sweep", path], ["check", path, "--max",
                                                       "flops.forward=1"]):
        r = cli(*command, "--scan", "token-by-token")
        assert r.code == 2 and r.out == ""
        assert r.err.count("\n") == 1 and "'--scan'" in r.err and "'recurrent'" in r.err
    with pytest.raises(flopcalc.FlopcalcError, match="--scan"):
        flopcalc.model(path, scan="token-by-token")


def test_the_api(cli, tmp_path):
    path = write(tmp_path, "kda", KDA)
    r = flopcalc.model(path, seq=5, scan="recurrent")
    assert (r.settings.scan, r.flops.forward, r.flops.families["scan"]) == ("recurrent", 2184, 320)
    assert r.to_dict() == run(cli, "model", path, "--seq", 5, "--scan", "recurrent")
    assert flopcalc.model(path, seq=5).flops.forward == 3016  # the default: chunked
    assert flopcalc.sweep(path, seqs="5", scan="RECURRENT").rows[0].forward == 2184


def test_no_chunked_scan_changes_nothing_and_says_so(cli, tmp_path):
    # Mamba-1's selective scan already steps token by token over the real tokens, as Hugging
    # Face runs it: --scan leaves it, and the report says so instead of failing.
    path = write(tmp_path, "mamba1", MAMBA1)
    chunked, recurrent = (run(cli, "model", path, "--seq", 5),
                          run(cli, "model", path, "--seq", 5, "--scan", "recurrent"))
    assert recurrent["flops"] == chunked["flops"]
    assert recurrent["settings"]["scan"] == "recurrent"
    said = [line for line in recurrent["conventions"] if "--scan" in line]
    assert said == ["scan recurrent (--scan) changes nothing here: no layer has a chunked scan "
                    "(Mamba-2, gated DeltaNet, Kimi delta or lightning attention)"]
    assert not [line for line in chunked["conventions"] if "--scan" in line]
    dense = run(cli, "model", "gpt2", "--scan", "recurrent")
    assert dense["flops"]["forward"] == run(cli, "model", "gpt2")["flops"]["forward"]


def test_which_kinds_have_a_chunked_scan():
    from flopcalc.kinds.gated_deltanet import GatedDeltaNet
    from flopcalc.kinds.kimi_delta import KimiDelta
    from flopcalc.kinds.lightning import Lightning
    from flopcalc.kinds.mamba1 import Mamba1
    from flopcalc.kinds.mamba2 import Mamba2
    from flopcalc.kinds.short_conv import ShortConv

    assert all(k.chunked_scan for k in (Mamba2, GatedDeltaNet, KimiDelta, Lightning))
    assert not any(k.chunked_scan for k in (Mamba1, ShortConv))
    assert DECLARED_SCANS == SCANS == ("chunked", "recurrent")


@pytest.mark.parametrize("keys, message", [
    ({"attention": "CAUSAL"}, "attention is one of full, causal, got 'CAUSAL'"),
    ({"attention": ""}, "attention is one of full, causal, got ''"),
    ({"scan": "Recurrent"}, "scan is one of chunked, recurrent, got 'Recurrent'"),
    ({"scan": "chunk"}, "scan is one of chunked, recurrent, got 'chunk'")])
def test_a_workload_takes_only_the_named_forms(keys, message):
    # the kinds test `attention == "causal"` and `scan == "recurrent"`: another text would
    # silently count as one of the two forms; the error names the choices
    from flopcalc.counting.workload import Workload

    with pytest.raises(ValueError) as e:
        Workload(seq=5, tgt_seq=5, **keys)
    assert str(e.value) == message


@pytest.mark.parametrize("scan", ["chunked", "recurrent"])
def test_the_6nd_line_compares_with_the_exact_count_of_its_own_scan(cli, scan):
    # Mamba-2 2.7B at 2,048: --scan moves the exact count (recurrent is the smaller), and the
    # table's "6ND is x% below exact" sentence reads the figure of the same scan as the JSON
    import re

    training = run(cli, "model", "mamba2-2.7b", "--scan", scan)["training"]
    r = cli("model", "mamba2-2.7b", "--scan", scan)
    assert r.code == 0, r.err
    said = re.search(r"6ND is ([\d.]+)% below exact", " ".join(r.out.split()))
    assert said is not None
    assert said.group(1) == f"{training['six_nd_below_exact_pct']:.1f}"
