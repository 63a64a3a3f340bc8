"""The engine's output folder: writing a result (file, sidecar, result frame), its URL, the listing clients read,
and removing a result.

A listing runs while the saver thread writes: temp files and sidecars in the making are never listed, and a
file that goes away between listing and reading (a temp file renamed into place) is skipped, not an error.
No torch and no HTTP here: frames go to the request's stream.
"""

from __future__ import annotations

import json
import os
import re
import time
from typing import Optional
from urllib.parse import quote

from extensions_built_in.inference_engine.assets import is_inside
from toolkit.media import save_generated
from toolkit.media_info import info_for


class Outputs:
    def __init__(self, folder: str, url_prefix: str):
        self.folder = os.path.abspath(folder)
        self.url_prefix = url_prefix
        os.makedirs(self.folder, exist_ok=True)
        self.remove_unfinished()

    def remove_unfinished(self) -> None:
        """Temp files an engine killed mid-write left (``.tmp/`` of save_media, sidecars' ``*.json.tmp``): never
        a result, and nothing else writes here while this engine starts (one engine per output folder)."""
        temp_dir = os.path.join(self.folder, ".tmp")
        left = [os.path.join(temp_dir, n) for n in _names(temp_dir)]
        left += [os.path.join(self.folder, n) for n in _names(self.folder) if n.endswith(".json.tmp")]
        for path in left:
            if os.path.isfile(path) and not os.path.islink(path):
                _remove_quietly(path)

    def url(self, path: str) -> str:
        return f"{self.url_prefix}/{quote(os.path.abspath(path), safe='')}"

    def listing(self, limit: int = 100) -> list[dict]:
        """Finished files, newest first, each with its sidecar. A name that is not UTF-8 (a file put there by
        hand) is left out: JSON cannot carry it, and the whole listing failed on it."""
        entries = []
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if name.startswith(".") or name.endswith((".json", ".tmp")) or not _is_utf8(name):
                continue
            try:
                st = os.stat(path)
            except OSError:
                continue
            if owned_file(path, self.folder):
                entries.append(
                    {
                        "name": name,
                        "path": path,
                        "url": self.url(path),
                        "bytes": st.st_size,
                        "mtime": st.st_mtime,
                        "meta": read_json(sidecar_of(path)),
                    }
                )
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

    def save_result(self, req, media, started: float, image, timings: dict) -> None:
        """On the saver thread: the file, its thumbnail and sidecar, then the result frame (and after a batch's
        last, the end). A full disk or a codec refusing the frames fails this request only, and leaves no half
        result behind. ``image``: which result of the request (``Request.images``), with its own sample."""
        result, sample = None, image.sample
        try:
            t_save = time.monotonic()
            result = save_generated(media, sample, info=info_for(req.resolved_config(sample)))
            timings["save_s"] = round(time.monotonic() - t_save, 4)
            timings["gc_s"] = req.clock.gc_seconds() if req.clock is not None else None  # sampling and saving
            timings["total_s"] = round(time.monotonic() - started, 4)
            req.timings["total_s"] = timings["total_s"]  # the queue's Retry-After reads the latest
            self._write_result_sidecar(req, result, sample, timings)
        except Exception as e:  # a full disk, a codec refusing the frames: the request fails, the engine serves on
            if result is not None:  # the file made it, its sidecar did not: no half result stays behind
                self.remove(result["path"])
            print(req.log_line(f"saving failed: {type(e).__name__}: {e}"[:300]), flush=True)
            req.stream.finish(False, "internal", f"Saving the result failed: {type(e).__name__}: {e}"[:2000])
            return
        batch = {"image": image.index + 1, "images": image.count} if image.count > 1 else {}
        req.stream.emit(
            "result",
            path=result["path"],
            url=self.url(result["path"]),
            kind=result["kind"],
            ext=result["ext"],
            width=result.get("width"),
            height=result.get("height"),
            frames=result.get("frames"),
            fps=result.get("fps"),
            sample_rate=result.get("sample_rate"),
            duration_s=result.get("duration_s"),
            bytes=result["bytes"],
            timings=timings,
            seed=sample.seed,
            **batch,
        )
        if image.last:  # the log's line first: a client (or test) that saw the end finds it written
            print(req.log_line(f"done in {timings['total_s']:.1f} s"), flush=True)
            req.stream.finish(True)

    def _write_result_sidecar(self, req, result: dict, sample, timings: dict) -> None:
        self.write_sidecar(
            result["path"],
            {
                "request_id": req.id,
                "created": req.created,
                "config": req.resolved_config(sample),
                "request": req.body,
                "seed": sample.seed,
                "timings": timings,
                "result": {k: v for k, v in result.items() if k != "path"} | {"url": self.url(result["path"])},
            },
        )


def download_name(result_path: str) -> str:
    """A name a person recognises in their downloads folder: the prompt's first words and the seed, from the
    sidecar (the file itself is named by request id); the id when there is no sidecar."""
    meta = read_json(sidecar_of(result_path)) or {}
    sample = (meta.get("config") or {}).get("sample") or {}
    words = re.sub(r"[^A-Za-z0-9]+", "_", str(sample.get("prompt") or "")).strip("_")[:60].rstrip("_")
    stem = "_".join(str(p) for p in (words, sample.get("seed")) if p not in ("", None))
    return (stem or os.path.splitext(os.path.basename(result_path))[0]) + os.path.splitext(result_path)[1]


def owned_file(path: str, folder: str) -> bool:
    """A regular file that is the folder's own: not a link, whose target could be any file the engine can read,
    and nothing whose real path leaves ``folder``."""
    return os.path.isfile(path) and not os.path.islink(path) and is_inside(os.path.realpath(path), folder)


def _is_utf8(name: str) -> bool:
    """``os.listdir`` hands undecodable bytes back as lone surrogates, which no UTF-8 encoder takes."""
    try:
        name.encode("utf-8")
        return True
    except UnicodeEncodeError:
        return False


def sidecar_of(result_path: str) -> str:
    return os.path.splitext(result_path)[0] + ".json"


def read_json(path: str) -> Optional[dict]:
    try:
        with open(path, encoding="utf-8") as f:
            return json.load(f)
    except (OSError, ValueError):
        return None


def _names(folder: str) -> list:
    try:
        return os.listdir(folder)
    except OSError:
        return []


def _remove_quietly(path: str) -> None:
    try:
        os.remove(path)
    except OSError:
        pass
