"""Writing a file only its owner may read (engine.json, which holds the engine's token), atomically.

The temp file gets a fresh random name and is created with ``O_CREAT | O_EXCL | O_NOFOLLOW``: a fixed name
(``engine.json.tmp``) let anyone who could write the folder plant a world-readable file or a link there, and
opening it without ``O_EXCL`` kept the planted file's mode (``O_CREAT``'s mode applies only to a new file), so
the token came out readable by all. The engine and the cluster both write their engine.json through here.
"""

from __future__ import annotations

import json
import os
import secrets

PRIVATE_FLAGS = os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW


def write_private_json(path: str, data: dict) -> None:
    """``data`` as JSON at ``path``, mode 0600 from the first byte; readers see the old file or the whole new
    one. A temp name already taken is an error, never a file to reuse."""
    folder, name = os.path.split(os.path.abspath(path))
    tmp = os.path.join(folder, f".{name}.{_random_suffix()}.tmp")
    fd = os.open(tmp, PRIVATE_FLAGS, 0o600)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            json.dump(data, f, indent=2)
        os.replace(tmp, path)
    except BaseException:
        _remove(tmp)
        raise


def _random_suffix() -> str:
    return secrets.token_hex(8)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass
