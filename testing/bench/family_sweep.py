"""Every family at real size, on the whole card and under VRAM budgets, with no memory option set: the table of
issue #13 in docs/BENCHMARKS.md.

    bash testing/bench/fetch_gpu_wheels.sh                                                      # here
    python3 testing/bench/family_sweep.py --out $OUT --wheels .whl_engine --families flux,sdxl  # GPU machine
    .venv/bin/python testing/bench/family_sweep.py --out /tmp/sweep --tiny --families sd1       # CPU smoke run

Per family: build the real-size checkpoint (``testing/bench/real_build.py``: random init at the published
configs, text encoders at real depth), then for each budget (0 = the whole card) a fresh engine
(``engine.memory: auto``) gets a cold request at the family's native size and the same request again. A budget
is a smaller card: a neighbour process holds the rest of the GPU and the engine has no budget setting
(``testing/bench/neighbour.py``; ``--budget-mode fraction``: ``engine.vram_budget_gb`` as in earlier runs).
Recorded: the plan the engine chose, what it found free at start, median s/step, load and end-to-end times, peak
VRAM, and the output file read back (kind, size, frames or duration); ``--quality`` adds the 8-bit denoiser's
PSNR against bf16 in the full card's engine (``testing/bench/quality_8bit.py``). The checkpoint is deleted before
the next family (the disk holds one at a time). JSON and markdown are rewritten after every run, so a cut run
keeps what it measured.
"""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.family_sweep_report import engine_figures, save, summary_row  # noqa: E402
from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402
from testing.bench.neighbour import add_budget_mode, card_budget, engine_found  # noqa: E402

IMAGE_STEPS, VIDEO_STEPS = 8, 2
# Formats the GPU machine can write without PyAV (36 MB: it does not fit what a run carries): Pillow and soundfile.
PLAIN_FORMATS = {"image": "png", "video": "webp", "audio": "wav"}


def native_sample(model_class, steps: int, tiny: bool) -> dict:
    sample = dict(model_class.defaults)
    if tiny:
        from toolkit.models.tiny import sample as tiny_settings

        sample.update(tiny_settings(model_class.arch))
    plain = PLAIN_FORMATS[model_class.modality]
    if plain in model_class.output_exts:
        sample["output_ext"] = plain
    sample.update(prompt="a red fox in the snow, photograph", seed=1, num_inference_steps=steps)
    return sample


def missing_writer(model_class, tiny: bool):
    """Why the family's output cannot be written on this machine, or None. LTX-2 writes mp4 (its audio needs a
    container that carries it) through PyAV; on 2026-12-03 the GPU machine sampled and decoded it twice at 24 and
    16 GiB without PyAV carried, and both requests failed while saving."""
    import importlib.util

    if native_sample(model_class, 1, tiny).get("output_ext") == "mp4" and importlib.util.find_spec("av") is None:
        return "PyAV is not installed (mp4): carry its wheel, --wheels .whl_engine,.whl_av (fetch_gpu_wheels.sh --av)"
    return None


def control_images(model_class, sample: dict, folder: Path, client=None) -> dict:
    """Edit and image-to-video families need control images: noise at the output size, as files (uploaded
    when a client is given)."""
    import numpy as np
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    refs = {}
    for i in range(model_class.control_images):
        path = folder / f"control_{i}.png"
        pixels = np.random.default_rng(i).integers(
            0, 256, (sample.get("height", 1024), sample.get("width", 1024), 3), dtype=np.uint8
        )
        Image.fromarray(pixels).save(path)
        refs["ctrl_img" if i == 0 else f"ctrl_img_{i + 1}"] = (
            client.upload_asset(str(path))["id"] if client else str(path)
        )
    return refs


