"""--plot FILE on sweep, compare, infer and memory: a valid SVG or PNG beside unchanged output,
one-line errors for a bad extension, an unwritable path and a missing matplotlib."""

from __future__ import annotations

import re
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

pytestmark = pytest.mark.behaviour

PNG_SIGNATURE = b"\x89PNG\r\n\x1a\n"

# command line, model names the picture must show, axis labels it must carry
RUNS = {
    "sweep": (["sweep", "gpt3", "--seqs", "1k..1M"], ["gpt3"],
              ["sequence length (tokens)", "FLOPs", "attention share of forward FLOPs (%)"]),
    "compare": (["compare", "gpt2", "llama-3.1-8b", "--seq", "2k"], ["gpt2", "llama-3.1-8b"],
                ["FLOPs (forward pass)", "FLOPs (training)"]),
    "infer": (["infer", "llama-3.1-8b", "--prompt", "1k", "--gen", "256", "--accelerator",
               "h100"], ["llama-3.1-8b"],
              ["context c (tokens)", "FLOPs per step", "bytes per step",
               "arithmetic intensity (FLOP/byte)"]),
    "memory": (["memory", "llama-3.1-8b", "--accelerator", "h100"], ["llama-3.1-8b"],
               ["micro-batch per device (sequences)", "memory per device (bytes)"]),
}


def svg_text(path) -> str:
    """Every piece of text in an SVG, one per line (parsing it proves it is XML)."""
    root = ET.parse(path).getroot()
    return "\n".join(el.text for el in root.iter() if el.text and el.text.strip())


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib")


@pytest.mark.parametrize("command", RUNS)
def test_svg_keeps_its_text(cli, tmp_path, mpl, command):
    args, names, labels = RUNS[command]
    path = tmp_path / "picture.svg"
    r = cli(*args, "--plot", path)
    assert r.code == 0, r.err
    text = svg_text(path)
    for expected in names + labels:
        assert expected in text
    conventions = cli(*args, "--format", "json").json()["conventions"]
    assert conventions[0][:40] in text  # the counting convention is in the footnote


@pytest.mark.parametrize("command", RUNS)
def test_png(cli, tmp_path, mpl, command):
    path = tmp_path / "picture.png"
    assert cli(*RUNS[command][0], "--plot", path).code == 0
    data = path.read_bytes()
    assert data.startswith(PNG_SIGNATURE) and len(data) < 300_000


@pytest.mark.parametrize("command", RUNS)
@pytest.mark.parametrize("fmt", ["table", "json"])
def test_output_unchanged_by_plot(cli, tmp_path, mpl, command, fmt):
    args = [*RUNS[command][0], "--format", fmt]
    plain, plotted = cli(*args), cli(*args, "--plot", tmp_path / "p.svg")
    assert plotted.code == plain.code == 0
    assert plotted.out == plain.out and plotted.err == plain.err


def test_sweep_marks_the_crossover(cli, tmp_path, mpl):
    path = tmp_path / "sweep.svg"
    assert cli("sweep", "gpt3", "--plot", path).code == 0
    assert "crossover s* = 73,728 (6d)" in svg_text(path)


def test_sweep_without_a_crossover_says_so(cli, tmp_path, mpl):
    path = tmp_path / "sweep.svg"
    assert cli("sweep", "mistral-7b", "--attention", "causal", "--plot", path).code == 0
    assert "no crossover" in svg_text(path)


def test_infer_without_decode_steps(cli, tmp_path, mpl):
    path = tmp_path / "prefill.svg"
    assert cli("infer", "llama-3.1-8b", "--prompt", "1k", "--gen", "0", "--plot", path).code == 0
    assert "no decode steps" in svg_text(path)


def test_infer_across_a_window_breakpoint(cli, tmp_path, mpl):
    path = tmp_path / "window.svg"  # mistral-7b's 4,096-key window fills up mid-decode
    assert cli("infer", "mistral-7b", "--prompt", "1k", "--gen", "8k", "--plot", path).code == 0
    assert "mistral-7b" in svg_text(path)


def test_svg_is_the_same_every_run(tmp_path, mpl):
    # Two runs of the same command, each its own process as a user runs it: no date, no random
    # element ids. Matplotlib's constrained layout can still differ in the sixth decimal of a
    # coordinate between processes (its solver's order of work is not fixed), and the ids of
    # clip paths hash their coordinates: compare with both normalised.
    def split(path: Path) -> tuple[list[str], list[float]]:
        ids: dict[str, str] = {}
        text = re.sub(r"\bp[0-9a-f]{10}\b", lambda m: ids.setdefault(m[0], f"clip{len(ids)}"),
                      path.read_text())
        return re.split(r"-?\d+\.\d+", text), [float(x) for x in re.findall(r"-?\d+\.\d+", text)]

    first, second = tmp_path / "a.svg", tmp_path / "b.svg"
    for path in (first, second):
        subprocess.run([sys.executable, "-m", "flopcalc", "sweep", "gpt2", "--plot", str(path)],
                       capture_output=True, check=True)
    assert "<dc:date>" not in first.read_text()
    (words, numbers), (words_again, numbers_again) = split(first), split(second)
    assert words == words_again
    assert numbers == pytest.approx(numbers_again, abs=1e-4)


@pytest.mark.parametrize("name", ["out.pdf", "out", "out.svg.txt"])
def test_bad_extension(cli, tmp_path, name):
    path = tmp_path / name
    r = cli("sweep", "gpt2", "--plot", path)
    assert r.code == 2 and r.out == "" and not path.exists()
    assert r.err.count("\n") == 1 and r.err.startswith("flopcalc: error: --plot ")
    assert ".svg" in r.err and ".png" in r.err


def test_unwritable_path(cli, tmp_path, mpl):
    path = tmp_path / "missing" / "out.svg"
    r = cli("sweep", "gpt2", "--plot", path)
    assert r.code == 2 and r.out == ""
    # Refused before any counting or drawing: the directory is checked first.
    assert r.err == (f"flopcalc: error: --plot {path}: no such directory {path.parent}; "
                     "create it or choose another path\n")


@pytest.mark.parametrize("command", RUNS)
def test_missing_matplotlib(cli, tmp_path, monkeypatch, command):
    monkeypatch.setitem(sys.modules, "matplotlib", None)  # `import matplotlib` now fails
    path = tmp_path / "out.png"
    r = cli(*RUNS[command][0], "--plot", path)
    assert (r.code, r.out) == (2, "") and not path.exists()
    assert r.err == (f"flopcalc: error: flopcalc {command} --plot needs matplotlib: "
                     "pip install matplotlib (or pip install '.[plot]' in flopcalc's "
                     "checkout)\n")


def test_matplotlib_only_with_plot():
    code = ("import sys; from flopcalc.cli import main; main(['sweep', 'gpt2', '-f', 'json']); "
            "print(sorted(m for m in ('matplotlib', 'flopcalc.render.plot') if m in sys.modules),"
            " file=sys.stderr)")
    run = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert run.stderr.strip().splitlines()[-1] == "[]"
