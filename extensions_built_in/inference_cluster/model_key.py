"""The routing key of a model config: one string per set of weights a replica can hold resident.

The ingress computes it from a request's ``model`` dict and each replica from its engine's resident holder
(``/health``'s ``active.config``), with the same function, so the two meet. Both go through the engine's own
identity (``ModelConfig.identity()``, what the engine compares to reuse its holder) after the request body's
defaults are filled in (``ModelBody``), so ``{"arch": "sd1", "name_or_path": "x"}`` and the same with
``"dtype": "float16"`` spelled out are one key.

Two parts of the holder's identity are left out or shortened, because the ingress cannot know them: the memory
plan (made on the replica's GPU) and LoRA folders (the engine resolves LoRA paths on its own disk; the key keeps
the file name and multiplier). A key that matches where the weights differ only costs a swap the router did not
foresee; it never changes what a request generates.

No torch: the ingress imports this.
"""

from __future__ import annotations

import hashlib
import json
import os
from typing import Optional

from pydantic import ValidationError

from extensions_built_in.inference_engine.bodies import ModelBody
from toolkit.config_modules import ModelConfig

KEY_CHARS = 16  # 64 bits of a sha256: collisions among a cluster's models are not a concern


def model_key(model) -> Optional[str]:
    """The key of a request's ``model`` dict, or None when it is not a model the engine would accept (the
    engine then answers the 422; any replica may)."""
    if not isinstance(model, dict):
        return None
    try:
        body = ModelBody(**model).model_dump(exclude_none=True)
        identity = ModelConfig.from_dict(body).identity()
    except (ValidationError, TypeError, ValueError):
        return None
    return _digest(identity)


def resident_key(active: Optional[dict]) -> Optional[str]:
    """The key of an engine's resident holder, from ``/health``'s ``active`` (None: nothing loaded)."""
    if not active or not isinstance(active.get("config"), dict):
        return None
    config = {k: v for k, v in active["config"].items() if k != "memory_plan"}
    return model_key(config)


def _digest(identity: dict) -> str:
    identity = dict(identity)
    if identity.get("lora_path"):
        identity["lora_path"] = os.path.basename(str(identity["lora_path"]))
    identity["loras"] = [
        {"path": os.path.basename(str(e.get("path", ""))), "multiplier": e.get("multiplier")}
        for e in identity.get("loras") or []
    ]
    text = json.dumps(identity, sort_keys=True, default=str, separators=(",", ":"))
    return hashlib.sha256(text.encode()).hexdigest()[:KEY_CHARS]


def model_label(model) -> str:
    """``arch name_or_path`` for logs and /health; never used to route."""
    if not isinstance(model, dict):
        return "?"
    return f"{model.get('arch') or 'sd1'} {model.get('name_or_path', '?')}"
