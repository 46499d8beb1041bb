"""Hostile input on the way out: files flopcalc writes (the cache, --plot) never go through a
link, never widen a mode, never replace a read-only file, never stay half-written; strings from
files (titles, notes, file names) never reach stdout or stderr as control characters nor a CSV
as a formula; a bare name that is a file or directory here says to write it as a path."""

from __future__ import annotations

import csv
import errno
import io
import json
import os
import re
import stat
from pathlib import Path

import pytest
import yaml

from tests.conftest import ROOT

pytestmark = pytest.mark.behaviour

# Every control character but newline and tab, C1 included (\x9b is a one-byte CSI), and the
# bidirectional overrides: none may reach a terminal raw.
RAW = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]")
HOSTILE = "\x1b[31mred\x1b]0;pwn\x07 \x9b2J \u202eevil"


def strings(doc) -> set:
    """Every string value of a JSON document."""
    if isinstance(doc, dict):
        return set().union(*map(strings, doc.values())) if doc else set()
    if isinstance(doc, list):
        return set().union(*map(strings, doc)) if doc else set()
    return {doc} if isinstance(doc, str) else set()


def preset(**fields: str) -> dict:
    raw = yaml.safe_load((ROOT / "presets" / "gpt2.yaml").read_text())
    raw.update(fields)
    return raw


@pytest.fixture
def mpl():
    return pytest.importorskip("matplotlib")


# ------------------------------------------------------------------------------ the cache

@pytest.fixture
def cache_dir(tmp_path, monkeypatch) -> Path:
    directory = tmp_path / "cache"
    directory.mkdir()
    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(directory))
    monkeypatch.delenv("FLOPCALC_NO_CACHE", raising=False)
    return directory


def _fresh_listing():
    from flopcalc.kinds import registry as kinds

    kinds._listing.cache_clear()
    return kinds._listing()


def test_cache_writes_never_follow_a_planted_link(cache_dir, tmp_path):
    from flopcalc.models import registry

    victim = tmp_path / "victim"
    victim.write_text("precious\n")
    for store in ("configs", "kinds"):
        # the temporary names the writer used to take (fixed: name.pid.tmp) and the final names
        (cache_dir / f"{store}.json.{os.getpid()}.tmp").symlink_to(victim)
        (cache_dir / f"{store}.json").symlink_to(victim)
    registry.load_model("gpt2", ["n_layers=7"])  # an input not validated before: remembered
    _fresh_listing()  # the kinds listing, rebuilt and remembered
    assert victim.read_text() == "precious\n"
    for store in ("configs", "kinds"):
        final = cache_dir / f"{store}.json"
        assert not final.is_symlink() and json.loads(final.read_text())  # the link replaced
        assert stat.S_IMODE(final.stat().st_mode) == 0o600  # private, whatever the umask


def test_a_cache_directory_that_is_a_link_or_another_users_is_not_used(tmp_path, monkeypatch):
    from flopcalc.models import registry

    monkeypatch.delenv("FLOPCALC_NO_CACHE", raising=False)
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    (tmp_path / "link").symlink_to(elsewhere)
    monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(tmp_path / "link"))
    assert registry.load_model("gpt2", ["n_layers=5"]).spec.n_layers() == 5
    _fresh_listing()
    assert list(elsewhere.iterdir()) == []
    if os.geteuid() == 0:  # only root can give a directory away
        foreign = tmp_path / "foreign"
        foreign.mkdir()
        os.chown(foreign, 65534, 65534)
        monkeypatch.setenv("FLOPCALC_CACHE_DIR", str(foreign))
        assert registry.load_model("gpt2", ["n_layers=3"]).spec.n_layers() == 3
        _fresh_listing()
        assert list(foreign.iterdir()) == []


def test_one_function_writes_every_file():
    # Every file flopcalc writes goes through flopcalc/writing.py (no link, no widened mode).
    writes = re.compile(r"write_text\(|write_bytes\(|os\.replace\(|open\([^)]*['\"][wax]b?['\"]"
                        r"|mkstemp\(|savefig\(\s*(?!buffer)")
    found = [f"{p.relative_to(ROOT)}:{i}" for p in (ROOT / "flopcalc").rglob("*.py")
             if p.name != "writing.py"
             for i, line in enumerate(p.read_text().splitlines(), 1) if writes.search(line)]
    assert found == []


# ------------------------------------------------------------------------------- --plot

