"""The engine at full model size on a GPU, measured against bare diffusers in the same run.

    python testing/bench/gpu_suite.py --out RESULTS_DIR [--wheels .whl_engine] [--families sdxl,flux,zimage,wan21]
    python testing/bench/gpu_suite.py --out /tmp/smoke --tiny          # the same run on CPU with small models

One command, meant to finish inside 10 minutes on an H200. It builds random-init components at real size from
the real configs (testing/bench/real_size.py; nothing is downloaded), saves them as diffusers folders, starts
the engine as users do (``python run.py``, its own process), and drives it over HTTP with the project's client:

* per family: step time with latents streamed every step vs the bare pipeline (same checkpoint, same process
  kind of call), time to first byte / first progress / first latent with the model resident, end-to-end;
* cancel latency (cancel -> error frame) and allocated VRAM after the cancel vs before;
* an out-of-memory provoked on purpose (a huge resolution) -> ``oom`` error frame, the next request works, and
  VRAM is back to its baseline;
* the pool (issue 4): cold load, pool-hit overhead, a swap sharing text encoders + VAE vs loading just the UNet,
  the RAM-tier return of the Flux transformer, a LoRA switch, VRAM after each swap.

Results: RESULTS_DIR/gpu_suite.json (written after every stage, so a cut run keeps what it measured) and
RESULTS_DIR/gpu_suite.md (the tables for docs/BENCHMARKS.md).
"""
from __future__ import annotations

import argparse
import glob
import json
import os
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from toolkit.step_clock import StepClock  # noqa: E402

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


