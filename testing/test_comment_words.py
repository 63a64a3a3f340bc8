"""Product code says why, never when: a comment, docstring or message that gives a benchmark run, a date or a GPU
model as its reason goes stale as soon as the next run or card comes, and tells the reader nothing they can check.
The reason is written as a fact (what happens without the code), and a measured number names the test, the
docs/MEASURED.md heading or the docs/BENCHMARKS.md section that holds it.

The words looked for are the ones this repository's comments used for that, and only those:
- a run ordinal before run, sweep or session ("the twenty-third run", "Tenth sweep", "14th session");
- an ISO date (2026-12-04);
- H100 and H200, the cards the benchmarks ran on (case-sensitive: docs/bench/ folder names spell them lower-case).
  Architecture names (Ada, Hopper, Blackwell) are capabilities a kernel needs, so they stay allowed.

Citing the benchmark runs is itself an offence, since that is naming a run or a date as the reason: the diary
docs/bench/HISTORY.md (its sections are named by run: `docs/bench/HISTORY.md "Fourteenth run"` is reported once,
heading included) and any path under docs/bench/ (its folders are named by date and card). Product code cites a
docs/MEASURED.md heading instead (a short name for the fact; the entry points on to the runs), a docs/BENCHMARKS.md
section or a test. A quoted section after docs/MEASURED.md must be one of its headings, and one after docs/BENCHMARKS.md
must begin a heading there, so a citation cannot point at a section that was renamed or never existed.
"""

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PRODUCT = ("toolkit", "extensions_built_in", "jobs", "ui/src", "run.py")
SUFFIXES = {".py", ".ts", ".tsx", ".js", ".jsx", ".mjs"}

_ORDINAL = (
    r"(?:first|second|third|fourth|fifth|sixth|seventh|eighth|ninth|tenth|eleventh|twelfth|[a-z]+teenth"
    r"|twentieth|thirtieth|(?:twenty|thirty)-[a-z]+|\d+(?:st|nd|rd|th))"
)
WORDS = [
    # across a line break too: "the twenty-third\n    # run"
    ("a run ordinal", re.compile(rf"\b{_ORDINAL}\s+(?:(?:#|//|\*)\s*)?(?:run|sweep|session)s?\b", re.IGNORECASE)),
    ("a date", re.compile(r"\b20\d\d-[01]\d-[0-3]\d\b")),
    ("a GPU model", re.compile(r"\bH[12]00\b")),
]
CITATIONS = [
    # the diary with the heading it names, which may start the next line of the comment or docstring
    (
        "a citation of the benchmark diary",
        re.compile(r"""(?:docs/bench/)?\bHISTORY\.md(?:[,:]?[ \t]*(?:\n[ \t]*(?:#|//|\*)?[ \t]*)?"[^"\n]*")?"""),
    ),
    ("a path under docs/bench/", re.compile(r"""docs/bench/[^\s"'`),;]*""")),
]


def offending_words(text: str) -> list[tuple[int, str, str]]:
    """(line number, what, the words) for each citation of the benchmark runs and each word of the list in text."""
    found = []

    def cited(what, match):
        found.append((text.count("\n", 0, match.start()) + 1, what, flat(match.group(0))))
        return "\n" * match.group(0).count("\n") + " "  # blanked, line breaks kept: its run or date is reported once

    for what, pattern in CITATIONS:
        text = pattern.sub(lambda m, what=what: cited(what, m), text)
    found += [
        (text.count("\n", 0, match.start()) + 1, what, flat(match.group(0)))
        for what, pattern in WORDS
        for match in pattern.finditer(text)
    ]
    return sorted(found)


def flat(span: str) -> str:
    return " ".join(span.replace("#", " ").split())


def headings(document: Path) -> list[str]:
    """The Markdown headings of a document, fenced code left out (its shell comments start with # too)."""
    found, fenced = [], False
    for line in document.read_text(encoding="utf-8").splitlines():
        fenced ^= line.startswith("```")
        if not fenced and re.match(r"#{1,6} ", line):
            found.append(line.lstrip("#").strip())
    return found


SECTION = re.compile(r"""(BENCHMARKS|HISTORY|MEASURED)\.md[,:]?[ \t]*(?:\n[ \t]*(?:#|//|\*)?[ \t]*)?"([^"\n]*)\"""")
DOCUMENTS = {
    "BENCHMARKS": ROOT / "docs/BENCHMARKS.md",
    "HISTORY": ROOT / "docs/bench/HISTORY.md",
    "MEASURED": ROOT / "docs/MEASURED.md",
}
EXACT = {"MEASURED"}  # its headings are short names, cited whole; the others' carry a card and a date after the name


