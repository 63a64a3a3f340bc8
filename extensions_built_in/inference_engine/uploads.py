"""Reading a multipart upload with its size capped while it arrives, for ``POST /assets`` and
``POST /v1/images/edits``.

Chunked uploads (the UI's streaming proxy sends them) carry no length to check up front, so the cap is also
enforced while reading, before anything is spooled; a body announced larger than the cap is refused unread.
"""

from __future__ import annotations

from starlette.requests import Request

from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES

MULTIPART_FRAMING = 64 * 1024  # what a form's boundaries and headers add to the files it carries


class UploadTooLarge(Exception):
    pass


class NotMultipart(ValueError):
    pass


async def capped_body(request: Request, limit: int):
    """The request body, cut off past ``limit`` bytes."""
    total = 0
    async for chunk in request.stream():
        total += len(chunk)
        if total > limit:
            raise UploadTooLarge()
        yield chunk


async def read_form(request: Request, max_files: int, max_fields: int, limit: int = MAX_UPLOAD_BYTES):
    """The parsed form (starlette ``FormData``); ``UploadTooLarge`` past ``limit`` bytes of files plus framing,
    ``NotMultipart`` for anything that is not a readable multipart body (its message, if any, says why)."""
    from starlette.formparsers import MultiPartParser

    cap = limit + MULTIPART_FRAMING
    length = request.headers.get("content-length")
    if length and length.isdigit() and int(length) > cap:
        raise UploadTooLarge()
    if "multipart/form-data" not in request.headers.get("content-type", ""):
        raise NotMultipart("")
    parser = MultiPartParser(request.headers, capped_body(request, cap), max_files=max_files, max_fields=max_fields)
    try:
        return await parser.parse()
    except UploadTooLarge:
        raise
    except Exception as e:  # starlette's MultiPartException, a broken boundary, a field over its own size
        raise NotMultipart(str(e)) from None
