"""Every citation of a document must lead to a document this repository has.

Docs, docstrings, comments and the server's OpenAPI description (a string in ``server.py``) send readers to
other documents: ``docs/BENCHMARKS.md``, ``README "Frames"``, ``docs/bench/load_engine.json``. A renamed or
deleted file leaves that reader at a dead end, and so does a note copied from a planning file that never
shipped with the project (a planning ``ref`` folder, design and planning notes, the ``shared`` folder beside a
checkout: ``OUTSIDE`` below, spelled in parts so this file cites none of them). This scans every
tracked text file the project owns (``git ls-files``) and fails with ``file:line`` for each such citation.

What counts as a citation: a ``*.md`` path whose first folder is one of the repository's own top-level folders,
or an upper-case document name (``README.md``, ``BENCHMARKS.md``), resolved against the citing file's folder,
the folders above it and the repository root; any ``docs/...`` path (globs and ``run5a…`` ranges allowed);
``README "Section"``, which needs that heading in README.md; and, in docs/ARCHITECTURE.md and docs/PROTOCOL.md,
every backticked repo path with a code or data extension. Lower-case bare names (``report.md``) and git-ignored
paths are files that scripts write, not documents, and are left alone.
"""

from __future__ import annotations

import fnmatch
import os
import re
import subprocess
from functools import lru_cache
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
TEXT_SUFFIXES = {".py", ".ts", ".tsx", ".mts", ".mjs", ".md", ".yaml", ".yml", ".sh"}
# docs/bench/: raw benchmark output, tables written by scripts. This file: its examples are broken on purpose.
SKIPPED = ("docs/bench/", "testing/test_doc_citations.py")
STRICT_DOCS = ("docs/ARCHITECTURE.md", "docs/PROTOCOL.md")

# Documents that live outside the repository, as a planning checkout had them.
OUTSIDE = ("ref" + "/anchors.md", "DES" + "IGN.md", "../" + "shared/notes")
OUT_OF_REPO = re.compile(
    r"(?<![\w./-])(" + "ref" + r"/[\w./-]+|(?:[\w.-]+/)*(?:" + "DES" + "IGN|" + "PLAN" + r"NING)\.md\b"
    r"|(?:\.\./)+" + "sha" + r"red\b[\w./-]*)"
)
MD_PATH = re.compile(r"(?<![\w$./-])((?:\.\./)*(?:[\w.-]+/)*[\w-]+\.md)\b")
DOCS_PATH = re.compile(r"(?<![\w$./-])((?:\.\./)*docs/[\w./*-]*)")
SECTION = re.compile(r'\bREADME(?:\.md)?\s+\\?"([^"\\]+)\\?"')
BACKTICKED = re.compile(r"`([^`\s]+)`")
REPO_FILE = re.compile(r"^[\w.\[\]<>*-]+(?:/[\w.\[\]<>*-]+)+\.(?:py|ts|tsx|md|yaml|json|sh)$")


@lru_cache(maxsize=None)
def tracked() -> tuple[frozenset, frozenset]:
    """(tracked files, every folder above one), as repository-relative paths."""
    out = subprocess.run(["git", "ls-files", "-z"], cwd=ROOT, capture_output=True, check=True).stdout
    files = frozenset(p for p in out.decode().split("\0") if p)
    folders = {str(parent) for f in files for parent in Path(f).parents if str(parent) != "."}
    return files, frozenset(folders)


def bases(citing_file: str) -> list[str]:
    """Where a relative citation may be read from: the citing file's folder, each folder above it, the root
    (``ui/e2e/helpers.ts`` says ``../docs/img`` for a command run in ``ui/``)."""
    return [str(p) for p in Path(citing_file).parents]


def resolved(target: str, citing_file: str) -> list[str]:
    paths = [os.path.normpath(os.path.join(base, target.rstrip("/"))) for base in bases(citing_file)]
    return [p for p in dict.fromkeys(paths) if not p.startswith("..")]


def exists(target: str, citing_file: str, prefix: bool = False) -> bool:
    """``target`` names a tracked file or folder (or, with ``prefix``, begins one's path)."""
    files, folders = tracked()
    for path in resolved(target, citing_file):
        if prefix:
            if any(f.startswith(path) for f in files):
                return True
        elif "*" in path:
            if fnmatch.filter(files, path):
                return True
        elif path in files or path in folders:
            return True
    return False


