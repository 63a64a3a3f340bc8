"""The shape of the two documents people read first: README.md and docs/BENCHMARKS.md.

Both are read in terminals, diffs and narrow panes, so no line is longer than 120 characters (nor in
docs/MEASURED.md, which the code's comments send readers to). The benchmarks
document is a reference: it opens with a table, every table row that names a `run` has that command listed under a
table, and the per-family speed table quotes figures that the kept raw runs still give (the generated
docs/bench/sweep_table.md for the H200 cells, the cards run's JSON for the H100 cells marked †), so a figure
copied by hand cannot drift from the run it came from.
"""

from __future__ import annotations

import json
import re
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
README = ROOT / "README.md"
BENCHMARKS = ROOT / "docs/BENCHMARKS.md"
MEASURED = ROOT / "docs/MEASURED.md"
SWEEP_TABLE = ROOT / "docs" / "bench" / "sweep_table.md"
CARDS_RUN = ROOT / "docs" / "bench" / "cards_2026-12-07_h100"
MAX_LINE = 120


def long_lines(path: Path) -> list[str]:
    lines = path.read_text(encoding="utf-8").splitlines()
    return [
        f"{path.relative_to(ROOT)}:{n}: {len(line)} characters"
        for n, line in enumerate(lines, 1)
        if len(line) > MAX_LINE
    ]


@pytest.mark.parametrize("path", [README, BENCHMARKS, MEASURED], ids=lambda p: p.name)
def test_no_line_is_longer_than_120_characters(path):
    assert not long_lines(path), (
        "wrap these lines (a table row: shorten it, its detail in a list below):\n" + "\n".join(long_lines(path))
    )


def cells(line: str) -> list[str]:
    return [c.strip() for c in line.strip().strip("|").split("|")]


def test_benchmarks_opens_with_a_table():
    first = "\n".join(BENCHMARKS.read_text(encoding="utf-8").splitlines()[:60])
    assert tables(first), "docs/BENCHMARKS.md is a reference: a table within its first 60 lines"


def tables(text: str) -> list[list[list[str]]]:
    """Each markdown table of ``text``: its header, then its rows."""
    out, current = [], None
    lines = text.splitlines()
    for i, line in enumerate(lines):
        if re.match(r"^\|(\s*:?-+:?\s*\|)+\s*$", line) and i > 0 and lines[i - 1].startswith("|"):
            current = [cells(lines[i - 1])]
            out.append(current)
        elif current is not None and line.startswith("|"):
            current.append(cells(line))
        else:
            current = None
    return out


def test_every_run_a_benchmark_row_names_is_listed_under_a_table():
    text = BENCHMARKS.read_text(encoding="utf-8")
    listed = set()
    for comment in re.findall(r"^# (.+)$", text, re.M):
        listed |= set(re.findall(r"(?<![\w./-])([a-z]\d{0,2})(?=[:,] )", comment))
    named = set()
    for table in tables(text):
        if "run" in table[0]:
            column = table[0].index("run")
            for row in table[1:]:
                named |= {key for key in re.split(r",\s*", row[column]) if key not in ("", "—")}
    assert named, "no table names a run"
    assert named <= listed, f"rows name runs no command list gives: {sorted(named - listed)}"


def family_rows() -> dict[str, list[str]]:
    text = BENCHMARKS.read_text(encoding="utf-8")
    section = text[text.index("## Speed per family") :].split("\n## ")[0]
    (table,) = [t for t in tables(section) if t[0][:2] == ["family", "native"]]
    assert table[0][2:6] == ["full card (× bare)", "24 GiB (× full)", "16 GiB (× full)", "12 GiB (× full)"]
    return {row[0]: row for row in table[1:]}


def sweep_rows() -> dict[str, list[str]]:
    ((header, *rows),) = [t for t in tables(SWEEP_TABLE.read_text(encoding="utf-8")) if t[0][0] == "arch"]
    return {row[0]: row for row in rows}


FIGURE = re.compile(r"^(?P<step>[\d.]+) \((?P<ratio>[\d.]+)×\)(?P<card>†)?")


