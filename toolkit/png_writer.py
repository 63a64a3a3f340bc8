"""PNG stills through fpng, the generation settings inside them as Pillow writes them.

Pillow's PNG encoder (adaptive filters, then zlib, one thread) was the largest piece of a Flux request outside its
steps: 0.2 s of 3.9 s end to end for a 1024² image on the GPU machine (docs/MEASURED.md
"Where a Flux.1 request's time goes"), 0.1 s on the build box even at level 1. fpng (``pip install fpng``; Rich
Geldreich's encoder) writes the same pixels in 5 ms there, the file 11-18 % larger (docs/BENCHMARKS.md
"Saving results"). The text chunks (``parameters`` and ``aitk``, toolkit/media_info.py) go in as iTXt after the header,
byte for byte what Pillow's ``add_itxt`` writes, so every reader finds them. Pillow (toolkit/media.py) still writes what
fpng cannot: grey, palette or 16-bit images, and everything when the package is missing.
"""

from __future__ import annotations

import struct
import zlib
from typing import Optional

SIGNATURE = b"\x89PNG\r\n\x1a\n"
HEADER_END = len(SIGNATURE) + 4 + 4 + 13 + 4  # IHDR: length, type, 13 bytes of data, CRC


def fast_png(image, texts: Optional[dict] = None) -> Optional[bytes]:
    """The whole file for an 8-bit RGB or RGBA image (an array or a PIL image), or None where fpng cannot
    write it (the caller falls back to Pillow)."""
    try:
        import fpng
    except ImportError:
        return None
    import numpy as np

    pixels = np.asarray(image)
    if pixels.dtype != np.uint8 or pixels.ndim != 3 or pixels.shape[2] not in (3, 4) or 0 in pixels.shape:
        return None
    png = fpng.from_ndarray(np.ascontiguousarray(pixels))
    if not png.startswith(SIGNATURE) or png[12:16] != b"IHDR":
        return None
    return png[:HEADER_END] + b"".join(_itxt(key, text) for key, text in (texts or {}).items()) + png[HEADER_END:]


def _itxt(key: str, text: str) -> bytes:
    """keyword, then NULs for the keyword's end, no compression (flag and method), no language tag and no
    translated keyword; then the UTF-8 text."""
    return _chunk(b"iTXt", key.encode("latin-1") + b"\0\0\0\0\0" + text.encode("utf-8"))


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))
