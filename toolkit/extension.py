"""Extension discovery: packages that export `AI_TOOLKIT_EXTENSIONS`.

Searched folders: `<root>/extensions`, `<root>/extensions_built_in`, then every entry of
`AI_TOOLKIT_EXTENSION_DIRS` (os.pathsep-separated): extra extension folders, e.g. for tests
or extensions kept outside the tree. A package inside folder `<dir>` is imported as
`<basename of dir>.<package>`, so that basename must not clash with another importable name.

Unlike AI Toolkit, one broken extension does not take every extension job down with it:
its import error is printed, remembered, and reported by `get_extension_failures()`.
"""

import importlib
import os
import pkgutil
import sys
from dataclasses import dataclass
from typing import Dict, List, Optional

from toolkit import paths

EXTENSION_DIRS_ENV = "AI_TOOLKIT_EXTENSION_DIRS"


class Extension:
    """Registration record: `uid` is what a config's `process[i].type` names."""

    name: Optional[str] = None
    uid: Optional[str] = None

    @classmethod
    def get_process(cls):
        """Return the process class; subclasses import it here so listing stays cheap."""
        raise NotImplementedError(f"{cls.__name__}.get_process() is not implemented")


@dataclass(frozen=True)
class ExtensionFailure:
    """An extension package (or uid) that could not be loaded, and why."""

    name: str
    error: str

    def __str__(self) -> str:
        return f"{self.name} ({self.error})"


_failures: List[ExtensionFailure] = []


def extension_dirs() -> List[str]:
    """The folders searched, built-in ones first."""
    dirs = [os.path.join(paths.TOOLKIT_ROOT, "extensions"), os.path.join(paths.TOOLKIT_ROOT, "extensions_built_in")]
    extra = os.environ.get(EXTENSION_DIRS_ENV, "")
    dirs += [os.path.abspath(d) for d in extra.split(os.pathsep) if d.strip()]
    return dirs


def _record_failure(name: str, exc: BaseException) -> None:
    failure = ExtensionFailure(name, f"{type(exc).__name__}: {exc}")
    _failures.append(failure)
    print(f"[AITK] Warning: extension {failure.name} failed to load: {failure.error}")


def _import_folder_package(folder: str) -> None:
    """Make `<basename of folder>` importable as the package that is this folder."""
    parent, base = os.path.split(folder.rstrip(os.sep))
    if parent not in sys.path:
        sys.path.append(parent)
    package = importlib.import_module(base)
    locations = [os.path.realpath(p) for p in getattr(package, "__path__", [])]
    if os.path.realpath(folder) not in locations:
        raise ImportError(f"{base!r} already names another module ({locations or package})")


def _extensions_in(folder: str) -> List[type]:
    found: List[type] = []
    if not os.path.isdir(folder):
        return found
    base = os.path.basename(folder.rstrip(os.sep))
    try:
        _import_folder_package(folder)
    except Exception as exc:  # a folder that cannot be imported must not hide the others
        _record_failure(base, exc)
        return found
    for module_info in pkgutil.iter_modules([folder]):
        module_name = f"{base}.{module_info.name}"
        try:
            module = importlib.import_module(module_name)
        except Exception as exc:  # includes SyntaxError from a half-written extension
            _record_failure(module_name, exc)
            continue
        extensions = getattr(module, "AI_TOOLKIT_EXTENSIONS", None)
        if isinstance(extensions, list):
            found.extend(extensions)
    return found


def get_all_extensions() -> List[type]:
    """Import every extension package; failures are kept for `get_extension_failures()`."""
    _failures.clear()
    found: List[type] = []
    for folder in extension_dirs():
        found.extend(_extensions_in(folder))
    return found


def get_all_extensions_process_dict() -> Dict[str, type]:
    """Map each uid to its process class; later folders override earlier ones."""
    process_dict: Dict[str, type] = {}
    for extension in get_all_extensions():
        try:
            process_dict[extension.uid] = extension.get_process()
        except Exception as exc:
            _record_failure(str(extension.uid), exc)
    return process_dict


def get_extension_failures() -> List[ExtensionFailure]:
    """What the last discovery could not load (package names and uids)."""
    return list(_failures)