class Suite:
    def __init__(self, args):
        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.models = Path(args.models)
        self.results: dict = {"meta": {}, "build": {}, "bare": {}, "engine": {}, "cancel": {}, "oom": {}, "pool": {},
                              "errors": []}
        self.settings = TINY_SETTINGS if args.tiny else SETTINGS
        self.steps_long, self.steps_short = (args.steps, 2)

    # ------------------------------------------------------------------ bookkeeping
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

    def body(self, arch, steps, seed=1, folder=None, extras=None, **extra_model):
        folder = folder or str(self.models / arch)
        model = {"arch": arch, "name_or_path": folder, "extras_name_or_path": extras or folder, "dtype": self.dtype,
                 **extra_model}
        return {"model": model, "sample": {"prompt": "a red fox in the snow", "num_inference_steps": steps,
                                           "seed": seed, **self.settings[arch]},
                "stream": {"latents": "raw", "every_n_steps": 1}}

    # ------------------------------------------------------------------ stages
    def meta(self):
        import diffusers
        import torch
        import transformers

        gpu = torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu"
        self.results["meta"] = {"date": time.strftime("%Y-%m-%d %H:%M:%S"), "gpu": gpu, "torch": torch.__version__,
                                "diffusers": diffusers.__version__, "transformers": transformers.__version__,
                                "python": sys.version.split()[0], "tiny": self.args.tiny, "steps": self.steps_long}

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
        if "sdxl" in self.families:
            b = self.models / "sdxl_b"
            if not (b / ".done").exists():
                BUILDERS["sdxl"](str(b), device, dtype, small=self.args.tiny, seed=1)
                (b / ".done").write_text("ok")
            for name, seed in (("lora_a", 1), ("lora_b", 2)):
                if not (self.models / name).exists():
                    make_sdxl_lora(str(self.models / "sdxl" / "unet"), str(self.models / name), seed, device, dtype)

    def bare(self):
        """The same checkpoints through the bare diffusers pipeline in this process, no hook, no server."""
        import torch

        from toolkit.config_modules import GenerateImageConfig, ModelConfig
        from toolkit.models.registry import get_model_class

        for arch in self.families:
            cls = get_model_class(arch)
            model = cls(self.device, ModelConfig(name_or_path=str(self.models / arch), arch=arch, dtype=self.dtype))
            t0 = time.monotonic()
            model.load_model()
            _sync()
            load_s = time.monotonic() - t0

            clocks = []

            def call(steps):
                gen = GenerateImageConfig(prompt="a red fox in the snow", num_inference_steps=steps, seed=1,
                                          output_folder=str(self.out), **self.settings[arch])
                model.prepare_gen_config(gen)
                g = torch.Generator("cpu").manual_seed(1)
                clock = StepClock(self.device)
                clocks.append(clock)

                def on_step(pipe, i, t, kwargs):  # the same clock the engine's hook uses, no sync
                    clock.mark()
                    return {}

                _sync()
                t = time.monotonic()
                with torch.inference_mode():
                    model.pipeline(**model.pipeline_kwargs(gen), generator=g, output_type="np",
                                   callback_on_step_end=on_step)
                _sync()
                return time.monotonic() - t

            call(self.steps_short)  # warm-up (kernels, allocator)
            long = statistics.median(call(self.steps_long) for _ in range(self.args.repeats))
            short = statistics.median(call(self.steps_short) for _ in range(self.args.repeats))
            event_steps = [c.median() for c in clocks if len(c.marks) == self.steps_long]
            self.results["bare"][arch] = {"load_s": round(load_s, 3), "call_long_s": round(long, 4),
                                          "event_step_s": statistics.median(event_steps) if event_steps else None,
                                          "call_short_s": round(short, 4),
                                          "step_s": round((long - short) / (self.steps_long - self.steps_short), 5)}
            if arch == "sdxl":
                self.results["bare"]["sdxl_unet_load_s"] = self._time_unet_load()
            model = None  # drop the pipeline before the next family loads
            _free()
            self.save()

    def _time_unet_load(self) -> float:
        """What a swap to the fine-tune must at least cost: loading its UNet, nothing else."""
        from toolkit.models.v2.mixin import load_component

        t0 = time.monotonic()
        unet = load_component("diffusers.UNet2DConditionModel", str(self.models / "sdxl_b"), "unet", dtype=self.dtype,
                              device=self.device)
        _sync()
        elapsed = time.monotonic() - t0
        del unet
        _free()
        return round(elapsed, 3)

    def engine_families(self, client):
        for arch in self.families:
            row = {}
            cold = self._request(client, self.body(arch, self.steps_short))
            row["cold_total_s"], row["cold_load_s"] = cold["total_s"], cold["timings"].get("load_s")
            longs = [self._request(client, self.body(arch, self.steps_long)) for _ in range(self.args.repeats)]
            shorts = [self._request(client, self.body(arch, self.steps_short)) for _ in range(self.args.repeats)]
            long_s = statistics.median(r["total_s"] for r in longs)
            short_s = statistics.median(r["total_s"] for r in shorts)
            row.update(
                e2e_long_s=round(long_s, 4), e2e_short_s=round(short_s, 4),
                step_s=round((long_s - short_s) / (self.steps_long - self.steps_short), 5),
                ttfb_ms=round(statistics.median(r["ttfb"] for r in longs) * 1000, 2),
                first_progress_s=round(statistics.median(r["first_progress"] for r in longs), 4),
                first_latent_s=round(statistics.median(r["first_latent"] for r in longs), 4),
                latent_frames=longs[0]["latents"], vram_allocated_gb=_gb(client.health()["vram"], "allocated"),
                event_step_s=statistics.median(r["timings"].get("step_s") or 0 for r in longs))
            bare = self.results["bare"].get(arch, {})
            if bare:
                row["ratio_step"] = round(row["step_s"] / bare["step_s"], 4) if bare["step_s"] > 0 else None
                if bare.get("event_step_s") and row["event_step_s"]:
                    row["ratio_event_step"] = round(row["event_step_s"] / bare["event_step_s"], 4)
                row["overhead_ms_per_request"] = round((long_s - bare["call_long_s"]) * 1000, 1)
            self.results["engine"][arch] = row
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

    def cancel(self, client):
        arch = "flux" if "flux" in self.families else self.families[0]
        self._request(client, self.body(arch, self.steps_short))  # resident
        before = client.health()["vram"]
        step_s = self.results["engine"].get(arch, {}).get("step_s")
        from extensions_built_in.inference_engine.protocol import FrameDecoder

        cancel_at = error_at = None
        with client.http.stream("POST", "/generate", json=self.body(arch, 40)) as response:
            decoder = FrameDecoder()
            for chunk in response.iter_raw():
                for frame in decoder.feed(chunk):
                    if frame.type == "progress" and frame.header["step"] == 5 and cancel_at is None:
                        cancel_at = time.monotonic()
                        client.cancel(frame.request_id)
                    if frame.type == "error":
                        error_at = time.monotonic()
                        code = frame.header["code"]
        _wait_idle(client)
        after = client.health()["vram"]
        latency = error_at - cancel_at
        self.results["cancel"] = {"arch": arch, "code": code, "latency_s": round(latency, 4), "step_s": step_s,
                                  "within_one_step": step_s is not None and latency <= step_s * 1.05 + 0.05,
                                  "vram_before_gb": _gb(before, "allocated"), "vram_after_gb": _gb(after, "allocated")}
        if before and after:
            self.results["cancel"]["vram_delta_pct"] = round(
                100 * (after["allocated"] - before["allocated"]) / max(before["allocated"], 1), 3)

    def oom(self, client):
        """A 4096² request on a GPU that a neighbour (this process) has filled up to 16 GB of headroom: the
        realistic way to run out on a 141 GB card, where 4096² alone still fits."""
        import torch

        arch = "sdxl" if "sdxl" in self.families else self.families[0]
        self._request(client, self.body(arch, self.steps_short))
        free, _ = torch.cuda.mem_get_info()
        hog = torch.empty(max(0, free - 16 * 1024**3), dtype=torch.uint8, device="cuda")
        before = client.health()["vram"]
        body = self.body(arch, 2)
        body["sample"].update(width=4096, height=4096)
        out = client.generate_wait(body)
        code = out.get("error", {}).get("code")
        _wait_idle(client)
        after = client.health()["vram"]
        ok_after = client.generate_wait(self.body(arch, self.steps_short))["http_status"] == 200  # hog still there
        del hog
        _free()
        self.results["oom"] = {"arch": arch, "size": 4096, "code": code, "http_status": out.get("http_status"),
                               "message": (out.get("error") or {}).get("message", "")[:200],
                               "next_request_ok": ok_after, "vram_before_gb": _gb(before, "allocated"),
                               "vram_after_gb": _gb(after, "allocated")}

    def pool(self, client):
        """Issue 4's swap bench on the same engine (keep_in_ram_gb set at start)."""
        p = {}
        if "sdxl" in self.families:
            a = self.body("sdxl", self.steps_long)
            self._request(client, a)  # resident A
            t = [self._request(client, self.body("sdxl", self.steps_long, seed=s))["total_s"] for s in (2, 3, 4)]
            bare = self.results["bare"].get("sdxl", {})
            p["pool_hit_request_s"] = round(statistics.median(t), 4)
            if bare:
                p["pool_hit_overhead_ms"] = round((statistics.median(t) - bare["call_long_s"]) * 1000, 1)
            b = self.body("sdxl", self.steps_short, folder=str(self.models / "sdxl_b"), extras=str(self.models / "sdxl"))
            before = client.health()["counters"]
            rb = self._request(client, b)
            after = client.health()
            p["swap_a_to_b"] = {"load_s": rb["timings"].get("load_s"), "hits": after["counters"]["hits"] - before["hits"],
                                "misses": after["counters"]["misses"] - before["misses"],
                                "unet_alone_load_s": self.results["bare"].get("sdxl_unet_load_s"),
                                "vram_allocated_gb": _gb(after["vram"], "allocated"),
                                "resident": [e["key"] for e in after["pool"]]}
            if p["swap_a_to_b"]["unet_alone_load_s"]:
                p["swap_a_to_b"]["ratio"] = round(p["swap_a_to_b"]["load_s"] / p["swap_a_to_b"]["unet_alone_load_s"], 3)
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
            p["ram_tier_return"] = {"load_s": r["timings"].get("load_s"), "ram_hits": after["ram_hits"] - before["ram_hits"],
                                    "misses": after["misses"] - before["misses"],
                                    "transformer_return_s": next((e["return_s"] for e in client.health()["pool"]
                                                                  if "FluxTransformer" in e["key"]), None)}
        self.results["pool"] = p

    # ------------------------------------------------------------------ driver
    def run(self):
        import torch

        self.device = "cuda" if torch.cuda.is_available() and not self.args.tiny else "cpu"
        self.dtype = "float32" if self.args.tiny else "bf16"
        self.families = [f for f in self.args.families.split(",") if f]
        stages = set(self.args.stages.split(","))
        self.stage("meta", self.meta)
        self.stage("build", self.build)
        if "bare" in stages:
            self.stage("bare diffusers", self.bare)
        with engine_process(Path(self.args.work) / "engine", self.device, keep_in_ram_gb=self.args.keep_in_ram_gb,
                            lora_roots=[str(self.models)]) as client:
            for name, fn in (("engine", self.engine_families), ("cancel", self.cancel), ("pool", self.pool),
                             ("oom", self.oom)):
                # On a CPU the OOM stage would sample a 4096² image for real instead of failing fast.
                if name in stages and not (name == "oom" and self.device != "cuda"):
                    self.stage(name, fn, client)
        log = Path(self.args.work) / "engine" / "engine.log"
        if log.exists():
            (self.out / "engine.log").write_text(log.read_text()[-200_000:])
        (self.out / "gpu_suite.md").write_text(render_markdown(self.results))
        print((self.out / "gpu_suite.md").read_text())


