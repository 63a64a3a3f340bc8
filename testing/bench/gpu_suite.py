"""The engine at full model size on a GPU, measured against bare diffusers in the same run.

    python testing/bench/gpu_suite.py --out RESULTS_DIR [--wheels .whl_engine] [--families sdxl,flux,zimage,wan21]
                                      [--stages measure,cancel,oom,queue,pool]
    python testing/bench/gpu_suite.py --out /tmp/smoke --tiny          # the same run on CPU with small models

One command, meant to finish inside 10 minutes on an H200. It builds random-init components at real size from
the real configs (testing/bench/real_size.py; nothing is downloaded), saves them as diffusers folders, starts
the engine as users do (``python run.py``, its own process), and drives it over HTTP with the project's client:

* per family, with the bare pipeline (in this process) and the engine both holding the checkpoint and their
  calls interleaved: step time with latents streamed every step vs the bare pipeline and vs the engine with
  latents off (CUDA-event step clocks on both sides), time to first byte / first progress / first latent,
  end-to-end;
* per family: cancel latency (cancel -> error frame) and allocated VRAM after the cancel vs before;
* per family: an out-of-memory provoked on purpose (a huge resolution while a neighbour holds the rest of the
  card) -> ``oom`` error frame, the next request works, and VRAM is back to its baseline;
* per family: four requests submitted at once, wall time vs the sum of the engine's per-request times (saving
  overlaps the next request's sampling);
* the pool (issue 4): cold load, pool-hit overhead, a swap sharing text encoders + VAE vs loading just the UNet,
  the RAM-tier return of the Flux transformer, a LoRA switch, VRAM after each swap.

Results: RESULTS_DIR/gpu_suite.json (written after every stage, so a cut run keeps what it measured) and
RESULTS_DIR/gpu_suite.md (the tables for docs/BENCHMARKS.md).
"""

from __future__ import annotations

import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.bare_pipeline import BarePipeline  # noqa: E402
from testing.bench.bare_pipeline import free as _free  # noqa: E402
from testing.bench.bare_pipeline import sync as _sync  # noqa: E402
from testing.bench.engine_process import engine_process, queue_row, send_at_once  # noqa: E402
from testing.bench.gpu_machine import bench_parser, parse_bench_args  # noqa: E402
from testing.bench.gpu_suite_report import render_markdown  # noqa: E402
from toolkit.models.attention import ATTENTION_MODES, resolve_attention  # noqa: E402

# Real-model sample settings (the suite's subject) and their small CPU twins (--tiny).
SETTINGS = {
    "sdxl": dict(width=1024, height=1024, guidance_scale=5.0, output_ext="png"),
    "flux": dict(width=1024, height=1024, guidance_scale=3.5, output_ext="png"),
    "zimage": dict(width=1024, height=1024, guidance_scale=0.0, output_ext="png"),
    "wan21": dict(width=832, height=480, num_frames=33, fps=16, guidance_scale=5.0, output_ext="webp"),
}
TINY_SETTINGS = {
    "sdxl": dict(width=64, height=64, guidance_scale=5.0, output_ext="png"),
    "flux": dict(width=64, height=64, guidance_scale=3.5, output_ext="png"),
    "zimage": dict(width=64, height=64, guidance_scale=0.0, output_ext="png"),
    "wan21": dict(width=64, height=64, num_frames=9, fps=8, guidance_scale=5.0, output_ext="webp"),
}

# What a user would ask for when they want to run out of memory: 16x the pixels (images), 4x the pixels (video).
HUGE = {
    "sdxl": dict(width=4096, height=4096),
    "flux": dict(width=4096, height=4096),
    "zimage": dict(width=4096, height=4096),
    "wan21": dict(width=1664, height=960),
}
GB = 1024**3
# SDXL's UNet at 1024² keeps an H200 busy for less time than Python takes to launch its kernels, so its step
# time is CPU time and moves with the shared machine's load (0.067-0.177 s between calls of one run): it gets
# this many times the interleaved repeats.
REPEAT_FACTOR = {"sdxl": 3}


