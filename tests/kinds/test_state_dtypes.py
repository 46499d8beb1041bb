"""Which dtype each piece of a recurrent mixer's state is kept in, by hand: the conv window in
the cache's dtype (--kv-dtype, as the K/V are), the recurrent state in the state dtype
(--state-dtype); and vLLM's Mamba-2 state on a tensor-parallel rank when the ranks do not
divide the groups."""

from __future__ import annotations

import pytest

from flopcalc.models.registry import load_model

from tests.conftest import run
from tests.kinds.test_scan_modes import GDN, KDA, write

pytestmark = [pytest.mark.hand, pytest.mark.engine]

# GDN: q and k 1 head of 2, v 2 heads of 2: conv channels 2 + 2 + 4 = 8, window K = 3: 24
# values; state H_v·d_k·d_v = 2·2·2 = 8 values. KDA: q, k, v 4 channels each, 12 x 3 = 36;
# state 2·2·2 = 8.
CASES = [("gdn", GDN, "gated_deltanet", 24, 8), ("kda", KDA, "kda", 36, 8)]


@pytest.mark.parametrize("name, text, label, conv, state", CASES)
@pytest.mark.parametrize("kv, kv_bytes, st, st_bytes", [("bf16", 2, "fp32", 4),
                                                       ("fp32", 4, "bf16", 2)])
def test_conv_window_in_cache_dtype_state_in_state_dtype(cli, tmp_path, name, text, label,
                                                        conv, state, kv, kv_bytes, st,
                                                        st_bytes):
    path = write(tmp_path, name, text)
    cache = run(cli, "infer", path, "--prompt", 5, "--gen", 1, "--kv-dtype", kv,
                "--state-dtype", st)["kv_cache"]
    assert cache["layers"] == {f"decoder.{label}.conv_state": conv * kv_bytes,
                               f"decoder.{label}.recurrent_state": state * st_bytes}
    assert cache["state_bytes_per_sequence"] == conv * kv_bytes + state * st_bytes


def test_mamba2_engine_state_replicates_groups_tp_does_not_divide():
    # Mamba-2 2.7B: E = 5,120, one group of N = 128, 80 heads of 64, conv K = 4. vLLM's
    # mamba2_state_shape: with tp = 2 the one group is replicated to 2
    # (extra_groups_for_head_shards), so the conv carries (5,120 + 2·2·128)/2 = 2,816 channels
    # per rank, K − 1 = 3 rows of them; the SSM state 40·64·128 = 327,680 per rank.
    spec = load_model("mamba2-2.7b").spec
    kind = next(k for g in spec.groups() for _, k in g.layer.slots()
                if type(k).__name__ == "Mamba2")
    (one,) = kind.engine_cache(1)
    (two,) = kind.engine_cache(2)
    assert [(s.name, s.values, s.dtype, s.per_draft) for s in one.states] == [
        ("conv", 3 * (5120 + 2 * 128), "conv", 5120 + 2 * 128),
        ("ssm", 80 * 64 * 128, "state", 0)]
    assert [(s.name, s.values, s.dtype, s.per_draft) for s in two.states] == [
        ("conv", 3 * 2816, "conv", 2816), ("ssm", 40 * 64 * 128, "state", 0)]
    assert two.checkpoint_blocks == 1
    with pytest.raises(ValueError, match="tensor parallelism 3 must divide the 80 Mamba-2"):
        kind.engine_cache(3)


def test_per_token_cache_by_kind_leaves_out_fixed_states(cli):
    # Qwen3-Next 80B-A3B: of 48 layers, 12 full attention ones keep K and V of 2 heads of 256
    # in bf16 per token, 12·2·2·256·2 = 24,576 bytes; its 36 gated DeltaNet layers keep a conv
    # window and a state per sequence, whatever the length: not bytes per token.
    cache = run(cli, "infer", "qwen3-next-80b-a3b", "--prompt", 5, "--gen", 1)["kv_cache"]
    assert cache["bytes_per_token_by_kind"] == {"full": 12 * 2 * 2 * 256 * 2} == {"full": 24576}
    assert cache["bytes_per_token"] == 24576
