"""OpenAI's Images API on the engine: ``/v1/images/generations``, ``/v1/images/edits``, ``/v1/models``.

So that clients written for OpenAI (its SDKs, tools that take a ``base_url``) drive the engine unchanged. Each
OpenAI request becomes ``n`` engine requests submitted exactly as ``POST /generate`` submits one (same checks,
same queue and its 429, same cancel when the client leaves), and their frames are read here: the result file
becomes ``b64_json`` or a ``url``; with ``stream: true`` latent frames become ``partial_image`` events and the
result a ``completed`` event, as Server-Sent Events in OpenAI's format. Errors keep OpenAI's shape.
Translation of the parameters: ``openai_params.py``; model names: ``model_aliases.py``.
"""

from __future__ import annotations

import asyncio
import base64
import contextlib
import io
import json
import os
import time
from typing import AsyncIterator, Optional
from urllib.parse import quote

from fastapi import APIRouter, FastAPI, Request
from fastapi.exception_handlers import http_exception_handler, request_validation_exception_handler
from fastapi.exceptions import RequestValidationError
from fastapi.responses import JSONResponse, Response, StreamingResponse
from pydantic import ValidationError
from starlette.datastructures import UploadFile
from starlette.exceptions import HTTPException as StarletteHTTPException

from extensions_built_in.inference_engine.assets import MAX_UPLOAD_BYTES, AssetError, AssetQuotaFull
from extensions_built_in.inference_engine.http_common import EngineDep
from extensions_built_in.inference_engine.image_preview import partial_steps, preview_image
from extensions_built_in.inference_engine.model_aliases import ModelRefused, ModelRequired, UnknownModel
from extensions_built_in.inference_engine.openai_params import (
    ImageEditFields,
    ImageGenerationBody,
    ImagePlan,
    OpenAIError,
    bad_request_param,
    engine_error,
    plan_images,
    usage,
    validation_error,
)
from extensions_built_in.inference_engine.protocol import FrameDecoder
from extensions_built_in.inference_engine.request_checks import BadRequest
from extensions_built_in.inference_engine.request_queue import QueueFull
from extensions_built_in.inference_engine.stream import FrameStream
from extensions_built_in.inference_engine.uploads import NotMultipart, UploadTooLarge, read_form
from toolkit.models import from_image

PREFIX = "/v1/"
KEEPALIVE_S = 1.0  # an SSE comment after this long without an event: proxies see bytes while a request waits
SSE_HEADERS = {"Cache-Control": "no-cache, no-transform", "X-Accel-Buffering": "no"}
EDIT_FILES = {"image": "image", "image[]": "image", "mask": "mask"}


def is_openai_path(path: str) -> bool:
    return path.startswith(PREFIX)


def unauthorized(message: str) -> dict:
    return OpenAIError(401, message, None, "invalid_api_key").body()


def error_response(error: OpenAIError) -> JSONResponse:
    return JSONResponse(error.body(), status_code=error.status, headers=error.headers)


def install(app: FastAPI) -> None:
    """The routes, plus OpenAI-shaped errors for them: FastAPI's own 422s and 404s keep their shape elsewhere."""
    app.include_router(router)
    app.add_exception_handler(OpenAIError, openai_error)
    app.add_exception_handler(RequestValidationError, invalid_body)
    app.add_exception_handler(StarletteHTTPException, http_error)


async def openai_error(request: Request, exc: OpenAIError):
    return error_response(exc)


async def invalid_body(request: Request, exc: RequestValidationError):
    if is_openai_path(request.url.path):
        return error_response(validation_error(list(exc.errors())))
    return await request_validation_exception_handler(request, exc)


async def http_error(request: Request, exc: StarletteHTTPException):
    if is_openai_path(request.url.path):
        message = exc.detail if exc.status_code != 404 else f"Invalid URL ({request.method} {request.url.path})"
        return error_response(OpenAIError(exc.status_code, str(message), headers=exc.headers))
    return await http_exception_handler(request, exc)


# ---------------------------------------------------------------------------------------------- routes
router = APIRouter(prefix="/v1", tags=["OpenAI Images API"])


@router.get("/models")
async def list_models(engine: EngineDep):
    """Aliases from ``engine.models``, then every image family (as ``<arch>:<name_or_path>``)."""
    return {"object": "list", "data": engine.model_aliases.listing()}


