"""FLUX.2-dev's 24 GiB plan on a GPU in seconds: the tiny FLUX.2 checkpoint, with the planner told the real
component sizes, so it streams the 8-bit transformer and 8-bit Mistral encoder as at real size (the tiny blocks
all fit in what the transformer keeps; the encoder streams). Then the same with an out-of-memory injected
half-way through the encoder's stream, which the engine answers by planning again (the real run at 24 GiB hit
this, and its second plan failed with a device mismatch).

    python3 testing/bench/stream_retry_probe.py --out $OUT --wheels .whl_engine     # GPU machine
    .venv/bin/python testing/bench/stream_retry_probe.py --out /tmp/probe --tiny   # CPU smoke run (no streaming)

Results: OUT/stream_retry_probe.json, after each case; a failing case's traceback is in the engine's output.
"""

from __future__ import annotations

import json
import os
import sys
import tempfile
import traceback
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[2]))

from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402

GIB = 1024**3
REAL_GIB = {"transformer": 60.02, "text_encoder": 44.72, "vae": 0.16}  # the real-size build's bf16 sizes


def real_sized_parts(model_class) -> None:
    """The planner sees FLUX.2-dev's sizes; the weights stay tiny."""
    from dataclasses import replace

    original = model_class.memory_parts

    def parts(self):
        out = []
        for p in original(self):
            scale = REAL_GIB[p.role] * GIB / max(p.bytes, 1)
            out.append(replace(p, bytes=int(p.bytes * scale), largest=int(p.largest * scale)))
        return out

    model_class.memory_parts = parts


def oom_in_encoder_once(state: dict) -> None:
    """The first time the encoder's first block arrives, its rest on the GPU: out of memory, as at real size."""
    import torch

    from toolkit.models.streaming import BlockStream

    original = BlockStream._arrive

    def arrive(self, i):
        if state["inject"] and i == 0 and not self.rest_stays:
            state["inject"] = False
            raise torch.cuda.OutOfMemoryError("CUDA out of memory (injected). Tried to allocate 1.00 GiB.")
        return original(self, i)

    BlockStream._arrive = arrive


def case(harness, body) -> dict:
    frames = [f.header for f in harness.client.generate(body)]
    end = frames[-1]
    return {
        "ok": bool(end.get("ok")),
        "error": next((f.get("error") or f for f in frames if f["type"] == "error"), None),
        "plans": [f["message"] for f in frames if f["type"] == "status" and "plan" in f.get("message", "")],
    }


def main() -> None:
    args = parse_bench_args(bench_parser(__doc__, "/tmp/aitk_stream_retry"))
    device = "cpu" if args.tiny else "cuda"
    os.environ.setdefault("AITK_TINY_CACHE", tempfile.mkdtemp(prefix="aitk_tiny_"))
    from testing.engine_harness import EngineHarness
    from testing.stream_contract import body_for
    from toolkit.models.registry import get_model_class

    real_sized_parts(get_model_class("flux2"))
    state = {"inject": False}
    oom_in_encoder_once(state)
    out_path = Path(args.out) / "stream_retry_probe.json"
    out_path.parent.mkdir(parents=True, exist_ok=True)
    results: dict = {}
    body = body_for("flux2", steps=2)
    body["model"]["dtype"] = "bfloat16"
    for name, inject in (("plain", False), ("oom_then_replan", True), ("after", False)):
        with tempfile.TemporaryDirectory() as folder:
            harness = EngineHarness(Path(folder), device=device, vram_budget_gb=24)
            if args.tiny:  # the planner as on a GPU, with 24 GiB free and int8 (as testing/test_memory_plan_engine.py)
                from extensions_built_in.inference_engine import request_memory

                request_memory.plannable_bytes = lambda device, own: 24 * GIB
                request_memory.host_available_bytes = lambda pooled: 120 * GIB
                harness.engine.memory.active, harness.engine.memory.qtype = True, "int8"
            try:
                state["inject"] = inject
                results[name] = case(harness, body)
            except Exception as e:
                results[name] = {"exception": "".join(traceback.format_exception(e))[-3000:]}
            finally:
                harness.close()
        print(name, json.dumps(results[name])[:1500], flush=True)
        out_path.write_text(json.dumps(results, indent=1))


if __name__ == "__main__":
    main()
