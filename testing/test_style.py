"""Lint and format are part of the suite: `make test` (and CI) fail on a lint error or an unformatted file, with
ruff's own report. The configuration is pyproject.toml's [tool.ruff]; `.venv/bin/ruff format .` and
`.venv/bin/ruff check --fix .` repair most of what these find."""

import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def ruff(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "ruff", *args], cwd=ROOT, capture_output=True, text=True)


def test_ruff_lint_is_clean():
    result = ruff("check", "--output-format", "concise", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_ruff_format_leaves_every_file_as_it_is():
    result = ruff("format", "--check", ".")
    assert result.returncode == 0, result.stdout + result.stderr


def test_the_checks_fail_on_a_bad_file(tmp_path):
    """The two commands above do fail: an unused import and a badly formatted line, outside the repository."""
    bad = tmp_path / "bad.py"
    bad.write_text("import os\nx=[1,2 ,3]\n")
    config = ["--config", str(ROOT / "pyproject.toml")]
    lint = subprocess.run([sys.executable, "-m", "ruff", "check", *config, str(bad)], capture_output=True, text=True)
    fmt = subprocess.run([sys.executable, "-m", "ruff", "format", "--check", *config, str(bad)], capture_output=True)
    assert lint.returncode == 1 and "F401" in lint.stdout
    assert fmt.returncode == 1