@router.get("/models/{model_id:path}")
async def get_model(model_id: str, engine: EngineDep):
    for row in engine.model_aliases.listing():
        if row["id"] == model_id:
            return row
    raise model_error(UnknownModel(f"The model `{model_id}` does not exist."))


@router.post(
    "/images/generations",
    responses={200: {"content": {"application/json": {}, "text/event-stream": {}}}},
)
async def generations(body: ImageGenerationBody, request: Request, engine: EngineDep):
    """OpenAI's image generation; ``stream: true`` answers with Server-Sent Events."""
    plan = plan_images(body, choose(engine, body.model))
    return await run(engine, plan, request)


def choose(engine, name: Optional[str]):
    try:
        return engine.model_aliases.resolve(name)
    except (UnknownModel, ModelRequired, ModelRefused) as e:
        raise model_error(e) from None


def model_error(error: Exception) -> OpenAIError:
    if isinstance(error, ModelRequired):
        return OpenAIError(400, str(error), "model", "missing_required_parameter")
    if isinstance(error, ModelRefused):
        return OpenAIError(400, str(error), "model", "invalid_value")
    return OpenAIError(404, str(error), "model", "model_not_found")


# ---------------------------------------------------------------------------------------------- edits' form
def edit_form_schema() -> dict:
    """The multipart body for the OpenAPI schema (the route parses the form itself, to cap it while reading)."""
    schema = ImageEditFields.model_json_schema()
    binary = {"type": "string", "format": "binary"}
    schema["properties"]["image"] = {"type": "array", "items": binary, "description": "one to three images"}
    schema["properties"]["mask"] = binary
    schema["required"] = ["image", "prompt"]
    return {"requestBody": {"required": True, "content": {"multipart/form-data": {"schema": schema}}}}


async def read_edit_form(request: Request) -> tuple[ImageEditFields, list[bytes], Optional[bytes]]:
    """Fields, image bytes and the mask's bytes, all files together within the upload cap."""
    try:
        form = await read_form(request, max_files=8, max_fields=32)
    except UploadTooLarge:
        raise OpenAIError(413, f"the upload is larger than {MAX_UPLOAD_BYTES} bytes", "image") from None
    except NotMultipart as e:
        detail = f": {e}" if str(e) else ""
        raise OpenAIError(400, f"expected multipart/form-data with an 'image' file and a 'prompt'{detail}") from None
    fields, images, mask = {}, [], None
    for key, value in form.multi_items():
        if not isinstance(value, UploadFile):
            fields[key] = value
        elif EDIT_FILES.get(key) == "image":
            images.append(await value.read())
        elif key == "mask":
            mask = await value.read()
        else:
            raise OpenAIError(400, f"Unrecognized request argument supplied: {key}")
    try:
        parsed = ImageEditFields.model_validate(fields)
    except ValidationError as e:
        raise validation_error(e) from None
    if not images:
        raise OpenAIError(400, "Missing required parameter: 'image'.", "image", "missing_required_parameter")
    return parsed, images, mask


async def store_image(engine, data: bytes) -> str:
    try:
        return (await asyncio.to_thread(engine.assets.store, data))["id"]
    except AssetQuotaFull as e:
        raise OpenAIError(507, str(e), "image") from None
    except AssetError as e:
        raise OpenAIError(400, f"Invalid image: {e}", "image", "invalid_image") from None


@router.post("/images/edits", openapi_extra=edit_form_schema())
async def edits(request: Request, engine: EngineDep):
    """OpenAI's image edit (multipart): ``image`` once or several times (``image[]``) becomes the family's
    control image(s), uploaded and checked as ``POST /assets`` does."""
    fields, images, mask = await read_edit_form(request)
    choice = choose(engine, fields.model)
    masked = "-" if mask is not None else None
    plan_images(fields, choice, ["-"] * len(images), kind="image_edit", mask=masked)  # refuse before storing
    start_size = image_size(images[0])
    if mask is not None:  # OpenAI's mask: transparent repaints; the engine's: white repaints
        try:
            mask = from_image.alpha_mask_png(mask, start_size)
        except ValueError as e:
            raise OpenAIError(400, f"Invalid mask: {e}", "mask", "invalid_mask") from None
    refs = [await store_image(engine, data) for data in images]
    mask_ref = await store_image(engine, mask) if mask is not None else None
    plan = plan_images(fields, choice, refs, kind="image_edit", mask=mask_ref, start_size=start_size)
    return await run(engine, plan, request)