def engine_process(folder: Path, device: str, keep_in_ram_gb: float, lora_roots: list):
    import contextlib

    from extensions_built_in.inference_engine.client import EngineClient

    @contextlib.contextmanager
    def cm():
        folder.mkdir(parents=True, exist_ok=True)
        config = folder / "engine_config.json"
        config.write_text(json.dumps({"job": "extension", "config": {"name": "gpu_suite", "process": [{
            "type": "InferenceEngine", "device": device,
            "engine": {"job_folder": str(folder), "keep_in_ram_gb": keep_in_ram_gb, "lora_roots": lora_roots}}]}}))
        log = open(folder / "engine.log", "w")
        proc = subprocess.Popen([sys.executable, "run.py", str(config)], cwd=ROOT, stdout=log, stderr=subprocess.STDOUT,
                                env={**os.environ, "PYTHONUNBUFFERED": "1"})
        try:
            deadline = time.monotonic() + 120
            while not (folder / "engine.json").exists():
                if proc.poll() is not None or time.monotonic() > deadline:
                    raise RuntimeError("the engine did not start: " + (folder / "engine.log").read_text()[-2000:])
                time.sleep(0.1)
            with EngineClient.from_engine_json(str(folder / "engine.json"), timeout=600) as client:
                yield client
        finally:
            proc.terminate()
            try:
                proc.wait(60)
            except subprocess.TimeoutExpired:
                proc.kill()
            log.close()

    return cm()