def bare_pipeline(args, arch: str, folder: Path) -> dict:
    """The same request through the family's diffusers pipeline in this process, everything on the GPU, no
    engine: the reference the engine's full-card step time is compared with (median of 3 calls after one to
    warm up)."""
    import gc
    import statistics

    import torch

    from testing.bench.bare_pipeline import BarePipeline
    from toolkit.models.registry import get_model_class

    model_class = get_model_class(arch)
    steps = args.steps or (VIDEO_STEPS if model_class.modality == "video" else IMAGE_STEPS)
    sample = native_sample(model_class, steps, args.tiny)
    settings = {k: v for k, v in sample.items() if k not in ("prompt", "seed", "num_inference_steps")}
    work = Path(args.work) / f"{arch}_bare"
    settings.update(control_images(model_class, sample, work))
    device, dtype = ("cpu", "float32") if args.tiny else ("cuda", "bf16")
    bare = BarePipeline(arch, str(folder), device, dtype, settings, work)
    try:
        bare.call(steps)
        medians = [bare.call(steps)[1] for _ in range(3)]
        return {"step_s": statistics.median(medians), "steps_s": medians, "load_s": bare.load_s}
    finally:
        del bare
        gc.collect()
        if torch.cuda.is_available():
            torch.cuda.empty_cache()


def checked_output(path: str, model_class, sample: dict) -> dict:
    """The file read back: right kind, and the native size, frames or duration."""
    from toolkit.media_probe import probe

    try:
        info = probe(path)
    except Exception as e:  # a missing media library on the GPU machine must not lose the row
        return {"ok": False, "error": f"{type(e).__name__}: {e}"[:200]}
    want = {"kind": model_class.modality}
    if model_class.modality in ("image", "video"):
        want.update(width=sample.get("width"), height=sample.get("height"))
    got = {k: info.get(k) for k in ("kind", "width", "height", "frames", "duration_s")}
    return {"ok": all(got.get(k) == v for k, v in want.items() if v is not None), **got}


def run_budget(args, arch: str, folder: Path, entry: str, then=None) -> dict:
    """One fresh engine under one budget entry: ``GiB`` (0: the whole card) or ``GiB:qtype`` (the plan's 8-bit
    type forced through ``engine.memory_qtype``, to compare types on the same budget). ``then(client, row, body)``
    runs in the same engine once the row is complete (the full card's 8-bit quality)."""
    from testing.bench.budget_probe import timed_request
    from testing.bench.engine_process import engine_process
    from toolkit.models.registry import get_model_class

    budget_text, _, qtype = entry.partition(":")
    budget = float(budget_text)
    model_class = get_model_class(arch)
    steps = VIDEO_STEPS if model_class.modality == "video" else IMAGE_STEPS
    sample = native_sample(model_class, args.steps or steps, args.tiny)
    device = "cpu" if args.tiny else "cuda"
    model = {"arch": arch, "name_or_path": str(folder), "dtype": "float32" if args.tiny else "bf16"}
    row: dict = {"budget_gb": budget or None, "memory_qtype": qtype or "auto", "sample": sample}
    setting = {"memory_quality": args.memory_quality} if args.memory_quality else {}  # else the engine's default
    if args.host_ram_gb:
        setting["host_ram_budget_gb"] = args.host_ram_gb
    started = time.monotonic()
    name = entry.replace(":", "_")
    work = Path(args.work) / f"{arch}_{name}"
    log = Path(args.work) / f"engine_{arch}_{name}.log"  # not under --out: the GPU machine returns few files
    try:
        with (
            card_budget(budget, args.budget_mode, device) as (budget_options, record),
            engine_process(
                work,
                device,
                log=log,
                start_timeout=300,
                model_roots=[str(args.models)],  # request paths to checkpoints load only from there
                **budget_options,
                **setting,
                memory_qtype=qtype or "auto",
                warm_up=True,
                compile=args.compile,
                attention=args.attention,
                stacks=Path(args.out) / f"stacks_{arch}_{name}.txt" if args.stacks else None,
                stacks_every_s=args.stacks or 30,
            ) as client,
        ):
            row.update(record, engine_found=engine_found(client.health()))
            body = {
                "model": model,
                "sample": sample | control_images(model_class, sample, work, client),
                "stream": {"latents": "none"},
            }
            # "warm" repeats the prompt (its encoding comes from the prompt cache, toolkit/models/prompt_cache.py);
            # "new_prompt" is a warm request that encodes a prompt of its own.
            first = dict(body)
            made = {}  # a request's file, the start of the --from-image requests
            for name in ("cold", "warm", "new_prompt")[: 3 if args.new_prompt else 2]:
                if name == "new_prompt":
                    body["sample"] = new_prompt(body["sample"], 0)
                row[name] = timed_request(client, body, keep_path=True)
                if "error" in row[name]:
                    break
                made[name] = row[name].pop("path")
                row[name]["output"] = checked_output(made[name], model_class, sample)
            if args.from_image and "warm" in made:
                row.update(from_image_requests(client, first, made["warm"], model_class))
            if args.repeats > 1 and "new_prompt" in row and "error" not in row["new_prompt"]:
                row["repeats"] = repeated_requests(client, body, args.repeats)
            health = client.health()
            row["plan"] = (health.get("memory") or {}).get("plan")
            row["memory_quality"] = {"asked": args.memory_quality, "engine": reported_quality(health)}
            link = health.get("memory") or {}  # this machine's measured link and the copy cost's correction
            row["link"] = {k: link.get(k) for k in ("h2d_gbps", "reference_h2d_gbps", "copy_correction", "copy_scale")}
            row["vram"] = health.get("vram")
            row["host_ram_budget"] = health.get("host_ram_budget")
            row["engine_peak_rss_gb"] = engine_peak_rss_gb(work / "engine.json")
            row["prompt_cache"] = health.get("prompt_cache")
            row["compile"] = {
                k: health["compile"].get(k)
                for k in ("mode", "compiled", "graphs", "seconds", "phases", "failed", "attention")
            }
            row["pool"] = [
                {k: e[k] for k in ("class", "subfolder", "bytes", "device", "tier", "load_s")} for e in health["pool"]
            ]
            if then is not None:
                then(client, row, first)
    except Exception as e:  # one run's failure must not lose the others
        row["exception"] = f"{type(e).__name__}: {e}"[:800]
    if row.get("exception") or any("error" in (row.get(k) or {}) for k in ("cold", "warm", "new_prompt")):
        row["log_tail"] = log.read_text(errors="replace")[-20000:] if log.exists() else None  # tracebacks too
    row["wall_s"] = round(time.monotonic() - started, 1)
    return row


