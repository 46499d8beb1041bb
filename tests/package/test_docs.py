"""The docs cannot drift from the code: every generated region of README.md and docs/ (sample
outputs, option tables, the kinds and hardware tables) is what `python tools/docs.py` writes
now; every command has exactly one page, whose option table lists every option the command line
parses and is the page's only option table; every relative link and every source path a page
names exists."""

from __future__ import annotations

import importlib.util
import re
import sys
from pathlib import Path

import pytest

from tests.conftest import ROOT

pytestmark = pytest.mark.behaviour

PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.md"))]
def _tool():
    spec = importlib.util.spec_from_file_location("flopcalc_docs_tool", ROOT / "tools" / "docs.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


docs = _tool()
COMMANDS = docs.command_names()  # as the CLI registers them: a new command needs a page


def _regions():
    for page in PAGES:
        for key, body in docs.regions(page.read_text()):
            yield pytest.param(page, key, body, id=f"{page.relative_to(ROOT)}: {key}")


@pytest.mark.parametrize("page, key, body", list(_regions()))
def test_generated_region_is_what_the_generator_writes_now(page, key, body):
    assert body == docs.generate(key), (
        f"{page.relative_to(ROOT)}: region {key!r} is stale; run python tools/docs.py")


def test_readme_has_its_samples_and_is_short():
    readme = (ROOT / "README.md").read_text()
    keys = [key for key, _ in docs.regions(readme)]
    assert keys == ["sample model", "sample memory", "sample step", "sample serve"]
    assert len(readme.splitlines()) <= 300


def test_every_command_has_exactly_one_page_with_its_option_table():
    assert len(COMMANDS) >= 17
    pages = {p.stem: p for p in (ROOT / "docs" / "commands").glob("*.md")}
    assert set(pages) == set(COMMANDS)
    for name, page in pages.items():
        keys = [key for key, _ in docs.regions(page.read_text())]
        assert keys.count(f"options {name}") == 1, page
        assert not [k for k in keys if k.startswith("options ") and k != f"options {name}"], page


@pytest.mark.parametrize("name", COMMANDS)
def test_option_table_lists_every_flag_the_command_parses(name):
    """Each flag Click parses for the command, `--no-x` forms included, is in a row of its
    page's table; a flag the command lacks is in none."""
    command = docs.click_command(name)
    flags = {o for p in command.params if p.param_type_name == "option"
             for o in (*p.opts, *p.secondary_opts)}
    page = (ROOT / "docs" / "commands" / f"{name}.md").read_text()
    body = dict(docs.regions(page))[f"options {name}"]
    listed = set()
    for row in body.splitlines():
        if row.startswith("| `-"):
            listed |= set(re.findall(r"`(-[-\w]+)`", row.split(" | ")[0]))
    assert listed == flags


def test_the_check_catches_a_stale_table(tmp_path):
    """A row edited by hand differs from the regenerated region."""
    page = (ROOT / "docs" / "commands" / "model.md").read_text()
    edited = page.replace("| `--batch` | `B` | `1` |", "| `--batch` | `B` | `2` |")
    assert edited != page
    assert docs.rendered(edited) == page


# A table whose first column lists flags (`--seq`, `-f`): an option table.
FLAG_CELL = re.compile(r"^`-{1,2}[A-Za-z]")


def option_tables(text: str) -> list[str]:
    """The first row of every markdown table outside the generated regions and code blocks whose
    first column lists flags: an option table written by hand beside the generated one."""
    text = FENCE.sub("", docs.REGION.sub("", text))
    found, table = [], []
    for line in [*text.splitlines(), ""]:
        if line.startswith("|"):
            table.append(line)
            continue
        firsts = [row.strip("|").split(" | ")[0].strip() for row in table[2:]]
        if any(FLAG_CELL.match(cell) for cell in firsts):
            found.append(table[0])
        table = []
    return found


@pytest.mark.parametrize("page", sorted((ROOT / "docs" / "commands").glob("*.md")),
                         ids=lambda p: p.name)
def test_options_are_documented_once_in_the_generated_table(page):
    """A command's options are documented in one place, the table generated from the registry:
    a second table of them written by hand would drift (an old name, another default). What an
    option's one-line help cannot hold is prose under "Notes on the options"."""
    assert option_tables(page.read_text()) == [], (
        f"{page.relative_to(ROOT)}: an option table outside the generated region; put its "
        "details into the option's help (flopcalc/commands/options.py) or prose")


def test_the_check_finds_a_hand_written_option_table():
    """The check sees an option table outside the generated markers (the generated one itself
    without them, one written by hand) and not inside them, nor the pages' other tables
    (formulas, conventions)."""
    table = dict(docs.regions((ROOT / "docs" / "commands" / "model.md").read_text()))[
        "options model"]
    assert option_tables(table) == ["| option | value | default | meaning |"]
    page = f"# model\n\n<!-- generated: options model -->\n{table}<!-- end generated -->\n"
    assert option_tables(page) == []
    hand = "Text.\n\n| option | meaning |\n|---|---|\n| `--seq N` | the length |\n\nMore.\n"
    assert option_tables(hand + page) == ["| option | meaning |"]
    formulas = "| term | per head |\n|---|---|\n| `qk` (QKᵀ) | `m·n·(2·d_k − 1)` |\n"
    assert option_tables(formulas) == []


def test_every_kind_has_a_description():
    rows = [r for r in docs.kinds().splitlines()[2:]]
    assert len(rows) >= 15
    assert all(not r.endswith("|  |") for r in rows), rows


# ------------------------------------------------------------------------------------- links

LINK = re.compile(r"\]\(([^)\s]+)\)")
FENCE = re.compile(r"^```.*?^```", re.S | re.M)


def _slug(heading: str) -> str:
    """GitHub's anchor for a heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def _anchors(path: Path) -> set[str]:
    text = FENCE.sub("", path.read_text())
    return {_slug(m) for m in re.findall(r"^#{1,6} (.+)$", text, flags=re.M)}


def _links():
    for page in PAGES:
        for target in LINK.findall(FENCE.sub("", page.read_text())):
            if re.match(r"[a-z]+:", target):  # https:, mailto:
                continue
            yield pytest.param(page, target, id=f"{page.relative_to(ROOT)} -> {target}")


@pytest.mark.parametrize("page, target", list(_links()))
def test_relative_link_points_to_a_file_that_exists(page, target):
    path, _, anchor = target.partition("#")
    dest = (page.parent / path).resolve() if path else page
    assert dest.exists(), f"{page.relative_to(ROOT)}: {target} does not exist"
    if anchor and dest.suffix == ".md":
        assert anchor in _anchors(dest), f"{page.relative_to(ROOT)}: no heading #{anchor}"


SOURCE = re.compile(r"(?<![\w/.-])((?:tests|flopcalc|tools|benchmarks)/[\w./-]*?\.py)\b")


def _sources():
    for page in PAGES:
        for path in sorted(set(SOURCE.findall(page.read_text()))):
            yield pytest.param(path, id=f"{page.relative_to(ROOT)}: {path}")


@pytest.mark.parametrize("path", list(_sources()))
def test_source_path_named_on_a_page_exists(path):
    assert (ROOT / path).exists(), f"{path} is named in the docs but does not exist"


def test_the_checks_find_links_and_paths():
    assert len(list(_links())) >= 50
    assert len(list(_sources())) >= 50
