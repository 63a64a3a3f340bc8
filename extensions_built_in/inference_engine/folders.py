"""The engine's own folders: results and uploads go only into a folder the engine created, or was given empty.

``GET /outputs/{name}`` serves and ``DELETE /outputs/{name}`` removes files of the output folder, and the
assets quota removes old uploads from the assets folder: pointed at a folder of someone's documents, either
would hand them to whoever holds the token. So a configured folder must be absent or empty (the engine then
creates it and writes its marker) or carry the marker of an earlier run in the same role. The defaults under
the job folder are the engine's by construction: they are marked even when earlier runs left files there, so
an engine that ran before the marker existed starts as it did.

No HTTP and no torch: the job process claims its folders before anything serves them.
"""

from __future__ import annotations

import json
import os
from typing import Optional

MARKER = ".aitk-engine-folder"
ROLES = {"outputs": "engine.output_folder", "assets": "engine.assets_folder"}


class FolderRefused(ValueError):
    """A configured folder the engine will not use; the message says which key, why, and what to do."""


def claim(path: str, role: str, default: bool = False) -> str:
    """``path`` as the engine's ``role`` folder (``outputs`` or ``assets``), created and marked if need be.

    Refused: a file; a folder marked for the other role; a folder with anything in it and no marker, unless
    it is the job folder's default (``default``)."""
    path, key = os.path.abspath(path), ROLES[role]
    if os.path.exists(path) and not os.path.isdir(path):
        raise FolderRefused(f"{key} {path!r} is not a folder")
    marked = marker_role(path)
    if marked is not None and marked != role:
        raise FolderRefused(
            f"{key} {path!r} is the engine's {marked} folder ({MARKER} says so); the {role} need a folder of their own"
        )
    if marked is None and not default and os.path.isdir(path) and os.listdir(path):
        raise FolderRefused(
            f"{key} {path!r} holds files and is not the engine's own (no {MARKER} in it). The engine serves "
            f"and deletes files in its {role} folder, so it takes only an absent or empty folder, or one it "
            f"marked. Point {key} at an empty folder; if this one is the engine's from an earlier run, mark it: "
            f'echo \'{{"role": "{role}"}}\' > {os.path.join(path, MARKER)}'
        )
    os.makedirs(path, exist_ok=True)
    if marked is None:
        _write_marker(path, role)
    return path


def claim_all(folders: dict[str, tuple[str, bool]]) -> None:
    """Every role's ``(path, is_default)``; two roles never share one folder (the quota would count results
    as uploads, and a deleted result would take an upload of the same name with it)."""
    seen: dict[str, str] = {}
    for role, (path, _) in folders.items():
        real = os.path.realpath(path)
        if real in seen:
            raise FolderRefused(f"{ROLES[role]} and {ROLES[seen[real]]} are one folder ({path!r}): give each its own")
        seen[real] = role
    for role, (path, default) in folders.items():
        claim(path, role, default)


def marker_role(folder: str) -> Optional[str]:
    """The role the folder's marker names; None when it has none (an unreadable marker is no marker)."""
    try:
        with open(os.path.join(folder, MARKER), encoding="utf-8") as f:
            role = json.load(f).get("role")
    except (OSError, ValueError, AttributeError):
        return None
    return role if isinstance(role, str) else None


def _write_marker(folder: str, role: str) -> None:
    tmp = os.path.join(folder, MARKER + ".tmp")
    with open(tmp, "w", encoding="utf-8") as f:
        json.dump({"role": role, "written_by": "AI Toolkit inference engine", "config_key": ROLES[role]}, f)
    os.replace(tmp, os.path.join(folder, MARKER))


__all__ = ["FolderRefused", "MARKER", "claim", "claim_all", "marker_role"]