def sweep(args) -> dict:
    import torch

    from testing.bench.real_build import build_real, remove_real
    from toolkit.models.registry import get_model_class

    out = Path(args.out)
    out.mkdir(parents=True, exist_ok=True)
    result = {
        "meta": {
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "tiny": args.tiny,
            "compile": args.compile,
            "attention": args.attention,
            "gpu": None if args.tiny else torch.cuda.get_device_name(0),
            "budgets_gb": args.budgets,
            "budget_mode": args.budget_mode,
            "memory_quality": args.memory_quality,
        },
        "families": {},
    }
    budgets = [_entry(b) for b in args.budgets.split(",") if b.strip()]  # "": the bare pipeline alone
    for arch in args.families.split(","):
        family: dict = result["families"].setdefault(arch, {"runs": {}})
        folder = Path(args.models) / arch
        t0 = time.monotonic()
        try:
            if problem := missing_writer(get_model_class(arch), args.tiny):
                raise RuntimeError(problem)
            device, dtype = ("cpu", torch.float32) if args.tiny else ("cuda", torch.bfloat16)
            depth = 1 if args.tiny else None
            spill = dict(item.split("=", 1) for item in args.spill.split(",")) if args.spill else None
            family["build"] = {"gib": build_real(arch, str(folder), device, dtype, depth=depth, spill=spill)}
        except Exception as e:
            family["build"] = {"exception": f"{type(e).__name__}: {e}"[:800]}
        family["build"]["s"] = round(time.monotonic() - t0, 1)
        save(result, out)
        if "exception" not in family["build"]:
            # Engines interleaved across budgets (0, 24, 0, 24, ...): a slow process lands on any budget alike.
            then = quality_step(args, arch, family, lambda: save(result, out))
            for _ in range(args.engines):
                for entry in budgets:
                    run = run_budget(args, arch, folder, entry, then if entry == "0" else None)
                    first = family["runs"].setdefault(entry, run)
                    first.setdefault("engines", []).append(engine_figures(run))
                    save(result, out)
                    print(arch, entry, json.dumps(summary_row(first))[:400], flush=True)
            if args.bare:
                try:
                    family["bare"] = bare_pipeline(args, arch, folder)
                except Exception as e:
                    family["bare"] = {"exception": f"{type(e).__name__}: {e}"[:800]}
                save(result, out)
        remove_real(str(folder))
    return result