def render_markdown(r: dict) -> str:
    m = r["meta"]
    lines = [f"### GPU suite — {m.get('date')}, {m.get('gpu')}, torch {m.get('torch')}, diffusers {m.get('diffusers')}, "
             f"transformers {m.get('transformers')}{' (TINY smoke run)' if m.get('tiny') else ''}", "",
             "`python testing/bench/gpu_suite.py --out DIR` (random-init weights at real size; text encoders at real "
             "width, 2 layers). Step time = (t(N) - t(2)) / (N - 2) of whole calls, so fixed costs cancel out.", "",
             "| family | bare s/step | engine s/step (latent every step) | ratio (target ≤ 1.02) | per-step events: bare / "
             "engine / ratio | TTFB ms (≤ 50) | first progress s | first latent s | cold load s | VRAM alloc GB |",
             "|---|---|---|---|---|---|---|---|---|---|"]
    for arch, e in r["engine"].items():
        b = r["bare"].get(arch, {})
        ratio = e.get("ratio_step")
        mark = "" if ratio is None else (" ✅" if ratio <= 1.02 else " ❌")
        ttfb = e.get("ttfb_ms")
        er = e.get("ratio_event_step")
        events = f"{b.get('event_step_s')} / {e.get('event_step_s')} / {er}" + (
            "" if er is None else (" ✅" if er <= 1.02 else " ❌"))
        lines.append(f"| {arch} | {b.get('step_s')} | {e.get('step_s')} | {ratio}{mark} | {events} | {ttfb}"
                     f"{'' if ttfb is None else (' ✅' if ttfb <= 50 else ' ❌')} | {e.get('first_progress_s')} | "
                     f"{e.get('first_latent_s')} | {e.get('cold_load_s')} | {e.get('vram_allocated_gb')} |")
    c, o, p = r.get("cancel", {}), r.get("oom", {}), r.get("pool", {})
    lines += ["", "| check | result | target |", "|---|---|---|",
              f"| cancel latency ({c.get('arch')}) | {c.get('latency_s')} s (step {c.get('step_s')} s), code "
              f"{c.get('code')} | within one step: {'✅' if c.get('within_one_step') else '❌'} |",
              f"| VRAM after cancel vs before | {c.get('vram_before_gb')} → {c.get('vram_after_gb')} GB "
              f"({c.get('vram_delta_pct')} %) | ≤ 1 %: "
              f"{'✅' if c.get('vram_delta_pct') is not None and abs(c['vram_delta_pct']) <= 1 else '❌'} |",
              f"| OOM at {o.get('size')}² ({o.get('arch')}) | code {o.get('code')}, next request ok: "
              f"{o.get('next_request_ok')}, VRAM {o.get('vram_before_gb')} → {o.get('vram_after_gb')} GB | recovered "
              f"without restart: {'✅' if o.get('code') == 'oom' and o.get('next_request_ok') else '❌'} |"]
    if p:
        s = p.get("swap_a_to_b", {})
        rt = p.get("ram_tier_return", {})
        lines += [f"| pool-hit request overhead (sdxl) | {p.get('pool_hit_overhead_ms')} ms over the bare call | < 50 ms: "
                  f"{'✅' if (p.get('pool_hit_overhead_ms') or 1e9) < 50 else '❌'} |",
                  f"| swap A→B sharing TE+VAE | {s.get('load_s')} s ({s.get('hits')} hits, {s.get('misses')} miss) vs "
                  f"UNet alone {s.get('unet_alone_load_s')} s = {s.get('ratio')}× | ≤ 1.1×: "
                  f"{'✅' if (s.get('ratio') or 99) <= 1.1 else '❌'} |",
                  f"| RAM-tier return of the Flux transformer | {rt.get('transformer_return_s')} s (whole holder "
                  f"{rt.get('load_s')} s, ram hits {rt.get('ram_hits')}, misses {rt.get('misses')}) | ≤ 1 s: "
                  f"{'✅' if (rt.get('transformer_return_s') or rt.get('load_s') or 99) <= 1 else '❌'} |",
                  f"| LoRA switch (sdxl, a → b) | {p.get('switch_to_lora_a_load_s')} s, {p.get('switch_to_lora_b_load_s')} s"
                  " | no UNet reload |",
                  f"| VRAM after swaps | A→B {s.get('vram_allocated_gb')} GB; after Flux→SDXL "
                  f"{p.get('vram_allocated_after_flux_to_sdxl_gb')} GB (parked: {len(p.get('parked', []))}) | only B's |"]
    if r.get("errors"):
        lines += ["", "Stage errors: " + "; ".join(r["errors"])]
    return "\n".join(lines) + "\n"


