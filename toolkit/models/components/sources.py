"""What kind of source a ``name_or_path`` string is: ``tiny:``, ``builtin:``, a hub id, or a local path.

One rule for the load funnel (``loading.resolve_source``) and the engine's request checks, so both read a
string the same way. A hub id is exactly ``org/name`` in the hub's own characters, and it is a hub id even
where a folder of that name happens to sit in the working directory: otherwise whether such a folder exists
would decide what loads, and a request could learn it from what came back. Everything else that is neither
``tiny:`` nor ``builtin:`` is a local path (absolute, ``./``, ``~``, a bare name, a ``.safetensors`` file).

No torch and no network here.
"""

from __future__ import annotations

import re

# huggingface_hub's validate_repo_id: each part starts and ends with a word character; "--" and ".." nowhere.
HUB_ID = re.compile(r"^\w(?:[\w.-]{0,94}\w)?/\w(?:[\w.-]{0,94}\w)?$")


def is_hub_id(name_or_path: str) -> bool:
    return (
        bool(HUB_ID.match(name_or_path))
        and "--" not in name_or_path
        and ".." not in name_or_path
        and not name_or_path.endswith(".safetensors")
    )


def source_kind(name_or_path: str) -> str:
    """``tiny``, ``builtin``, ``hub`` or ``local``."""
    if name_or_path.startswith("tiny:"):
        return "tiny"
    if name_or_path.startswith("builtin:"):
        return "builtin"
    return "hub" if is_hub_id(name_or_path) else "local"


__all__ = ["HUB_ID", "is_hub_id", "source_kind"]
