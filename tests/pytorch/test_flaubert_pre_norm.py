"""FlauBERT's pre_norm against transformers 5.24: parameters only (its pre-norm forward fails in
that release, `cache=cache[i]` on an EncoderDecoderCache), so this is not a zoo case."""

from __future__ import annotations

import pytest

pytest.importorskip("torch")
pytest.importorskip("transformers")

from tests import sweep  # noqa: E402

pytestmark = pytest.mark.torch


@pytest.mark.parametrize("keys", [dict(pre_norm=True), dict(pre_norm=True, n_langs=3,
                                                             n_layers=5)])
def test_pre_norm_params(keys):
    sweep.check_params(sweep.Case("flaubert", auto="masked_lm"), keys)