SWEEP = ("sweep", "gpt2", "--seqs", "1k..2k")


def test_plot_refuses_a_read_only_file_and_a_link(cli, tmp_path, mpl):
    read_only = tmp_path / "ro.svg"
    read_only.write_text("keep")
    read_only.chmod(0o444)
    r = cli(*SWEEP, "--plot", read_only)
    assert r.code == 2 and "read-only" in r.err and r.err.count("\n") == 1 and r.out == ""
    assert read_only.read_text() == "keep"
    victim = tmp_path / "victim.svg"
    victim.write_text("keep")
    link = tmp_path / "link.svg"
    link.symlink_to(victim)
    r = cli(*SWEEP, "--plot", link)
    assert r.code == 2 and "symbolic link" in r.err and r.err.count("\n") == 1
    assert link.is_symlink() and victim.read_text() == "keep"


def test_plot_keeps_the_mode_of_the_file_it_replaces(cli, tmp_path, mpl):
    private = tmp_path / "private.svg"
    private.write_text("old")
    private.chmod(0o600)
    assert cli(*SWEEP, "--plot", private).code == 0
    assert stat.S_IMODE(private.stat().st_mode) == 0o600 and private.read_text().startswith("<")
    old = os.umask(0o002)
    try:  # a new file: 0666 less the umask, as the shell's > creates one
        assert cli(*SWEEP, "--plot", tmp_path / "new.svg").code == 0
    finally:
        os.umask(old)
    assert stat.S_IMODE((tmp_path / "new.svg").stat().st_mode) == 0o664
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new.svg", "private.svg"]


def test_every_target_that_cannot_be_written_is_one_line_and_exit_2(cli, tmp_path, mpl):
    (tmp_path / "a.svg").mkdir()
    (tmp_path / "file").write_text("")
    if os.geteuid() != 0:
        locked = tmp_path / "locked"
        locked.mkdir()
        locked.chmod(0o555)
        unwritable = locked / "x.svg"
    else:  # root writes any directory; sysfs refuses new files even to root
        unwritable = Path("/sys/x.svg")
    targets = [tmp_path / ("n" * 300 + ".svg"),  # ENAMETOOLONG: once exit 3
               tmp_path / ("n" * 300) / "x.svg",
               tmp_path / "missing" / "x.svg",
               tmp_path / "a.svg",
               tmp_path / "file" / "x.svg",
               unwritable]
    for target in targets:
        r = cli(*SWEEP, "--plot", target)
        assert (r.code, r.out, r.err.count("\n")) == (2, "", 1), (target, r.err)
        assert r.err.startswith("flopcalc: error: --plot "), r.err


def test_a_failed_write_leaves_the_old_file_and_no_temporary(cli, tmp_path, mpl, monkeypatch):
    target = tmp_path / "pic.svg"
    target.write_text("old")

    def full(fd):
        raise OSError(errno.ENOSPC, "No space left on device")

    monkeypatch.setattr(os, "fsync", full)  # the write is synced before it replaces the file
    r = cli(*SWEEP, "--plot", target)
    assert r.code == 2 and "no space left" in r.err and r.err.count("\n") == 1
    assert target.read_text() == "old" and [p.name for p in tmp_path.iterdir()] == ["pic.svg"]


def test_a_title_with_dollars_draws(cli, tmp_path, mpl):
    # matplotlib reads text between two $ as mathtext; '$\frac{$' made the run exit 3
    path = tmp_path / "m.yaml"
    path.write_text(yaml.safe_dump(preset(title="a $\\frac{$ b")))
    assert cli("sweep", path, "--seqs", "1k..2k", "--plot", tmp_path / "p.svg").code == 0


# ---------------------------------------------------------------------- escape sequences

