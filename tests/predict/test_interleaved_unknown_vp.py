"""`step --schedule interleaved` without `--vp`: a source that names the interleaved schedule but
not its virtual stages (torchtitan's Llama 3.1 405B table 5) is predicted, not refused. The
estimate takes the fewest virtual stages that work, worked by hand below; a layout no number of
virtual stages fits is still one line."""

from __future__ import annotations

import pytest

pytestmark = [pytest.mark.hand, pytest.mark.behaviour]

BASE = ("step", "llama-3.1-8b", "--accelerator", "h100", "--recompute", "none", "--dropout",
        "off", "--micro-batch", "1", "--schedule", "interleaved", "--format", "json")


def test_the_estimate_takes_two_virtual_stages(cli):
    # 32 layers over pp 4: 8 a stage, so v = 2 gives each virtual stage 4 layers; 64 sequences
    # at micro-batch 1 are 64 micro-batches, a multiple of pp 4: v = 2 works, and it is the
    # fewest above 1 (v = 1 is not interleaved)
    r = cli(*BASE, "--pp", "4", "--global-batch", "64")
    assert r.code == 0, r.err
    assert r.json()["layout"]["vp"] == 2
    assert r.json()["layout"]["schedule"] == "interleaved"


def test_the_stated_vp_is_kept(cli):
    r = cli(*BASE, "--pp", "4", "--global-batch", "64", "--vp", "4")
    assert r.code == 0, r.err
    assert r.json()["layout"]["vp"] == 4


def test_no_virtual_stage_count_fits_is_one_line(cli):
    # 6 micro-batches over pp 4: 6 is not a multiple of 4, so no v > 1 interleaves them
    r = cli(*BASE, "--pp", "4", "--global-batch", "6")
    assert r.code == 2
    assert "multiple of --pp 4" in r.err and "Traceback" not in r.err
    assert len(r.err.strip().splitlines()) == 1
