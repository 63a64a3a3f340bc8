"""Extension discovery: good and broken packages side by side in a real folder."""

import os
import sys
import textwrap
import uuid

import pytest

from jobs.ExtensionJob import ExtensionJob
from toolkit.extension import (
    EXTENSION_DIRS_ENV,
    Extension,
    extension_dirs,
    get_all_extensions,
    get_all_extensions_process_dict,
    get_extension_failures,
)
from toolkit.paths import TOOLKIT_ROOT

GOOD_INIT = """
from toolkit.extension import Extension

class GoodExtension(Extension):
    uid = "{uid}"
    name = "Good extension"

    @classmethod
    def get_process(cls):
        from .process import GoodProcess
        return GoodProcess

AI_TOOLKIT_EXTENSIONS = [GoodExtension]
"""

GOOD_PROCESS = """
from jobs.process.BaseExtensionProcess import BaseExtensionProcess

class GoodProcess(BaseExtensionProcess):
    ran = []

    def run(self):
        super().run()
        GoodProcess.ran.append((self.process_id, self.get_conf("value"), self.job.device))
"""

BAD_PROCESS_INIT = """
from toolkit.extension import Extension

class BadProcessExtension(Extension):
    uid = "BadProcess"

    @classmethod
    def get_process(cls):
        raise RuntimeError("process module needs a GPU library")

AI_TOOLKIT_EXTENSIONS = [BadProcessExtension]
"""


def write_package(folder, name, files):
    package = folder / name
    package.mkdir(parents=True)
    for filename, source in files.items():
        (package / filename).write_text(textwrap.dedent(source))


@pytest.fixture
def ext_dir(tmp_path, monkeypatch):
    """A uniquely named extension folder registered through the env var."""
    folder = tmp_path / f"aitk_ext_{uuid.uuid4().hex[:8]}"
    folder.mkdir()
    monkeypatch.setenv(EXTENSION_DIRS_ENV, str(folder))
    monkeypatch.setattr(sys, "path", list(sys.path))
    yield folder
    for module in [m for m in sys.modules if m.split(".")[0] == folder.name]:
        del sys.modules[module]


@pytest.fixture
def mixed_dir(ext_dir):
    write_package(ext_dir, "good", {"__init__.py": GOOD_INIT.format(uid="GoodOne"), "process.py": GOOD_PROCESS})
    write_package(ext_dir, "broken_import", {"__init__.py": "import aitk_no_such_module_xyz\n"})
    write_package(ext_dir, "broken_syntax", {"__init__.py": "def oops(:\n    pass\n"})
    write_package(ext_dir, "bad_process", {"__init__.py": BAD_PROCESS_INIT})
    write_package(ext_dir, "not_a_list", {"__init__.py": "AI_TOOLKIT_EXTENSIONS = 'nope'\n"})
    (ext_dir / "not_a_package").mkdir()  # no __init__.py: ignored
    return ext_dir


def failure_names():
    return {failure.name for failure in get_extension_failures()}


def test_search_order_builtin_folders_first(ext_dir, monkeypatch):
    other = ext_dir.parent / "other_ext"
    monkeypatch.setenv(EXTENSION_DIRS_ENV, f"{ext_dir}{os.pathsep}{os.pathsep}{other}")
    assert extension_dirs() == [
        os.path.join(TOOLKIT_ROOT, "extensions"),
        os.path.join(TOOLKIT_ROOT, "extensions_built_in"),
        str(ext_dir),
        str(other),
    ]


def test_broken_extensions_are_reported_and_do_not_hide_good_ones(mixed_dir, capsys):
    process_dict = get_all_extensions_process_dict()
    assert process_dict["GoodOne"].__name__ == "GoodProcess"
    assert "BadProcess" not in process_dict
    base = mixed_dir.name
    assert {f"{base}.broken_import", f"{base}.broken_syntax", "BadProcess"} <= failure_names()
    assert f"{base}.good" not in failure_names()
    errors = {failure.name: failure.error for failure in get_extension_failures()}
    assert errors[f"{base}.broken_import"].startswith("ModuleNotFoundError")
    assert "aitk_no_such_module_xyz" in errors[f"{base}.broken_import"]
    assert errors[f"{base}.broken_syntax"].startswith("SyntaxError")
    assert "needs a GPU library" in errors["BadProcess"]
    out = capsys.readouterr().out
    assert f"{base}.broken_import failed to load" in out
    assert f"{base}.broken_syntax failed to load" in out


def test_failures_are_reset_on_each_discovery(ext_dir):
    write_package(ext_dir, "broken", {"__init__.py": "raise ImportError('first run')\n"})
    get_all_extensions()
    assert f"{ext_dir.name}.broken" in failure_names()
    (ext_dir / "broken" / "__init__.py").write_text("AI_TOOLKIT_EXTENSIONS = []\n")
    get_all_extensions()
    assert f"{ext_dir.name}.broken" not in failure_names()


def test_folder_named_like_an_existing_module_is_reported(tmp_path, monkeypatch):
    clash = tmp_path / "json"
    write_package(clash, "pkg", {"__init__.py": "AI_TOOLKIT_EXTENSIONS = []\n"})
    monkeypatch.setenv(EXTENSION_DIRS_ENV, str(clash))
    monkeypatch.setattr(sys, "path", list(sys.path))
    get_all_extensions()
    assert "json" in failure_names()


def test_extension_job_runs_the_discovered_process(mixed_dir):
    job = ExtensionJob(
        {
            "job": "extension",
            "config": {
                "name": "j",
                "device": "cpu:1",
                "process": [{"type": "GoodOne", "value": 7}, {"type": "GoodOne", "value": 8}],
            },
        }
    )
    process_class = type(job.process[0])
    process_class.ran.clear()
    job.run()
    assert process_class.ran == [(0, 7, "cpu:1"), (1, 8, "cpu:1")]


def test_unknown_type_lists_known_uids_and_broken_extensions(mixed_dir):
    config = {"job": "extension", "config": {"name": "j", "process": [{"type": "Missing"}]}}
    with pytest.raises(ValueError) as info:
        ExtensionJob(config)
    message = str(info.value)
    assert 'Unknown process type "Missing" in config.process[0]' in message
    assert "GoodOne" in message
    assert f"{mixed_dir.name}.broken_import" in message
    assert "BadProcess (RuntimeError: process module needs a GPU library)" in message


def test_extension_base_class_requires_get_process():
    class Incomplete(Extension):
        uid = "incomplete"

    with pytest.raises(NotImplementedError):
        Incomplete.get_process()