class Suite:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.models = Path(args.models)
        self.results: dict = {"meta": {}, "build": {}, "families": {}, "pool": {}, "errors": []}
        self.settings = TINY_SETTINGS if args.tiny else SETTINGS
        self.steps_long, self.steps_short = (args.steps, 2)

    def save(self) -> None:
        (self.out / "gpu_suite.json").write_text(json.dumps(self.results, indent=2, default=str))

    def stage(self, name, fn, *a):
        t0 = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            fn(*a)
        except Exception as e:  # one broken stage must not lose the others' numbers
            import traceback

            traceback.print_exc()
            self.results["errors"].append(f"{name}: {type(e).__name__}: {e}")
        print(f"   {name}: {time.monotonic() - t0:.1f}s", flush=True)
        self.save()

    def body(self, arch, steps, seed=1, folder=None, extras=None, latents="raw", downsample=1, **extra_model):
        folder = folder or str(self.models / arch)
        model = {
            "arch": arch,
            "name_or_path": folder,
            "extras_name_or_path": extras or folder,
            "dtype": self.dtype,
            **extra_model,
        }
        return {
            "model": model,
            "sample": {
                "prompt": "a red fox in the snow",
                "num_inference_steps": steps,
                "seed": seed,
                **self.settings[arch],
            },
            "stream": {"latents": latents, "every_n_steps": 1, "downsample": downsample},
        }

    def meta(self):
        import diffusers
        import torch
        import transformers

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        self.results["meta"] = {
            "date": time.strftime("%Y-%m-%d %H:%M:%S"),
            "gpu": gpu,
            "torch": torch.__version__,
            "diffusers": diffusers.__version__,
            "transformers": transformers.__version__,
            "python": sys.version.split()[0],
            "tiny": self.args.tiny,
            "steps": self.steps_long,
            "repeats": self.args.repeats,
            "compile": self.args.compile,
            "attention": self.args.attention,
        }

    def build(self):
        import torch

        from testing.bench.real_size import BUILDERS, make_sdxl_lora

        device = "cuda" if torch.cuda.is_available() and not self.args.tiny else "cpu"
        dtype = torch.float32 if self.args.tiny else torch.bfloat16
        for arch in self.families:
            folder = self.models / arch
            t0 = time.monotonic()
            if not (folder / ".done").exists():
                BUILDERS[arch](str(folder), device, dtype, small=self.args.tiny)
                (folder / ".done").write_text("ok")
            torch.cuda.empty_cache() if torch.cuda.is_available() else None
            self.results["build"][arch] = {"s": round(time.monotonic() - t0, 1), "gb": round(_folder_gb(folder), 2)}
            self.save()
        if "sdxl" in self.families and "pool" in self.stages:
            b = self.models / "sdxl_b"
            if not (b / ".done").exists():
                BUILDERS["sdxl"](str(b), device, dtype, small=self.args.tiny, seed=1)
                (b / ".done").write_text("ok")
            for name, seed in (("lora_a", 1), ("lora_b", 2)):
                if not (self.models / name).exists():
                    make_sdxl_lora(str(self.models / "sdxl" / "unet"), str(self.models / name), seed, device, dtype)

    def family(self, client, arch):
        """Bare pipeline and engine on the same checkpoint, both resident, calls interleaved (bare, engine with
        latents every step, engine without latents) so that clock drift and neighbours hit all three alike."""
        row = self.results["families"].setdefault(arch, {})
        args = (arch, str(self.models / arch), self.device, self.dtype, self.settings[arch], self.out)
        args += (resolve_attention(self.args.attention, arch, self.device),)  # the engine's SDPA order, on both
        bare = BarePipeline(*args)
        row["bare_load_s"] = bare.load_s
        if "measure" in self.stages:
            mode = self.args.compile if self.device == "cuda" else "off"  # a second bare pipeline, compiled
            self._measure(client, arch, bare, row, BarePipeline.compiled(mode, *args))
        if "cancel" in self.stages:
            row["cancel"] = self._cancel(client, arch)
            self.save()
        bare = None  # the OOM probe must not count the bare copy as the engine's neighbour
        _free()
        if "oom" in self.stages and self.device == "cuda":  # on a CPU a 4096² request would simply run
            row["oom"] = self._oom(client, arch)

    def _measure(self, client, arch, bare, row, bare_c=None):
        cold = self._request(client, self.body(arch, self.steps_short))
        row.update(
            cold_total_s=round(cold["total_s"], 3),
            cold_load_s=cold["timings"].get("load_s"),
            cold_components_s={
                f"{e['class']}:{e['subfolder']}": e["load_s"] for e in client.health()["pool"] if e["in_use"]
            },
        )
        bare.call(self.steps_short)  # warm-up: kernels, allocator
        if bare_c is not None:
            t0 = time.monotonic()
            bare_c.call(self.steps_short)  # its compile
            row["bare_compiled"] = {"first_call_s": round(time.monotonic() - t0, 3), "how": bare_c.compiled}
        self._request(client, self.body(arch, self.steps_short))
        variants = {"raw": {}, "none": {"latents": "none"}}
        if arch == "wan21":  # the biggest latent per step (1.8 MB): what does shrinking it 4x buy?
            variants["downsample2"] = {"downsample": 2}
        warm = client.health()["compile"]  # a recompile (graphs) or a CUDA graph recorded again later would move it
        runs = {"bare_long": [], "bare_short": [], "engine_short": [], "bare_c": [], **{k: [] for k in variants}}
        for _ in range(self.args.repeats * REPEAT_FACTOR.get(arch, 1)):
            runs["bare_long"].append(bare.call(self.steps_long))
            if bare_c is not None:
                runs["bare_c"].append(bare_c.call(self.steps_long))
            for name, extra in variants.items():
                runs[name].append(self._request(client, self.body(arch, self.steps_long, **extra)))
            runs["bare_short"].append(bare.call(self.steps_short))
            runs["engine_short"].append(self._request(client, self.body(arch, self.steps_short)))
        med = statistics.median
        bare_step = med(e for _, e in runs["bare_long"])
        row["bare"] = {
            "event_step_s": round(bare_step, 5),
            "event_steps": [e for _, e in runs["bare_long"]],
            "call_long_s": round(med(w for w, _ in runs["bare_long"]), 4),
            "call_short_s": round(med(w for w, _ in runs["bare_short"]), 4),
        }
        row["bare"]["call_step_s"] = _per_step(
            row["bare"]["call_long_s"], row["bare"]["call_short_s"], self.steps_long, self.steps_short
        )
        for name in variants:
            steps = [r["timings"].get("step_s") for r in runs[name]]
            row[name] = {
                "event_step_s": med(steps),
                "event_steps": steps,
                "ratio_vs_bare": round(med(steps) / bare_step, 4),
                "e2e_s": round(med(r["total_s"] for r in runs[name]), 4),
                "latent_frames": runs[name][0]["latents"],
                "hook_ms": med(r["timings"].get("hook_ms") or 0 for r in runs[name]),
                "save_s": med(r["timings"].get("save_s") or 0 for r in runs[name]),
            }
        after = client.health()["compile"]
        for key, name in (("compile_graphs", "graphs"), ("cuda_graphs", "cuda_graphs")):
            row[key] = {"after_warm_up": warm.get(name), "after_measure": after.get(name)}
        if bare_c is not None:
            compiled_step = med(e for _, e in runs["bare_c"])
            row["bare_compiled"].update(
                event_step_s=round(compiled_step, 5), event_steps=[e for _, e in runs["bare_c"]]
            )
            row["raw"]["ratio_vs_bare_compiled"] = round(row["raw"]["event_step_s"] / compiled_step, 4)
        raw = runs["raw"]
        row["raw"].update(
            ratio_vs_none=round(row["raw"]["event_step_s"] / row["none"]["event_step_s"], 4),
            call_step_s=_per_step(
                row["raw"]["e2e_s"], med(r["total_s"] for r in runs["engine_short"]), self.steps_long, self.steps_short
            ),
            ttfb_ms=round(med(r["ttfb"] for r in raw) * 1000, 2),
            first_progress_s=round(med(r["first_progress"] for r in raw), 4),
            first_latent_s=round(med(r["first_latent"] for r in raw), 4),
            overhead_ms_per_request=round((row["raw"]["e2e_s"] - row["bare"]["call_long_s"]) * 1000, 1),
        )
        row["raw"]["call_ratio"] = round(row["raw"]["call_step_s"] / row["bare"]["call_step_s"], 4)
        health = client.health()
        row["vram_allocated_gb"] = _gb(health["vram"], "allocated")
        row["vram_peak_gb"] = _gb(health["vram"], "peak_allocated")
        self.save()

    def _request(self, client, body) -> dict:
        t0 = time.monotonic()
        out = {"ttfb": None, "first_progress": None, "first_latent": None, "latents": 0}
        with client.http.stream("POST", "/generate", json=body) as response:
            from extensions_built_in.inference_engine.protocol import FrameDecoder

            if response.status_code != 200:
                raise RuntimeError(f"HTTP {response.status_code}: {response.read()[:500]!r}")
            decoder = FrameDecoder()
            for chunk in response.iter_raw():
                now = time.monotonic() - t0
                out["ttfb"] = out["ttfb"] if out["ttfb"] is not None else now
                for frame in decoder.feed(chunk):
                    if frame.type == "progress" and out["first_progress"] is None:
                        out["first_progress"] = now
                    elif frame.type == "latent":
                        out["latents"] += 1
                        out["first_latent"] = out["first_latent"] if out["first_latent"] is not None else now
                    elif frame.type == "result":
                        out["timings"] = frame.header["timings"]
                    elif frame.type == "error":
                        out["error"] = frame.header
        out["total_s"] = time.monotonic() - t0
        if "error" in out:
            raise RuntimeError(f"request failed: {out['error']}")
        return out

    def _cancel(self, client, arch) -> dict:
        """Cancel at step 3 of 40 with the model resident: time to the error frame, VRAM after vs before."""
        from extensions_built_in.inference_engine.protocol import FrameDecoder

        warm = self._request(client, self.body(arch, self.steps_short))
        step_s = (self.results["families"][arch].get("raw") or {}).get("event_step_s") or warm["timings"].get("step_s")
        before = client.health()["vram"]
        cancel_at = error_at = code = None
        with client.http.stream("POST", "/generate", json=self.body(arch, 40)) as response:
            decoder = FrameDecoder()
            for chunk in response.iter_raw():
                for frame in decoder.feed(chunk):
                    if frame.type == "progress" and frame.header["step"] == 3 and cancel_at is None:
                        cancel_at = time.monotonic()
                        client.cancel(frame.request_id)
                        acked_at = time.monotonic()  # the flag is set before the answer is sent
                    if frame.type == "error":
                        error_at, code = time.monotonic(), frame.header["code"]
        _wait_idle(client)
        after = client.health()["vram"]
        latency = error_at - cancel_at
        out = {
            "code": code,
            "latency_s": round(latency, 4),
            "step_s": step_s,
            "cancel_rtt_s": round(acked_at - cancel_at, 4),
            "after_ack_s": round(error_at - acked_at, 4),
            "within_one_step": step_s is not None and latency <= step_s * 1.05 + 0.05,
            "vram_before_gb": _gb(before, "allocated"),
            "vram_after_gb": _gb(after, "allocated"),
        }
        if before and after:
            out["vram_delta_pct"] = round(
                100 * (after["allocated"] - before["allocated"]) / max(before["allocated"], 1), 3
            )
        return out

    def _oom(self, client, arch) -> dict:
        """The realistic way to run out on a 141 GB card: a neighbour (this process) leaves the engine only
        what a normal request of this family needs plus a margin, then the user asks for a huge size."""
        import torch

        self._request(client, self.body(arch, self.steps_short))
        vram = client.health()["vram"]
        need = vram["peak_allocated"] - vram["allocated"]
        headroom = max(2 * GB, int(1.5 * need) + GB)
        free, _ = torch.cuda.mem_get_info()
        hog = torch.empty(max(0, free - headroom), dtype=torch.uint8, device="cuda")
        try:
            before = client.health()["vram"]
            body = self.body(arch, 1)
            body["sample"].update(HUGE[arch])
            t0 = time.monotonic()
            out = client.generate_wait(body)
            oom_s = time.monotonic() - t0
            _wait_idle(client)
            after = client.health()["vram"]
            ok_after = client.generate_wait(self.body(arch, self.steps_short))["http_status"] == 200  # hog still there
        finally:
            del hog
            _free()
        return {
            "size": "x".join(str(HUGE[arch][k]) for k in ("width", "height")),
            "code": out.get("error", {}).get("code"),
            "http_status": out.get("http_status"),
            "seconds": round(oom_s, 2),
            "message": (out.get("error") or {}).get("message", "")[:200],
            "headroom_gb": round(headroom / GB, 2),
            "next_request_ok": ok_after,
            "vram_before_gb": _gb(before, "allocated"),
            "vram_after_gb": _gb(after, "allocated"),
        }

    def pool(self, client):
        """Issue 4's swap bench on the same engine (keep_in_ram_gb set at start)."""
        p = {}
        if "sdxl" in self.families:
            a = self.body("sdxl", self.steps_long)
            self._request(client, a)  # resident A
            runs = [self._request(client, self.body("sdxl", self.steps_long, seed=s)) for s in (2, 3, 4)]
            bare = self.results["families"].get("sdxl", {}).get("bare", {})
            t = statistics.median(r["total_s"] for r in runs)
            p["pool_hit_request_s"] = round(t, 4)
            p["pool_hit_save_s"] = statistics.median(r["timings"].get("save_s") or 0 for r in runs)
            if bare:
                p["pool_hit_overhead_ms"] = round((t - bare["call_long_s"]) * 1000, 1)
                p["pool_hit_overhead_without_save_ms"] = round(
                    p["pool_hit_overhead_ms"] - p["pool_hit_save_s"] * 1000, 1
                )
            p["sdxl_unet_load_s"] = self._time_unet_load()
            p["swap_profile_s"] = self._profile_swap()
            b = self.body(
                "sdxl", self.steps_short, folder=str(self.models / "sdxl_b"), extras=str(self.models / "sdxl")
            )
            before = client.health()["counters"]
            rb = self._request(client, b)
            after = client.health()
            p["swap_a_to_b"] = {
                "load_s": rb["timings"].get("load_s"),
                "hits": after["counters"]["hits"] - before["hits"],
                "misses": after["counters"]["misses"] - before["misses"],
                "unet_alone_load_s": p["sdxl_unet_load_s"],
                "vram_allocated_gb": _gb(after["vram"], "allocated"),
                "resident": [e["key"] for e in after["pool"]],
            }
            p["swap_a_to_b"]["ratio"] = round(p["swap_a_to_b"]["load_s"] / p["sdxl_unet_load_s"], 3)
            for name in ("lora_a", "lora_b"):
                lora = str(self.models / name / "pytorch_lora_weights.safetensors")
                r = self._request(client, self.body("sdxl", self.steps_short, lora_path=lora))
                p[f"switch_to_{name}_load_s"] = r["timings"].get("load_s")
        if "flux" in self.families and "sdxl" in self.families:
            self._request(client, self.body("flux", self.steps_short))
            self._request(client, self.body("sdxl", self.steps_short))  # Flux transformer parks in pinned RAM
            health = client.health()
            p["parked"] = [e["key"] for e in health["pool"] if e.get("tier") == "ram"]
            p["vram_allocated_after_flux_to_sdxl_gb"] = _gb(health["vram"], "allocated")
            before = health["counters"]
            r = self._request(client, self.body("flux", self.steps_short))
            after = client.health()["counters"]
            p["ram_tier_return"] = {
                "load_s": r["timings"].get("load_s"),
                "ram_hits": after["ram_hits"] - before["ram_hits"],
                "misses": after["misses"] - before["misses"],
                "transformer_return_s": next(
                    (e["return_s"] for e in client.health()["pool"] if "FluxTransformer" in e["key"]), None
                ),
            }
        self.results["pool"] = p

    def queue(self, client):
        """Four requests submitted at once: with results saved on their own thread, the wall time should be
        short of the sum of the engine's per-request load + sample + save by about the saving of three."""
        for arch in self.families:
            self._request(client, self.body(arch, self.steps_short))  # resident; the switch's parking done:
            _wait_idle(client)  # a model's first park pins its host copy (~1 s/GB), which is not the queue's time
            wall, runs = send_at_once(
                [
                    lambda i=i, arch=arch: self._request(client, self.body(arch, self.steps_long, seed=10 + i))
                    for i in range(4)
                ]
            )
            self.results["families"].setdefault(arch, {})["queue"] = queue_row(wall, [r["timings"] for r in runs])
            self.save()

    def _time_unet_load(self) -> float:
        """What a swap to the fine-tune must at least cost: loading its UNet, nothing else."""
        from toolkit.models.components.loading import load_component

        for f in (self.models / "sdxl_b" / "unet").iterdir():  # from the page cache, as the swap will read it
            f.read_bytes()
        t0 = time.monotonic()
        unet = load_component(
            "diffusers.UNet2DConditionModel", str(self.models / "sdxl_b"), "unet", dtype=self.dtype, device=self.device
        )
        _sync()
        elapsed = time.monotonic() - t0
        del unet
        _free()
        return round(elapsed, 3)

    def _profile_swap(self) -> float:
        """The A->B swap's holder build in this process under cProfile (top functions to swap_profile.txt):
        where the time beyond loading B's UNet goes."""
        import cProfile
        import io
        import pstats

        from toolkit.config_modules import ModelConfig
        from toolkit.models.components.pool import ComponentPool, active_pool
        from toolkit.models.registry import get_model_class

        cls, pool = get_model_class("sdxl"), ComponentPool()

        def config(folder):
            return ModelConfig(
                name_or_path=str(folder), arch="sdxl", dtype=self.dtype, extras_name_or_path=str(self.models / "sdxl")
            )

        with active_pool(pool):
            cls(self.device, config(self.models / "sdxl")).load_model()
            pool.begin_request()
            profile = cProfile.Profile()
            t0 = time.monotonic()
            profile.enable()
            cls(self.device, config(self.models / "sdxl_b")).load_model()
            _sync()
            profile.disable()
            elapsed = time.monotonic() - t0
        text = io.StringIO()
        pstats.Stats(profile, stream=text).sort_stats("cumulative").print_stats(45)
        (self.out / "swap_profile.txt").write_text(f"swap A->B holder build: {elapsed:.3f} s\n" + text.getvalue())
        pool.unload(None)
        _free()
        return round(elapsed, 3)

    def run(self):
        import torch

        self.device = "cuda" if torch.cuda.is_available() and not self.args.tiny else "cpu"
        self.dtype = "float32" if self.args.tiny else "bf16"
        self.families = [f for f in self.args.families.split(",") if f]
        self.stages = set(self.args.stages.split(","))
        self.stage("meta", self.meta)
        self.stage("build", self.build)
        folder = Path(self.args.work) / "engine"
        with engine_process(
            folder,
            self.device,
            log=folder / "engine.log",
            keep_in_ram_gb=self.args.keep_in_ram_gb,
            lora_roots=[str(self.models)],
            model_roots=[str(self.models)],  # the checkpoints it builds: request paths load only from there
            compile=self.args.compile,
            attention=self.args.attention,
        ) as client:
            for arch in self.families:
                self.stage(arch, self.family, client, arch)
            if "queue" in self.stages:
                self.stage("queue", self.queue, client)
            if "pool" in self.stages:
                self.stage("pool", self.pool, client)
        log = Path(self.args.work) / "engine" / "engine.log"
        if log.exists():
            (self.out / "engine.log").write_text(log.read_text()[-200_000:])
        (self.out / "gpu_suite.md").write_text(render_markdown(self.results))
        print((self.out / "gpu_suite.md").read_text())


def _per_step(long_s: float, short_s: float, n_long: int, n_short: int) -> float:
    return round((long_s - short_s) / (n_long - n_short), 5)


def _folder_gb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1024**3


def _gb(vram, key):
    return round(vram[key] / 1024**3, 3) if vram else None


def _wait_idle(client, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        q = client.queue()
        if q["running"] is None and not q["pending"]:
            return
        time.sleep(0.05)


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_work")
    parser.add_argument("--families", default="sdxl,flux,zimage,wan21")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep-in-ram-gb", type=float, default=64.0)
    parser.add_argument("--stages", default="measure,cancel,oom,queue,pool")
    parser.add_argument("--compile", default="off", help="the engine's engine.compile: off | auto | max")
    parser.add_argument("--attention", default="auto", choices=ATTENTION_MODES, help="engine.attention (bare too)")
    Suite(parse_bench_args(parser, argv)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