def quality_step(args, arch: str, family: dict, save):
    """The full card engine's last step under ``--quality``: the 8-bit denoiser against bf16 at the family's own
    step count, once per family (``family["quality"]``), saved after each variant; its failure is its own, never
    the budget row's."""
    from testing.bench.quality_8bit import measure
    from toolkit.models.registry import get_model_class

    if not args.quality:
        return None

    def then(client, row: dict, body: dict) -> None:
        if "quality" in family or any("error" in (row.get(k) or {}) for k in ("cold", "warm")):
            return
        family["runs"].setdefault("0", row)  # kept before the quality requests run: a cut run keeps both
        family["quality"] = {}
        steps = args.quality_steps or get_model_class(arch).defaults.get("num_inference_steps")
        sample = body["sample"] | ({"num_inference_steps": steps} if steps else {})
        try:
            measure(client, body | {"sample": sample}, args.quality.split(","), family["quality"], save)
        except Exception as e:
            family["quality"]["exception"] = f"{type(e).__name__}: {e}"[:800]
            save()

    return then


def from_image_requests(client, body: dict, start: str, model_class) -> dict:
    """``--from-image``: the warm request again from its own result at strength 0.5 (about half the steps), and
    that result upscaled x2 and refined at 0.35 (README "Starting from an image"), each timed as the others."""
    from testing.bench.budget_probe import timed_request

    rows = {}
    for name, extra in (
        ("img2img_0.5", {"init_image": start, "strength": 0.5}),
        ("upscale_x2", {"init_image": start, "upscale": {"factor": 2}}),
    ):
        rows[name] = timed_request(client, body | {"sample": body["sample"] | extra}, keep_path=True)
        if "path" in rows[name]:
            factor = 2 if name == "upscale_x2" else 1
            size = {k: body["sample"][k] * factor for k in ("width", "height")}
            rows[name]["output"] = checked_output(rows[name].pop("path"), model_class, body["sample"] | size)
    return rows


def engine_peak_rss_gb(engine_json: Path):
    """The engine process's peak resident memory (VmHWM), to set beside a host RAM budget: the budget only counts."""
    try:
        pid = json.loads(engine_json.read_text())["pid"]
        with open(f"/proc/{int(pid)}/status") as f:
            return next(round(int(line.split()[1]) / 2**20, 2) for line in f if line.startswith("VmHWM:"))
    except (OSError, KeyError, TypeError, ValueError, StopIteration):
        return None


def reported_quality(health: dict):
    """``engine.memory_quality`` as the engine reports it (None from an engine that does not know the setting)."""
    memory = health.get("memory") or {}
    return memory.get("quality", memory.get("memory_quality", health.get("memory_quality")))


def repeated_requests(client, body: dict, repeats: int) -> dict:
    """More warm and new-prompt requests in the same engine (each new prompt its own), so a sub-second request
    of a launch-bound family is a median rather than one draw: SD 1.5's warm request took 0.30-0.64 s across
    engines of one plan (2026-12-03/04)."""
    from testing.bench.budget_probe import timed_request

    figures: dict = {"warm": [], "new_prompt": []}
    for i in range(1, repeats):
        for name in figures:
            sample = new_prompt(body["sample"], i) if name == "new_prompt" else body["sample"]
            timed = timed_request(client, body | {"sample": sample})
            if "error" in timed:
                return figures | {"error": timed["error"]}
            figures[name].append({"total_s": timed["total_s"], "step_s": timed["timings"]["step_s"]})
    return figures


