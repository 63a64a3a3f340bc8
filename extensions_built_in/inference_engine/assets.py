"""Uploaded control images: naming, verifying, storing, resolving a request's reference, and cleaning up.

Uploads come from whoever holds the token, and they stay on the user's disk: each is decoded in full before
it is kept (a truncated or disguised file is refused), its pixel count is checked from the header before any
decoding (an 11000² PNG of 470 KB would decode to 508 MB; PIL's own guard only fires at twice its limit),
and the folder has a quota over the uploads it wrote (nothing else in the folder is ever removed): those older
than ``max_age_s`` go first, then the oldest, never one a waiting or running request still names. A reference
in a request is an asset id or a path inside the engine's own folders, nothing else.

No HTTP and no torch here: the server hands over bytes, the engine asks for paths.
"""

from __future__ import annotations

import io
import os
import threading
import time
import uuid
import warnings
from typing import Callable, Iterable

MAX_UPLOAD_BYTES = 32 * 1024 * 1024
MAX_UPLOAD_PIXELS = 64 * 1024 * 1024  # 8192²
FORMATS = {"PNG": "png", "JPEG": "jpg", "WEBP": "webp", "BMP": "bmp"}
# A start video (``sample.init_video``) may be an mp4 too: decoded in full with PyAV to verify, as images are.
VIDEO_EXT, MAX_UPLOAD_FRAMES = "mp4", 1025  # SampleBody's num_frames bound: no request reads more frames
# A full decode holds the whole image (an 8192² RGB PNG of 200 KB: ~260 MB while it decodes), and every upload
# runs on its own worker thread: eight at once took an engine from 0.8 to 1.9 GB. Two decode at a time; the
# others wait their turn rather than stack.
MAX_FULL_DECODES = 2
_FULL_DECODES = threading.BoundedSemaphore(MAX_FULL_DECODES)


class AssetError(ValueError):
    """The upload or reference is refused; the message says why, for the client."""


class AssetQuotaFull(AssetError):
    pass


class AssetStore:
    def __init__(
        self,
        folder: str,
        max_bytes: int = 2 * 1024**3,
        max_age_s: float = 7 * 86400,
        in_use: Callable[[], Iterable[str]] = lambda: (),
    ):
        self.folder = os.path.abspath(folder)
        self.max_bytes, self.max_age_s = max_bytes, max_age_s
        self._in_use = in_use
        self._lock = threading.Lock()
        os.makedirs(self.folder, exist_ok=True)

    # ------------------------------------------------------------------ storing
    def store(self, data: bytes, videos: bool = False) -> dict:
        """Verify and keep one image (or, with ``videos``, an mp4); ``{id, path, width, height, format}`` and, for
        a video, ``frames``."""
        frames = None
        if videos and is_mp4(data):
            size, frames = verify_video(data)
            fmt, ext = "MP4", VIDEO_EXT
        else:
            fmt, size = verify_image(data)
            ext = FORMATS[fmt]
        asset_id = uuid.uuid4().hex
        path = os.path.join(self.folder, f"{asset_id}.{ext}")
        with self._lock:
            self._make_room(len(data))
            tmp = os.path.join(self.folder, f".{asset_id}.tmp")
            try:
                with open(tmp, "wb") as f:
                    f.write(data)
                os.replace(tmp, path)
            except OSError:
                _remove(tmp)
                raise
        info = {"id": asset_id, "path": path, "width": size[0], "height": size[1], "format": fmt.lower()}
        return info if frames is None else info | {"frames": frames}

    def _make_room(self, incoming: int) -> None:
        if incoming > self.max_bytes:
            raise AssetQuotaFull(f"the upload is larger than the engine's assets quota ({self.max_bytes} bytes)")
        now, protected = time.time(), {os.path.realpath(p) for p in self._in_use()}
        files = sorted(self._files(), key=lambda f: f[1])  # oldest first
        total = sum(size for _, _, size in files)
        for path, mtime, size in files:
            expired = now - mtime > self.max_age_s
            if (expired or total + incoming > self.max_bytes) and os.path.realpath(path) not in protected:
                _remove(path)
                total -= size
        if total + incoming > self.max_bytes:
            raise AssetQuotaFull(
                "the engine's assets quota is full of images that waiting requests still use; "
                "try again when they have run"
            )

    def _files(self) -> list[tuple[str, float, int]]:
        """The uploads ``store`` wrote (``<uuid4 hex>.<ext>``), the only files the quota counts and removes: a
        user's ``notes.txt`` or ``photo.png`` beside them stays, even in the engine's own folder."""
        found = []
        for name in os.listdir(self.folder):
            path = os.path.join(self.folder, name)
            if not is_upload_name(name) or os.path.islink(path):
                continue
            try:
                st = os.stat(path)
            except OSError:  # removed meanwhile
                continue
            if os.path.isfile(path):
                found.append((path, st.st_mtime, st.st_size))
        return found

    def usage(self) -> dict:
        files = self._files()
        return {"files": len(files), "bytes": sum(size for _, _, size in files), "max_bytes": self.max_bytes}

    # ------------------------------------------------------------------ resolving
    def resolve(self, ref: str, extra_roots: Iterable[str] = ()) -> str:
        """An asset id, or a path to a file inside this folder or ``extra_roots``; the real path."""
        if is_asset_id(ref):
            for name in os.listdir(self.folder):
                if os.path.splitext(name)[0] == ref:
                    return os.path.join(self.folder, name)
            raise AssetError(f"unknown asset id {ref!r}: upload the image to /assets first")
        path = real_path(ref)
        for root in (self.folder, *extra_roots):
            if is_inside(path, root) and os.path.isfile(path):
                return path
        raise AssetError(f"{ref!r} is neither an asset id nor a file inside the engine's assets or output folder")