def test_every_family_of_the_sweeps_has_a_row_and_every_row_a_family_of_the_sweeps():
    """A family the sweeps have not run yet (its full-card cell "not run") is named under the table instead."""
    measured = {arch for arch, row in sweep_rows().items() if row[2] != "not run"}
    assert set(family_rows()) == measured
    text = BENCHMARKS.read_text(encoding="utf-8")
    section = text[text.index("## Speed per family") :].split("\n## ")[0]
    not_yet = section[section.index("Families not in the table") :].split("\n- ")[0]
    assert (
        sorted(a for a in set(sweep_rows()) - measured if not re.search(rf"(?<![\w.]){re.escape(a)}(?![\w.])", not_yet))
        == []
    )


def test_the_h200_figures_per_family_are_the_ones_the_kept_sweeps_give():
    sweeps = sweep_rows()
    checked = 0
    for arch, row in family_rows().items():
        sweep = sweeps[arch]
        full = FIGURE.match(row[2])
        assert full and not full["card"], f"{arch}: the full card's cell {row[2]!r}"
        assert sweep[2].startswith(full["step"] + " ") and f"({full['ratio']}× bare" in sweep[2], (
            f"{arch}: full card {row[2]!r}, the sweeps give {sweep[2][:60]!r}"
        )
        checked += 1
        for cell, kept in ((row[3], sweep[3]), (row[4], sweep[4])):
            if cell.startswith("too large"):
                assert kept.startswith("predicted:") and "does not fit" in kept, f"{arch}: {kept[:80]!r}"
                continue
            figure = FIGURE.match(cell)
            assert figure, f"{arch}: {cell!r}"
            if figure["card"]:
                continue  # an H100 cell: the next test
            step, ratio = re.escape(figure["step"]), re.escape(figure["ratio"])
            assert re.search(rf"{step} s/step(?: \[[^\]]*\])? \({ratio}×", kept), (
                f"{arch}: {cell!r}, the sweeps give {kept[:120]!r}"
            )
            checked += 1
    assert checked > 60


def test_the_h100_figures_per_family_are_the_ones_the_cards_run_gives():
    checked = 0
    for arch, row in family_rows().items():
        marked = [(budget, FIGURE.match(cell)) for budget, cell in zip(("24", "16", "12"), row[3:6])]
        marked = [(budget, figure) for budget, figure in marked if figure and figure["card"]]
        if not marked:
            continue
        runs = json.loads((CARDS_RUN / f"{arch}_cards.json").read_text())["families"][arch]["runs"]
        full = runs["0"]["warm"]["timings"]["step_s"]
        for budget, figure in marked:
            step = runs[budget]["warm"]["timings"]["step_s"]
            assert abs(float(figure["step"]) - step) < 1e-4, f"{arch} at {budget} GiB: {figure[0]} against {step}"
            assert abs(float(figure["ratio"]) - step / full) < 0.006, f"{arch} at {budget} GiB: × {step / full:.3f}"
            checked += 1
    assert checked >= 10


def anchor(heading: str) -> str:
    """GitHub's anchor for a markdown heading: lower case, punctuation dropped, spaces to hyphens."""
    return re.sub(r"[^\w\- ]", "", heading.strip().lower()).replace(" ", "-")


def test_every_link_to_a_benchmarks_section_finds_its_heading():
    """README and the docs link figures by section (``docs/BENCHMARKS.md#speed-per-family``); a renamed heading
    would leave the link on the top of the file with nothing said."""
    headings = {anchor(h) for h in re.findall(r"^#+\s+(.+)$", BENCHMARKS.read_text(encoding="utf-8"), re.M)}
    tracked = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout.decode()
    linked, broken = 0, []
    for rel in tracked.split("\0"):
        if not rel.endswith((".md", ".py", ".ts", ".tsx")) or "node_modules/" in rel or rel.startswith("docs/bench/"):
            continue
        text = (ROOT / rel).read_text(encoding="utf-8", errors="replace")
        for number, line in enumerate(text.splitlines(), 1):
            for name in re.findall(r"BENCHMARKS\.md#([\w-]+)", line):
                linked += 1
                if name not in headings:
                    broken.append(f"{rel}:{number}: #{name}")
    assert linked, "README links its measurements to docs/BENCHMARKS.md's sections"
    assert not broken, "no such section in docs/BENCHMARKS.md:\n" + "\n".join(broken)
