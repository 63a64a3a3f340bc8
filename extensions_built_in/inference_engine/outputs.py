"""The engine's output folder: the URL of a result, the listing clients read, sidecars, and removing a result.

A listing runs while the saver thread writes: temp files and sidecars in the making are never listed, and a
file that goes away between listing and reading (a temp file renamed into place) is skipped, not an error.
No torch and no HTTP here.
"""
from __future__ import annotations

import json
import os
from typing import Optional
from urllib.parse import quote


class Outputs:
    def __init__(self, folder: str, url_prefix: str):
        self.folder = os.path.abspath(folder)
        self.url_prefix = url_prefix
        os.makedirs(self.folder, exist_ok=True)

    def url(self, path: str) -> str:
        return f"{self.url_prefix}/{quote(os.path.abspath(path), safe='')}"

    def listing(self, limit: int = 100) -> list[dict]:
        """Finished files, newest first, each with its sidecar."""
        entries = []
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if name.startswith(".") or name.endswith((".json", ".tmp")):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if os.path.isfile(path):
                entries.append({"name": name, "path": path, "url": self.url(path), "bytes": st.st_size,
                                "mtime": st.st_mtime, "meta": read_json(sidecar_of(path))})
        entries.sort(key=lambda e: e["mtime"], reverse=True)
        return entries[:limit]

    @staticmethod
    def write_sidecar(result_path: str, data: dict) -> None:
        """Atomically (temp file, then rename): a listing sees the whole sidecar or none; no temp file is left."""
        sidecar = sidecar_of(result_path)
        tmp = sidecar + ".tmp"
        try:
            with open(tmp, "w", encoding="utf-8") as f:
                json.dump(data, f, indent=2, default=str)
            os.replace(tmp, sidecar)
        finally:
            if os.path.exists(tmp):
                os.remove(tmp)

    @staticmethod
    def remove(result_path: str) -> None:
        """A result file and what belongs to it: its thumbnail and sidecar."""
        folder, name = os.path.split(result_path)
        for path in (result_path, os.path.join(folder, ".thumbs", name + ".jpg"), sidecar_of(result_path)):
            try:
                os.remove(path)
            except FileNotFoundError:
                pass


def sidecar_of(result_path: str) -> str:
    return os.path.splitext(result_path)[0] + ".json"


def read_json(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None