def new_prompt(sample: dict, i: int) -> dict:
    """The ``i``-th prompt the prompt cache has not seen (0: the sweep's ``new_prompt`` request)."""
    view = f", view {i}" if i else ""
    return sample | {"prompt": f"a lighthouse on a cliff at dusk{view}", "seed": 2 + i}


def _entry(text: str) -> str:
    """``24`` or ``24.0`` -> ``24``; ``24:float8`` keeps its type."""
    budget, sep, qtype = text.strip().partition(":")
    return f"{float(budget):g}{sep}{qtype}"


def build_parser():
    parser = bench_parser(__doc__, work="/tmp/aitk_sweep")
    parser.add_argument("--families", required=True)
    parser.add_argument(
        "--budgets",
        default="0,24",
        help="GiB, comma-separated; 0 is the whole card; GiB:qtype "
        "forces the plan's 8-bit type (engine.memory_qtype), e.g. 24,24:float8",
    )
    parser.add_argument(
        "--steps", type=int, default=0, help=f"default {IMAGE_STEPS} (image, audio), {VIDEO_STEPS} (video)"
    )
    parser.add_argument("--bare", action="store_true", help="also time the bare diffusers pipeline (full card)")
    parser.add_argument(
        "--engines",
        type=int,
        default=1,
        help="fresh engines per budget, interleaved across budgets; figures are their medians (launch-bound "
        "families' steps follow each process's CPU: SDXL 0.063 and 0.113 s/step in two engines, same plan)",
    )
    parser.add_argument(
        "--repeats",
        type=int,
        default=1,
        help="warm and new-prompt requests per engine; an engine's figures are their medians",
    )
    parser.add_argument(
        "--spill",
        help="ROLE=DIR[,ROLE=DIR]: build these components in DIR, linked from the checkpoint (FLUX.2-dev's "
        "encoder in /dev/shm: its 104 GiB do not fit the one-GPU machine's disk)",
    )
    parser.add_argument(
        "--stacks",
        type=float,
        default=0,
        help="every N seconds, the engine's Python stacks into OUT/stacks_ARCH_BUDGET.txt (0: never)",
    )
    parser.add_argument(
        "--compile",
        default="off",
        choices=("off", "auto", "max"),
        help="engine.compile for every engine (cold: compile)",
    )
    parser.add_argument(
        "--attention",
        default="auto",
        choices=("auto", "default", "flash", "cudnn", "efficient", "fa4"),
        help="engine.attention for every engine (fa4: carry the flash-attn-4 wheels, fetch_gpu_wheels.sh --fa4)",
    )
    add_budget_mode(parser)
    parser.add_argument(
        "--memory-quality",
        choices=("lossless", "balanced", "fast"),
        help="engine.memory_quality for every engine (unset: the engine's default); each run records what the "
        "engine reports",
    )
    parser.add_argument(
        "--host-ram-gb",
        type=float,
        default=0,
        help="engine.host_ram_budget_gb for every engine: plan as on a machine with this much RAM (a 24 GiB card "
        "in a 32 GB machine: --budgets 24 --host-ram-gb 32); each row records the engine's peak RSS beside it",
    )
    parser.add_argument(
        "--new-prompt",
        action=argparse.BooleanOptionalAction,
        default=True,
        help="a third request with a prompt of its own (--no-new-prompt: cold and warm only, for a 14 B video "
        "model's minute-long requests)",
    )
    parser.add_argument(
        "--quality",
        help="VARIANT[,VARIANT]: in the full card's engine, the denoiser quantized to each qtype (float8, "
        "float8dq, int8; bf16: the reference again) against bf16, PSNR and SSIM (testing/bench/quality_8bit.py)",
    )
    parser.add_argument("--quality-steps", type=int, default=0, help="the quality requests' steps (0: the family's)")
    parser.add_argument(
        "--from-image",
        action="store_true",
        help="after the warm request, image-to-image at 0.5 from its result and an upscale x2 + refine of it, "
        "timed (families that start from an image)",
    )
    return parser


def main(argv=None) -> int:
    sweep(parse_bench_args(build_parser(), argv))
    return 0


if __name__ == "__main__":
    sys.exit(main())