def product_files() -> list[Path]:
    files = []
    for entry in PRODUCT:
        path = ROOT / entry
        candidates = [path] if path.is_file() else sorted(path.rglob("*"))
        files += [p for p in candidates if p.suffix in SUFFIXES and "node_modules" not in p.parts]
    return files


def test_product_code_gives_no_run_date_or_card_as_a_reason():
    files = product_files()
    assert len(files) > 100, "the scan found too few files: a product folder moved?"
    hits = [
        f"{path.relative_to(ROOT)}:{number}: {what} ({words!r})"
        for path in files
        for number, what, words in offending_words(path.read_text(encoding="utf-8", errors="replace"))
    ]
    assert not hits, (
        "say why as a fact and name the test, docs/MEASURED.md heading or docs/BENCHMARKS.md section that holds a "
        "measured number, not the run, the date or the card:\n" + "\n".join(hits)
    )


def test_the_scan_finds_each_word_and_each_citation_of_the_runs():
    dated = "docs/bench/" + "foo_2026-12-02/x.json"  # in parts: test_doc_citations.py checks that cited paths exist
    planted = "\n".join(
        [
            "x = 1  # fine: Hopper's float8 tensor cores, the first request, a 141 GB card",
            "# the twenty-third run found CUDA graphs re-recorded",
            '"""Tenth sweep: 342 s of 392 s."""',
            "// Qwen-Image ran out of memory (2026-12-04)",
            "# 0.52 s/step on the H200",
            "# the 14th session",
            "# raw: docs/bench/family_sweep_2026-12-02/flux2.json and docs/bench/epilogues_2026-12-05_h100/",
            '# docs/bench/HISTORY.md "Fourteenth run", then the H100 again',
            "    # a wrapped citation (docs/bench/HISTORY.md",
            '    # "Twenty-third run"), then the twenty-fourth run',
            "# and one wrapped: the thirteenth",
            "# run",
            '# 0.577 s/step (docs/bench/HISTORY.md "Tenth sweep")',
            "# raw: " + dated,
            '# fine: docs/MEASURED.md "8-bit component sizes", docs/BENCHMARKS.md "Memory plan", a test',
        ]
    )
    diary, path = "a citation of the benchmark diary", "a path under docs/bench/"
    assert offending_words(planted) == [
        (2, "a run ordinal", "twenty-third run"),
        (3, "a run ordinal", "Tenth sweep"),
        (4, "a date", "2026-12-04"),
        (5, "a GPU model", "H200"),
        (6, "a run ordinal", "14th session"),
        (7, path, "docs/bench/epilogues_2026-12-05_h100/"),
        (7, path, "docs/bench/family_sweep_2026-12-02/flux2.json"),
        (8, "a GPU model", "H100"),
        (8, diary, 'docs/bench/HISTORY.md "Fourteenth run"'),
        (9, diary, 'docs/bench/HISTORY.md "Twenty-third run"'),
        (10, "a run ordinal", "twenty-fourth run"),
        (11, "a run ordinal", "thirteenth run"),
        (13, diary, 'docs/bench/HISTORY.md "Tenth sweep"'),
        (14, path, dated),
    ]


def missing_sections(text: str, titles: dict) -> list[str]:
    """Each section cited in text with no heading of its document beginning with it."""
    return [
        f'{document}.md "{section}"'
        for document, section in SECTION.findall(text)
        if not any(
            title == section or (document not in EXACT and title.startswith(section)) for title in titles[document]
        )
    ]


def test_a_cited_section_begins_a_heading_of_its_document():
    titles = {name: headings(path) for name, path in DOCUMENTS.items()}
    planted = (
        '# 2.7x (docs/BENCHMARKS.md "Memory plan"; docs/bench/HISTORY.md\n# "Tenth sweep"; '
        'docs/BENCHMARKS.md "Speed per card"; docs/MEASURED.md\n# "8-bit component sizes"; '
        'docs/MEASURED.md "8-bit component"; docs/MEASURED.md "No such fact")'
    )
    assert missing_sections(planted, titles) == [  # in parts: not citations
        "BENCHMARKS" + '.md "Speed per card"',
        "MEASURED" + '.md "8-bit component"',
        "MEASURED" + '.md "No such fact"',
    ]
    missing = [
        f"{path.relative_to(ROOT)}: {cited}"
        for path in product_files()
        for cited in missing_sections(path.read_text(encoding="utf-8", errors="replace"), titles)
    ]
    assert not missing, "no heading begins with the section cited:\n" + "\n".join(missing)
