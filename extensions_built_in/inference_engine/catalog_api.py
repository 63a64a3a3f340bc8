"""Routes that describe the engine and what it can load: ``/health``, ``/metrics``, ``/models``, ``/loras``,
``/checkpoints``. No torch."""

from __future__ import annotations

import asyncio

from fastapi import APIRouter, Request
from fastapi.responses import Response

from extensions_built_in.inference_engine.catalog import (
    clear_header_cache,
    engine_dtype,
    hub_models,
    list_checkpoints,
    list_upscalers,
)
from extensions_built_in.inference_engine.http_common import EngineDep, has_token

router = APIRouter()


@router.get("/health")
async def health(request: Request, engine: EngineDep):
    """``{"ok": true}`` to anyone, a liveness probe's answer; the rest (pool keys, model and LoRA paths,
    folders) only with the token."""
    if not has_token(request):
        return {"ok": True}
    return await asyncio.to_thread(engine.health)


@router.get("/metrics", responses={200: {"content": {"text/plain": {}}, "description": "Prometheus text format"}})
async def metrics(engine: EngineDep):
    """Prometheus text format (metrics.py), behind the token like every route but /health."""
    body, content_type = await asyncio.to_thread(engine.metrics.exposition)
    return Response(body, media_type=content_type)


@router.get("/models")
async def models(engine: EngineDep):
    return await asyncio.to_thread(engine.models)


@router.get("/loras")
async def loras(engine: EngineDep):
    """LoRA files under the engine's LoRA roots, newest first, with the training job, step and family AI
    Toolkit recorded for them, the name a prompt's ``<lora:name>`` uses, trigger words and a sample image
    (catalog.py, lora_library.py)."""
    library = engine.checks.loras
    return {"roots": library.roots, "loras": await asyncio.to_thread(library.entries)}


@router.get("/upscalers")
async def upscalers(engine: EngineDep):
    """Upscaler files under the model roots (``sample.upscale.model``; catalog.py ``list_upscalers``)."""
    return {"roots": engine.model_roots, "upscalers": await asyncio.to_thread(list_upscalers, engine.model_roots)}


@router.get("/checkpoints")
async def checkpoints(engine: EngineDep, refresh: bool = False):
    """The model library: diffusers folders, Hugging Face cache models and single-file checkpoints under the
    engine's model roots, each with its family, size, defaults on this engine's device and newest result; and
    each family's published checkpoint (``hub``). ``refresh=1`` rereads every header."""
    device = engine.checks.device

    def listing() -> dict:
        if refresh:
            clear_header_cache()
        outputs = engine.outputs.listing(limit=500)
        return {
            "roots": engine.model_roots,
            "device": device,
            "dtype": engine_dtype(device, None),
            "checkpoints": list_checkpoints(engine.model_roots, device, outputs),
            "hub": hub_models(),
        }

    return await asyncio.to_thread(listing)