def test_no_control_character_reaches_the_terminal(cli, tmp_path, monkeypatch):
    monkeypatch.setenv("COLUMNS", "120")
    model = tmp_path / "m\x1b[31m.yaml"  # a file name the stem of which becomes the model name
    model.write_text(yaml.safe_dump(preset(title=f"T {HOSTILE}", notes=f"N {HOSTILE}",
                                           source=f"S {HOSTILE}")))
    device = tmp_path / "dev\x1b]0;x\x07.yaml"
    raw = yaml.safe_load((ROOT / "presets" / "accelerators" / "h100-sxm.yaml").read_text())
    raw.update(title=f"GPU {HOSTILE}", notes=f"notes {HOSTILE}")
    device.write_text(yaml.safe_dump(raw))
    m, acc = str(model), ["--accelerator", str(device)]
    runs = [["model", m], ["show", m], ["sweep", m, "--seqs", "1k..2k"], ["compare", m, "gpt2"],
            ["conventions", m], ["infer", m, "--prompt", "512", "--gen", "64", *acc],
            ["train", m, *acc, "--count", "8", "--mfu", "0.4"], ["memory", m, *acc],
            ["serve", m, *acc], ["mfu", m, *acc, "--tokens-per-second", "1000"],
            ["step", m, *acc, "--count", "8", "--global-batch", "64"],
            ["plan", m, *acc, "--count", "8", "--global-batch", "64"],
            ["check", m, "--max", "params.total=1"]]
    brief = {"model", "infer", "train", "serve", "mfu", "step"}
    seen = 0
    for run in runs:
        formats = [[], ["-f", "csv"], ["-f", "json"]] if run[0] != "show" else [[]]
        formats += [["--brief"]] if run[0] in brief else []
        for extra in formats:
            r = cli(*run, *extra)
            assert r.code in (0, 1), (run, extra, r.err)
            assert not RAW.search(r.out), (run, extra, RAW.findall(r.out))
            assert not RAW.search(r.err), (run, extra, r.err)
            seen += "\\x1b" in r.out
            if extra == ["-f", "json"] and run[0] not in ("check",):
                assert f"T {HOSTILE}" in strings(r.json())  # JSON keeps the exact string
    assert seen >= 20  # shown, escaped, not dropped
    assert yaml.safe_load(cli("show", m).out)["title"] == f"T {HOSTILE}"
    for bad in (str(tmp_path / "no\x1b[2Jsuch.yaml"), "gp\x9bt2",  # errors quote the name,
                str(tmp_path / "no\nflopcalc: error: forged.yaml")):  # on one line
        r = cli("model", bad)
        assert r.code == 2 and not RAW.search(r.err) and r.err.count("\n") == 1


def test_a_newline_in_a_title_forges_no_line(cli, tmp_path):
    model = tmp_path / "m.yaml"
    model.write_text(yaml.safe_dump(preset(title="real\nparams        1 (fake)")))
    for run in (["model", model, "--brief"], ["model", model]):
        out = cli(*run).out
        assert not re.search(r"^params +1 \(fake\)", out, re.M), out
    rows = list(csv.reader(io.StringIO(cli("compare", model, "gpt2", "-f", "csv").out)))
    assert len(rows) == 3 and rows[1][4] == "real\nparams        1 (fake)"  # quoted, whole


# --------------------------------------------------------------------------------- CSV

def test_csv_cells_never_start_a_formula(cli, tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    formula = '=HYPERLINK("http://evil.example","x")'
    Path("+cmd.yaml").write_text(yaml.safe_dump(preset(title=formula)))
    rows = list(csv.reader(io.StringIO(cli("compare", "./+cmd.yaml", "gpt2", "-f", "csv").out)))
    header, mine = rows[0], rows[1]
    assert mine[0] == "'+cmd" and mine[header.index("title")] == "'" + formula
    for run in (["model", "./+cmd.yaml"], ["infer", "./+cmd.yaml", "--prompt", "8", "--gen", "8"]):
        long = list(csv.reader(io.StringIO(cli(*run, "-f", "csv").out)))
        assert {row[0] for row in long[1:]} == {"'+cmd"}
    # numbers stay numbers: conventions' deltas below the reference are negative floats
    conventions = list(csv.reader(io.StringIO(cli("conventions", "gpt2", "-f", "csv").out)))
    column = conventions[0].index("delta_pct")
    deltas = [row[column] for row in conventions[1:]]
    assert any(d.startswith("-") for d in deltas) and all(float(d) == float(d) for d in deltas)


# ------------------------------------------------------------------- a bare name that is here

def test_a_bare_directory_name_says_write_it_as_a_path(cli, tmp_path, monkeypatch):
    # (a file of that name had the hint already; a directory, such as a downloaded model's
    # folder holding its config.json, had none)
    monkeypatch.chdir(tmp_path)
    Path("mymodel").mkdir()
    r = cli("model", "mymodel")
    assert r.code == 2 and "write it as a path: ./mymodel" in r.err
    assert r.err.count("\n") == 1
