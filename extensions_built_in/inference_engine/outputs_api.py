"""Routes for files: results in the output folder (``/outputs``, ``/outputs/{name}``) and uploaded control images
(``POST /assets``). No torch."""

from __future__ import annotations

import asyncio
import os

from fastapi import APIRouter, HTTPException, Query, Request, UploadFile
from fastapi.responses import FileResponse, JSONResponse

from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES, AssetError, AssetQuotaFull, AssetStore
from extensions_built_in.inference_engine.engine import Engine, OutputInUse
from extensions_built_in.inference_engine.http_common import EngineDep, bad_request
from extensions_built_in.inference_engine.outputs import download_name, owned_file
from extensions_built_in.inference_engine.uploads import NotMultipart, UploadTooLarge, read_form

router = APIRouter()


@router.post("/assets")
async def upload_asset(request: Request, engine: EngineDep):
    return await receive_asset(engine.assets, request)


@router.get("/outputs")
async def outputs(engine: EngineDep, limit: int = Query(100, ge=1, le=10000)):
    return await asyncio.to_thread(engine.list_outputs, limit)


@router.get("/outputs/{name}")
async def output_file(name: str, engine: EngineDep, download: bool = False):
    """``?download=1``: an attachment named from the prompt and seed (``download_name``)."""
    path = output_path(engine, name)
    return FileResponse(path, filename=download_name(path) if download else None)


@router.delete("/outputs/{name}", status_code=204)
async def delete_output(name: str, engine: EngineDep):
    try:
        await asyncio.to_thread(engine.delete_output, output_path(engine, name, results_only=True))
    except OutputInUse as e:
        raise HTTPException(409, str(e)) from None


def output_path(engine: Engine, name: str, results_only: bool = False) -> str:
    """A file in the output folder by its bare name (no folders, nothing hidden, no link out of it);
    ``results_only``: not a sidecar or a file being written either (those go with their result)."""
    path = os.path.join(engine.output_folder, os.path.basename(name))
    hidden = name.startswith(".") or (results_only and name.endswith((".json", ".tmp")))
    if os.path.basename(name) != name or hidden or not owned_file(path, engine.output_folder):
        raise HTTPException(404, f"no output named {name!r}")
    return path


async def receive_asset(store: AssetStore, request: Request) -> JSONResponse:
    """Multipart image (or mp4) upload: size-capped before and while reading, then fully decoded by PIL to verify. The
    cluster's ingress keeps its uploads in its own store the same way."""
    too_large = bad_request(("body", "file"), f"upload is larger than {MAX_UPLOAD_BYTES} bytes", 413)
    try:
        form = await read_form(request, max_files=1, max_fields=4)
    except UploadTooLarge:
        return too_large
    except NotMultipart as e:
        return bad_request(("body",), "expected multipart/form-data with a 'file' field" + (f": {e}" if str(e) else ""))
    upload = form.get("file")
    if not isinstance(upload, UploadFile) and not hasattr(upload, "read"):
        return bad_request(("body", "file"), "missing 'file' field")
    data = await upload.read(MAX_UPLOAD_BYTES + 1)
    if len(data) > MAX_UPLOAD_BYTES:
        return too_large
    try:
        info = await asyncio.to_thread(store.store, data, True)  # an mp4 too: a start video (init_video)
    except AssetQuotaFull as e:
        return bad_request(("body", "file"), str(e), 507)
    except AssetError as e:
        return bad_request(("body", "file"), str(e))
    return JSONResponse(info, status_code=201)