def image_size(data: bytes) -> Optional[tuple]:
    """An upload's width and height from its header (None: not an image; storing it says why)."""
    from PIL import Image, UnidentifiedImageError

    try:
        with Image.open(io.BytesIO(data)) as img:
            return img.size
    except (UnidentifiedImageError, OSError, ValueError):
        return None


# ---------------------------------------------------------------------------------------------- running
async def run(engine, plan: ImagePlan, request: Request) -> Response:
    reqs = submit_all(engine, plan, asyncio.get_running_loop())
    if plan.streaming:
        return StreamingResponse(
            sse_body(engine, plan, reqs, request), media_type="text/event-stream", headers=SSE_HEADERS
        )
    return await json_body(engine, plan, reqs, request)


def submit_all(engine, plan: ImagePlan, loop) -> list:
    """One engine request per result, all queued now; if one is refused, those already queued are withdrawn."""
    reqs = []
    try:
        for sample in plan.samples:
            stream = FrameStream(engine.new_request_id(), loop)
            reqs.append(engine.submit(dict(plan.choice.model), dict(sample), dict(plan.stream), stream))
    except BadRequest as e:
        withdraw(engine, reqs)
        raise OpenAIError(400, str(e), bad_request_param(e.loc), "invalid_value") from None
    except QueueFull as e:
        withdraw(engine, reqs)
        headers = {"Retry-After": str(e.retry_after_s)}
        raise OpenAIError(429, str(e), None, "rate_limit_exceeded", type="requests", headers=headers) from None
    return reqs


def withdraw(engine, reqs) -> None:
    for req in reqs:
        if not req.stream.drained:
            engine.cancel(req.id)


async def frames_of(engine, reqs, request: Request) -> AsyncIterator[Optional[tuple]]:
    """``(index, frame)`` from every request as frames arrive; ``None`` after each quiet half second (time to
    send a keep-alive). Ends when all have ended or the client has gone; whatever is left is then cancelled."""
    queue: asyncio.Queue = asyncio.Queue()
    tasks = [asyncio.create_task(pump(i, req, queue)) for i, req in enumerate(reqs)]
    running, checked = len(reqs), time.monotonic()
    try:
        while running:
            try:
                item = await asyncio.wait_for(queue.get(), 0.5)
            except asyncio.TimeoutError:
                item = None
            if item is not None and item[1] is None:
                running -= 1
                continue
            yield item
            if time.monotonic() - checked > 0.5:
                checked = time.monotonic()
                if await request.is_disconnected():
                    return
    finally:
        for task in tasks:
            task.cancel()
        withdraw(engine, reqs)


async def pump(index: int, req, queue: asyncio.Queue) -> None:
    decoder = FrameDecoder()
    while not req.stream.drained:
        chunk = await req.stream.next_chunk(timeout=0.5)
        for frame in decoder.feed(chunk) if chunk else ():
            await queue.put((index, frame))
    await queue.put((index, None))


async def json_body(engine, plan: ImagePlan, reqs, request: Request) -> Response:
    results: list = [None] * len(reqs)
    async with contextlib.aclosing(frames_of(engine, reqs, request)) as frames:
        async for item in frames:
            if item is None:
                continue
            index, frame = item
            if frame.type == "result":
                results[index] = frame.header
            elif frame.type == "error":
                raise engine_error(frame.header["code"], frame.header["message"])
    if any(r is None for r in results):  # the client left: nobody reads this
        return Response(status_code=499)
    data = [await image_item(plan, result, request) for result in results]
    first = results[0]
    return JSONResponse(
        {
            "created": int(time.time()),
            "data": data,
            "background": "opaque",
            "output_format": plan.output_format,
            "quality": plan.quality,
            "size": f"{first['width']}x{first['height']}",
            "usage": usage(plan, first["width"], first["height"], len(results)),
        }
    )