def verify_image(data: bytes) -> tuple[str, tuple[int, int]]:
    """Format and size of a whole, readable image within the pixel cap; ``AssetError`` otherwise. The pixels are
    decoded once (``verify`` decodes nothing: it reads chunks and checksums where the format has them), at most
    ``MAX_FULL_DECODES`` at a time in this process."""
    from PIL import Image

    try:
        with warnings.catch_warnings():  # our own pixel cap below refuses it, with a clearer message than PIL's
            warnings.simplefilter("ignore", Image.DecompressionBombWarning)
            img = Image.open(io.BytesIO(data))
        with img:
            fmt, size = img.format, img.size  # from the header: nothing decoded yet
            if size[0] * size[1] > MAX_UPLOAD_PIXELS:
                raise AssetError(f"image is {size[0]}x{size[1]} pixels, over the {MAX_UPLOAD_PIXELS} pixel limit")
            if fmt not in FORMATS:
                raise AssetError(f"image format {fmt} is not accepted; use {', '.join(FORMATS)}")
            img.verify()
        with _FULL_DECODES, Image.open(io.BytesIO(data)) as img:
            img.load()  # a truncated file fails only here; the decoded pixels are dropped at once
    except AssetError:
        raise
    except Exception as e:  # PIL raises many types for corrupt, truncated or bomb images
        raise AssetError(f"not a readable image ({type(e).__name__}: {e})") from None
    return fmt, size


def is_mp4(data: bytes) -> bool:
    """An ISO media file by its first box (``ftyp``), as mp4 and mov files begin."""
    return data[4:8] == b"ftyp"


def verify_video(data: bytes) -> tuple[tuple[int, int], int]:
    """Size and frame count of a whole, readable video within the pixel and frame caps; ``AssetError``
    otherwise. Every frame is decoded once (a truncated file fails only there), as ``verify_image`` does."""
    import av

    try:
        with _FULL_DECODES, av.open(io.BytesIO(data)) as container:
            stream = container.streams.video[0]
            size = (stream.codec_context.width, stream.codec_context.height)
            if size[0] * size[1] > MAX_UPLOAD_PIXELS:
                raise AssetError(f"video is {size[0]}x{size[1]} pixels, over the {MAX_UPLOAD_PIXELS} pixel limit")
            frames = 0
            for _ in container.decode(stream):
                frames += 1
                if frames > MAX_UPLOAD_FRAMES:
                    raise AssetError(f"video has over {MAX_UPLOAD_FRAMES} frames")
    except AssetError:
        raise
    except Exception as e:  # PyAV raises many types for corrupt or truncated files, IndexError for no video
        raise AssetError(f"not a readable video ({type(e).__name__}: {e})") from None
    if not frames:
        raise AssetError("the video has no frames")
    return size, frames


def real_path(path: str) -> str:
    """``realpath`` of a path taken from a request; one that cannot even be named (a NUL byte) is refused."""
    try:
        return os.path.realpath(path)
    except ValueError as e:  # "embedded null byte"
        raise AssetError(f"not a usable path: {e}") from None


def is_inside(real: str, root: str) -> bool:
    """``real`` (already resolved) lies below ``root`` once ``root``'s own links are resolved too."""
    return real.startswith(os.path.realpath(root) + os.sep)


def is_asset_id(ref: str) -> bool:
    return len(ref) == 32 and all(c in "0123456789abcdef" for c in ref)


def is_upload_name(name: str) -> bool:
    """A name ``AssetStore.store`` gives: a uuid4 in hex, then the extension of an accepted format."""
    stem, _, ext = name.partition(".")
    return is_asset_id(stem) and stem[12] == "4" and stem[16] in "89ab" and ext in (*FORMATS.values(), VIDEO_EXT)


def _remove(path: str) -> None:
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def paths_named_by(configs: Iterable) -> set:
    """Image paths the given sample configs read (control, start and mask images): what the quota must not
    delete."""
    return {p for gen in configs for p in getattr(gen, "input_images", []) or []}


__all__ = [
    "AssetError",
    "AssetQuotaFull",
    "AssetStore",
    "FORMATS",
    "MAX_UPLOAD_BYTES",
    "MAX_UPLOAD_PIXELS",
    "is_asset_id",
    "is_upload_name",
    "is_inside",
    "is_mp4",
    "paths_named_by",
    "real_path",
    "verify_image",
    "verify_video",
]