def ignored(target: str, citing_file: str) -> bool:
    """A path git ignores is an output the code writes (``testing/.engine_test_outputs/report.md``)."""
    return any(
        subprocess.run(["git", "check-ignore", "-q", "--no-index", p], cwd=ROOT).returncode == 0
        for p in resolved(target, citing_file)
    )


@lru_cache(maxsize=None)
def readme_headings() -> frozenset:
    text = (ROOT / "README.md").read_text(encoding="utf-8")
    return frozenset(m.group(1).strip() for m in re.finditer(r"^#+\s+(.+)$", text, re.M))


def is_document_citation(target: str) -> bool:
    """A ``.md`` path that means a repository document: under a top-level folder, or an upper-case name."""
    first = target.split("/")[0]
    top_level = {f.split("/")[0] for f in tracked()[1]}
    return first == ".." or first in top_level or ("/" not in target and target[:1].isupper())


def broken_citations(rel_path: str, text: str) -> list[str]:
    """``file:line: target (why)`` for every citation in ``text`` (the contents of ``rel_path``) that is broken."""
    problems = []
    strict = rel_path in STRICT_DOCS
    for number, line in enumerate(text.splitlines(), 1):
        where = f"{rel_path}:{number}"
        for m in OUT_OF_REPO.finditer(line):
            problems.append(f"{where}: {m.group(1)} (outside the repository)")
        cited: dict[str, bool] = {}  # target -> is a prefix (cited as the start of a "run5a…run8b" range)
        for m in MD_PATH.finditer(line):
            if is_document_citation(m.group(1)) and not OUT_OF_REPO.search(m.group(1)):
                cited[m.group(1)] = False
        for m in DOCS_PATH.finditer(line):
            target = m.group(1).rstrip(".")
            cited[target] = line[m.end() :].startswith("…")
        if strict:
            for m in BACKTICKED.finditer(line):
                if REPO_FILE.match(m.group(1)):
                    cited.setdefault(re.sub(r"<[^>]*>", "*", m.group(1)), False)
        for target, prefix in cited.items():
            if not exists(target, rel_path, prefix) and not ignored(target, rel_path):
                problems.append(f"{where}: {target} (no such file in the repository)")
        for m in SECTION.finditer(line):
            if m.group(1).strip() not in readme_headings():
                problems.append(f'{where}: README "{m.group(1)}" (no such heading in README.md)')
    return problems


def owned_text_files() -> list[str]:
    files, _ = tracked()
    return sorted(
        f
        for f in files
        if not f.startswith(SKIPPED)
        and "node_modules/" not in f
        and (Path(f).suffix in TEXT_SUFFIXES or Path(f).name == "Makefile" or f.startswith(".ci/"))
    )


def test_every_cited_document_exists_in_the_repository():
    files = owned_text_files()
    assert "extensions_built_in/inference_engine/server.py" in files and "README.md" in files
    problems = []
    for rel in files:
        problems += broken_citations(rel, (ROOT / rel).read_text(encoding="utf-8", errors="replace"))
    assert not problems, "broken document citations:\n" + "\n".join(problems)


def test_the_checker_catches_bad_citations():
    text = (
        f"See docs/NOPE.md and {OUTSIDE[0]}; not {OUTSIDE[1]} either, nor {OUTSIDE[2]}.\n"
        'Fine: docs/BENCHMARKS.md, README "Frames", README.md, testing/.engine_test_outputs/report.md.\n'
        'Broken: README "No such section".\n'
    )
    problems = broken_citations("toolkit/example.py", text)
    assert any("toolkit/example.py:1: docs/NOPE.md" in p for p in problems), problems
    for outside in OUTSIDE:
        assert any(f"toolkit/example.py:1: {outside}" in p and "outside the repository" in p for p in problems)
    assert [p for p in problems if ":3:" in p] == [
        'toolkit/example.py:3: README "No such section" (no such heading in README.md)'
    ]
    assert not [p for p in problems if ":2:" in p], problems
    assert broken_citations("docs/ARCHITECTURE.md", "`toolkit/models/components/nope.py`")
    assert not broken_citations("docs/ARCHITECTURE.md", "`toolkit/models/archs/<family>.py`")