async def image_item(plan: ImagePlan, result: dict, request: Request) -> dict:
    item = {"seed": result.get("seed")}
    if plan.response_format == "url":
        return item | {"url": output_url(request, result["path"])}
    return item | {"b64_json": await read_b64(result["path"])}


async def read_b64(path: str) -> str:
    def read() -> str:
        with open(path, "rb") as f:
            return base64.b64encode(f.read()).decode("ascii")

    return await asyncio.to_thread(read)


def output_url(request: Request, path: str) -> str:
    """Where the client fetches a result (with the same token): the engine's ``GET /outputs/{name}``, or the
    UI proxy's route to it when the request came through the proxy (which says so in ``X-Aitk-Public-Base``)."""
    base = request.headers.get("x-aitk-public-base") or str(request.base_url).rstrip("/")
    url = f"{base.rstrip('/')}/outputs/{quote(os.path.basename(path))}"
    job = request.headers.get("x-aitk-engine-job")
    return f"{url}?job={quote(job)}" if job else url


# ---------------------------------------------------------------------------------------------- streaming
def sse(event: str, data: dict) -> bytes:
    return f"event: {event}\ndata: {json.dumps(data, separators=(',', ':'))}\n\n".encode()


class ImageStream:
    """One result's state while its frames arrive: the preview factors, the size, the partials still due."""

    def __init__(self, plan: ImagePlan, index: int):
        self.plan, self.index = plan, index
        self.spec: dict = {}
        self.width = self.height = 0
        self.due: list[int] = []
        self.sent = 0

    def start(self, header: dict) -> None:
        sample = header["config"]["sample"]
        self.spec = header.get("latent") or {}
        self.width, self.height = sample["width"], sample["height"]
        self.due = partial_steps(sample["num_inference_steps"], self.plan.partial_images)

    def fields(self) -> dict:
        return {
            "created_at": int(time.time()),
            "size": f"{self.width}x{self.height}",
            "quality": self.plan.quality,
            "background": "opaque",
            "output_format": self.plan.output_format,
            "seed": self.plan.seeds[self.index],
            "image_index": self.index,
        }

    async def partial(self, frame) -> Optional[bytes]:
        """A ``partial_image`` event when this latent frame reaches the next due step (one per frame at most)."""
        if self.sent >= len(self.due) or frame.header["step"] < self.due[self.sent]:
            return None
        fmt, quality = self.plan.output_format, self.plan.samples[self.index].get("output_quality")
        picture = await asyncio.to_thread(
            preview_image, frame.array(), self.spec, self.width, self.height, fmt, quality
        )
        self.sent += 1
        event = f"{self.plan.kind}.partial_image"
        data = {
            "type": event,
            "b64_json": base64.b64encode(picture).decode("ascii"),
            "partial_image_index": self.sent - 1,
        }
        return sse(event, data | self.fields())

    async def completed(self, result: dict, request: Request) -> bytes:
        event = f"{self.plan.kind}.completed"
        data = {"type": event, "b64_json": await read_b64(result["path"])} | self.fields()
        if self.plan.response_format == "url":
            data["url"] = output_url(request, result["path"])
        data["usage"] = usage(self.plan, result["width"], result["height"], 1)
        return sse(event, data)


async def sse_body(engine, plan: ImagePlan, reqs, request: Request):
    """The event stream: partials and a completed event per result; an ``error`` event ends it early."""
    images = [ImageStream(plan, i) for i in range(len(reqs))]
    quiet_since = time.monotonic()
    async with contextlib.aclosing(frames_of(engine, reqs, request)) as frames:
        async for item in frames:
            event = None if item is None else await stream_event(images[item[0]], item[1], request)
            if event:
                quiet_since = time.monotonic()
                yield event
                if event.startswith(b"event: error"):
                    return
            elif time.monotonic() - quiet_since > KEEPALIVE_S:
                quiet_since = time.monotonic()
                yield b": keep-alive\n\n"


async def stream_event(image: ImageStream, frame, request: Request) -> Optional[bytes]:
    if frame.type == "start":
        image.start(frame.header)
    elif frame.type == "latent":
        return await image.partial(frame)
    elif frame.type == "result":
        return await image.completed(frame.header, request)
    elif frame.type == "error":
        error = engine_error(frame.header["code"], frame.header["message"])
        return sse("error", {"type": "error", "error": error.body()["error"]})
    return None