def _folder_gb(folder: Path) -> float:
    return sum(f.stat().st_size for f in folder.rglob("*") if f.is_file()) / 1024**3


def _gb(vram, key):
    return round(vram[key] / 1024**3, 3) if vram else None


def _sync():
    import torch

    if torch.cuda.is_available():
        torch.cuda.synchronize()


def _free():
    import gc

    import torch

    gc.collect()
    if torch.cuda.is_available():
        torch.cuda.empty_cache()


def _wait_idle(client, timeout=60):
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        q = client.queue()
        if q["running"] is None and not q["pending"]:
            return
        time.sleep(0.05)


def install_wheels(folder: str) -> None:
    """The GPU machine has torch and transformers but not diffusers/fastapi/uvicorn: install the carried wheels."""
    site = "/tmp/aitk_site"
    wheels = glob.glob(os.path.join(folder, "*.whl"))
    subprocess.run([sys.executable, "-m", "pip", "install", "-q", "--no-index", "--no-deps", "--no-compile",
                    "--upgrade", "--target", site, *wheels], check=True)
    sys.path.insert(0, site)
    os.environ["PYTHONPATH"] = os.pathsep.join([site, str(ROOT), os.environ.get("PYTHONPATH", "")])


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out", required=True)
    parser.add_argument("--wheels")
    parser.add_argument("--models", default="/tmp/aitk_models")
    parser.add_argument("--work", default="/tmp/aitk_work", help="engine job folder (outputs, log)")
    parser.add_argument("--families", default="sdxl,flux,zimage,wan21")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=3)
    parser.add_argument("--keep-in-ram-gb", type=float, default=64.0)
    parser.add_argument("--stages", default="bare,engine,cancel,pool,oom")
    parser.add_argument("--tiny", action="store_true", help="small models on CPU: a smoke test of this script")
    args = parser.parse_args(argv)
    if args.wheels:
        install_wheels(args.wheels)
    Suite(args).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
