"""Issue #14's peer line with the card's drift taken out: the engine and each peer resident at once, their
requests alternating.

Run one after the other (compile_bench's ``fast`` then ``engine_fast``), the engine lost to bare diffusers by 0.46 %
on an H100, its six requests each slower than the last (docs/BENCHMARKS.md, twenty-fifth run); twenty requests
later on a fresh H100 did not creep (twenty-sixth run), with the card held at its power cap throughout (SM clock
1365-1980 MHz, ``clocks_event_reasons`` 0x4). Whatever drifts, the card's clocks or a neighbour, it reaches both
sides alike when they alternate: the engine (``python run.py``, its own process) loads and compiles first, so its
memory plan sees the whole card; then bare diffusers under the same compile in this process; then per peer,
``--repeats`` pairs, the order swapped every pair (peer-engine, engine-peer, ...) so that neither side always
runs on the warmer card. A peer is bare diffusers itself and each of ``--fast-variants`` that is a cache around it
(cache-dit as its README recommends; diffusers' MagCache on the CPU smoke run, where cache-dit is not installed).

The line holds when the engine's median end to end (client side, latents streamed every step, the PNG written)
is no more than each peer's median with the file written by the same writer (toolkit/media.py ``save_image``).
"""

from __future__ import annotations

import json
import statistics
import time
from pathlib import Path

from testing.bench.bare_pipeline import sync
from testing.bench.engine_process import engine_process
from testing.bench.gpu_machine import image_quality

PEER_CACHES = ("cache_dit", "magcache")  # a peer that is a cache around bare diffusers


def flux_gen(bench):
    """The fast stage's request: ``--fast-steps`` steps at the family's size, the prompt and seed the engine gets."""
    from toolkit.config_modules import GenerateImageConfig

    return GenerateImageConfig(
        prompt="a red fox in the snow", num_inference_steps=bench.args.fast_steps, seed=1, **bench.settings["flux"]
    )


def bare_call(bare, gen, work: Path) -> dict:
    """One end to end call of bare diffusers: to the pixels (``e2e_s``), with the PNG by the engine's writer
    (``e2e_with_file_s``), and with Pillow's default save as the peers' docs write it (``e2e_docs_file_s``)."""
    import numpy as np
    import torch
    from PIL import Image

    from toolkit.media import save_image

    at = time.time()
    sync()
    t0 = time.monotonic()
    with torch.inference_mode():
        out = bare.model.pipeline(
            **bare.model.pipeline_kwargs(gen), generator=torch.Generator("cpu").manual_seed(1), output_type="np"
        )
    sync()
    t1 = time.monotonic()
    pixels = (np.clip(out.images[0], 0, 1) * 255).round().astype(np.uint8)
    t2 = time.monotonic()
    save_image(pixels, str(work / "fast.png"))  # the engine's own writer
    t3 = time.monotonic()
    Image.fromarray(pixels).save(work / "docs.png")  # their docs' image.save: Pillow's
    docs = t2 - t0 + time.monotonic() - t3
    times = {"e2e_s": t1 - t0, "e2e_with_file_s": t3 - t0, "e2e_docs_file_s": docs}
    return {k: round(v, 3) for k, v in times.items()} | {"at": round(at, 3), "image": out.images[0]}


def run_peer_line(bench, cache) -> None:
    """``cache``: compile_bench's context that puts a cache around the bare pipeline (and compiles it again)."""
    import numpy as np
    from PIL import Image

    folder = Path(bench.args.work) / "peer_line"
    row = bench.results.setdefault("peer_line", {})
    heap = {"freeze_heap": bench.args.freeze_heap == "on"}
    peers = ["bare"] + [name for name in bench.args.fast_variants.split(",") if name in PEER_CACHES]
    roots = {"model_roots": [str(bench.models)]}  # request paths to checkpoints load only from there
    with engine_process(folder, bench.device, log=folder / "engine.log", compile=bench.mode, **heap, **roots) as client:
        first = bench._engine_image(client, "lossless")  # load and compile with the whole card free
        row["engine_first_s"] = first["s"]
        row["engine_plan"] = first["plan"]
        bare = bench.bare("flux")
        row["bare_compile"] = bare.compile(bench.mode)
        gen = flux_gen(bench)
        bare.model.prepare_gen_config(gen)
        for peer in peers:
            try:
                with cache(bare, None if peer == "bare" else peer, bench.args.fast_steps, bench.mode):
                    row[peer], image = _pairs(bench, peer, client, bare, gen, folder, first["plan"])
                if peer == "bare":  # the same computation on both sides, or the race is not a fair one
                    engine_image = np.asarray(Image.open(first["path"]), dtype=np.float32) / 255
                    row["engine_vs_bare_image"] = image_quality(np.asarray(image, dtype=np.float32), engine_image)
            except Exception as e:
                row[peer] = {"failed": f"{type(e).__name__}: {e}"}
            bench.save()
    (bench.out / "peer_line.log").write_text((folder / "engine.log").read_text()[-100_000:])


def _pairs(bench, peer, client, bare, gen, folder, first_plan) -> tuple:
    """A warm-up call of the peer (its compile), then ``--repeats`` pairs in alternating order, the summary saved
    after each pair (a run cut at its time limit keeps its pairs); the summary and the peer's last image."""
    bare_call(bare, gen, folder)
    peer_runs, engine_runs, image = [], [], None
    for i in range(bench.args.repeats):
        for side in ("peer", "engine") if i % 2 == 0 else ("engine", "peer"):
            if side == "peer":
                peer_runs.append(bare_call(bare, gen, folder))
                image = peer_runs[-1].pop("image")
            else:
                engine_runs.append(bench._engine_image(client, "lossless"))
        summary = bench.results["peer_line"][peer] = _summary(peer_runs, engine_runs, first_plan)
        bench.save()
    return summary, image


def plan_row(memory: dict) -> dict:
    """A status frame's memory plan (toolkit/memory_plan.py ``Plan.describe``) as where each component lives: the
    bench read a ``placements`` key the frame never had, so every request's plan came back None (twenty-seventh
    run)."""
    components = memory.get("components") or {}
    return {"summary": memory.get("summary"), "placements": {role: c["placement"] for role, c in components.items()}}


def request_row(run: dict) -> dict:
    """One engine request's figures (a median alone hid that each request's steps were slower than the last's)."""
    t = run["timings"]
    keys = ("step_s", "hook_ms", "save_s", "gc_s", "picked_at")
    return {"s": run["s"], "sampling_s": t.get("stage_s", {}).get("sampling")} | {k: t.get(k) for k in keys}


def _summary(peer_runs, engine_runs, first_plan) -> dict:
    med = statistics.median
    peer = {k: med(r[k] for r in peer_runs) for k in ("e2e_s", "e2e_with_file_s", "e2e_docs_file_s")}
    engine_s = med(r["s"] for r in engine_runs)
    plans = {json.dumps(first_plan, sort_keys=True)} | {json.dumps(r["plan"], sort_keys=True) for r in engine_runs}
    return {
        "peer": peer | {"runs": peer_runs},
        "engine": {"e2e_s": engine_s, "requests": [request_row(r) for r in engine_runs]},
        "engine_minus_peer_s": [round(e["s"] - p["e2e_with_file_s"], 3) for e, p in zip(engine_runs, peer_runs)],
        "engine_over_peer_pct": round(100 * (engine_s / peer["e2e_with_file_s"] - 1), 2),
        "holds": engine_s <= peer["e2e_with_file_s"],
        "engine_plans_seen": len(plans),  # 1: the engine's memory plan never changed with the peer resident
    }
