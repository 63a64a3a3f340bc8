"""What compiling buys and costs beyond the suite's step times (issue #14), in one run on the GPU machine.

    python testing/bench/compile_bench.py --out RESULTS_DIR --wheels .whl_engine [--families flux,zimage,wan21,sdxl]
                                          [--stages attention,regional,tuning,restart,fast,engine_fast,peer_line]
                                          [--variants auto,fused_qkv,cdt,max_autotune,max_autotune_tma,whole,...]
                                          [--fast-steps 28] [--speed fp8] [--fast-variants cache_dit]
    python testing/bench/compile_bench.py --out /tmp/smoke --tiny      # the same run on CPU with small models

* ``attention``: bare diffusers, per family, the step time with each SDPA kernel *alone* enabled (flash,
  cuDNN, memory-efficient, and FlashAttention 4 in the flash kernel's place; a kernel that cannot take the
  family's attention shows as unsupported rather than silently falling through), eager and under the engine's
  ``auto`` compile (dynamo reset between kernels). The fastest compiled kernel is what ``engine.attention: auto``
  should put first (toolkit/models/attention.py).
* ``tuning``: bare diffusers, the first family, lossless ways past the engine's ``auto`` compile, each from
  eager (dynamo reset between them; ``tuning`` below says what each sets): ``fused_qkv`` (one GEMM for q, k and v),
  ``cdt`` (inductor's coordinate-descent tuning, as diffusers' flux-fast recipe), ``max_autotune`` and
  ``max_autotune_tma`` (GEMM autotuning, the second with Triton's persistent TMA matmul), ``whole`` and
  ``whole_graphs`` (the transformer as one graph, then with CUDA graphs), their combinations, ``plain`` (``auto``
  without toolkit/models/epilogues.py's GEMM epilogues), ``gelu_all`` (the GELU epilogue in any family's tanh
  GELU), ``max`` (the engine's own: Flux whole with its modulation table planned per request), ``max_per_step``
  (the table filled at every call) and ``blocks`` (``auto`` without the table, as before 2026-12-06). Step
  time, first-call (compile) time, and PSNR/SSIM of the variant's ``--steps`` image against eager's.
* ``restart``: the engine as users run it (``python run.py``, a fresh ``engine.compile_cache_dir``): per family, a
  first request at the native size (load + compile), a second (graphs added: zero), then the engine started again
  on the same cache folder and its first request timed again. Compile time is dynamo's own timer (``/health``
  ``compile.seconds``), after a restart as a ratio to the first start's (≤ 0.25). ``--speed``: the requests' tier.
* ``engine_fast``: the same tiers through the engine (``sample.speed``), end to end at the client with latents
  streamed every step, quality against the engine's own lossless image.
* ``peer_line``: the engine and the peers resident at once, their requests alternating (testing/bench/peer_line.py).
* ``fast``: Flux.1-dev, ``--fast-steps`` steps at 1024², bare diffusers, end to end (prompt encoding, sampling
  and decoding; compiled; warm), also with the PNG written by the engine's writer (``e2e_with_file_s``) and by
  Pillow's defaults, as the peers' docs save (``image.save``: ``e2e_docs_file_s``):
  bf16 (the lossless reference), and of ``--fast-variants``: float8 weights and activations (torchao, per-row),
  diffusers' MagCache with its Flux.1 ratios, both, and cache-dit's default cache (a peer, as its README
  recommends: ``cache_dit.enable_cache(pipe)``). Quality against the lossless image of the same seed: PSNR and
  SSIM (torchmetrics). Random-init weights: the speed is what a real Flux gets (MagCache's skips follow its
  calibrated ratios, not the weights), the quality numbers are not.

Results: RESULTS_DIR/compile_bench.json, written after every measurement, so a cut run keeps what it measured.
"""

from __future__ import annotations

import contextlib
import json
import statistics
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

from testing.bench.bare_pipeline import BarePipeline, free  # noqa: E402
from testing.bench.engine_process import engine_process  # noqa: E402
from testing.bench.gpu_machine import bench_parser, image_quality, parse_bench_args  # noqa: E402
from testing.bench.gpu_suite import SETTINGS, TINY_SETTINGS  # noqa: E402
from testing.bench.peer_line import bare_call, flux_gen, plan_row, request_row, run_peer_line  # noqa: E402
from testing.engine_harness import wait_for  # noqa: E402
from toolkit.models.attention import FA4_IMPL, KERNELS, flash_impl, sdpa_cache_key  # noqa: E402
from toolkit.models.compile import _compile_blocks, first_line  # noqa: E402
from toolkit.models.epilogues import bind_epilogues, use_gelu_epilogues  # noqa: E402


class CompileBench:
    def __init__(self, args):
        import torch

        self.args = args
        self.out = Path(args.out)
        self.out.mkdir(parents=True, exist_ok=True)
        self.models = Path(args.models)
        self.tiny = args.tiny
        self.device = "cuda" if torch.cuda.is_available() and not args.tiny else "cpu"
        self.dtype = "float32" if args.tiny else "bf16"
        self.settings = TINY_SETTINGS if args.tiny else SETTINGS
        # "auto" is off on a CPU: the smoke run forces "max" (the same regional compile for the DiTs)
        self.mode = args.compile or ("max" if self.device == "cpu" else "auto")
        self.results: dict = {"meta": _meta(args), "build": {}, "attention": {}, "restart": {}, "fast": {}}
        self.results["errors"] = []

    def save(self) -> None:
        (self.out / "compile_bench.json").write_text(json.dumps(self.results, indent=2, default=str))

    def guarded(self, name, fn, *a):
        t0 = time.monotonic()
        print(f"== {name}", flush=True)
        try:
            fn(*a)
        except Exception as e:  # one broken measurement must not lose the others
            import traceback

            traceback.print_exc()
            self.results["errors"].append(f"{name}: {type(e).__name__}: {e}")
        print(f"   {name}: {time.monotonic() - t0:.1f}s", flush=True)
        self.save()

    def build(self, arch) -> str:
        import torch

        from testing.bench.real_size import BUILDERS

        folder = self.models / arch
        if not (folder / ".done").exists():
            t0 = time.monotonic()
            BUILDERS[arch](str(folder), self.device, torch.float32 if self.tiny else torch.bfloat16, small=self.tiny)
            (folder / ".done").write_text("ok")
            self.results["build"][arch] = round(time.monotonic() - t0, 1)
            free()
        return str(folder)

    def bare(self, arch) -> BarePipeline:
        return BarePipeline(arch, self.build(arch), self.device, self.dtype, self.settings[arch], self.out)

    # ------------------------------------------------------------------ attention
    def attention(self, arch):
        import torch

        bare = self.bare(arch)
        row = self.results["attention"].setdefault(arch, {})
        for compiled in (False, True):
            for kernel in KERNELS:
                key = f"{kernel}_compiled" if compiled else kernel
                torch._dynamo.reset()
                _uncompile(bare)
                try:
                    _denoiser_only(bare, kernel)
                    if compiled:
                        bare.compile(self.mode)
                    with flash_impl(FA4_IMPL if kernel == "fa4" else None):
                        row[key] = self._timed_steps(bare)
                except Exception as e:
                    row[key] = {"unsupported": first_line(e)}
                self.save()
        del bare
        torch._dynamo.reset()
        free()

    def _timed_steps(self, bare) -> dict:
        """A 2-step warm-up call (the compile, timed as ``first_s``), then ``--repeats`` calls' median step."""
        t0 = time.monotonic()
        bare.call(2)
        first = time.monotonic() - t0
        steps = [bare.call(self.args.steps)[1] for _ in range(self.args.repeats)]
        return {"step_s": round(statistics.median(steps), 5), "steps": steps, "first_s": round(first, 2)}

    # ------------------------------------------------------------------ regional
    def regional(self, arch):
        """diffusers' ``compile_repeated_blocks`` (each block's call compiled) against the engine's compile of each
        block's ``forward`` (toolkit/models/compile.py: what lets a cache hook sit above the compiled code)."""
        import torch

        bare = self.bare(arch)
        row = self.results.setdefault("regional", {}).setdefault(arch, {})
        for how in ("call", "forward", "call", "forward"):
            torch._dynamo.reset()
            _uncompile(bare)
            if how == "call":
                bare.model.pipeline.transformer.compile_repeated_blocks(fullgraph=True)
            else:
                bare.compile(self.mode)
            bare.call(2)
            steps = [bare.call(self.args.steps)[1] for _ in range(self.args.repeats)]
            row.setdefault(how, []).extend(steps)
            self.save()
        del bare
        free()

    # ------------------------------------------------------------------ tuning
    def tuning(self, arch):
        import torch._inductor.config

        bare = self.bare(arch)
        row = self.results.setdefault("tuning", {}).setdefault(arch, {})
        transformer = bare.model.pipeline.transformer
        eager = self._image(bare)  # each variant's PSNR against it shows what it costs in quality, if anything
        for i, variant in enumerate([v for v in self.args.variants.split(",") if v]):
            torch._dynamo.reset()
            _uncompile(bare)
            key = variant if variant not in row else f"{variant}_{i}"  # a variant named twice: both runs kept
            try:
                with torch._inductor.config.patch(_inductor_settings(variant)):
                    if "fused_qkv" in variant:
                        transformer.fuse_qkv_projections()
                    if variant.startswith("max_autotune"):
                        _compile_blocks(transformer, mode="max-autotune-no-cudagraphs")
                    elif variant.startswith("whole_graphs"):  # _fused_qkv, _cdt: the lossless gains together
                        if variant.endswith("epilogues"):
                            bind_epilogues(transformer)
                        transformer.compile(fullgraph=True, mode="reduce-overhead")
                    elif variant.startswith("whole"):
                        transformer.compile(fullgraph=True)
                    elif variant in ("max", "max_per_step"):  # the engine's `max`: Flux whole, CUDA graphs
                        bare.compile("max")
                        bare.plans = variant == "max"  # per step: the modulation table filled at every call
                    elif variant == "plain":  # `auto` before toolkit/models/epilogues.py (and the table)
                        _compile_blocks(transformer, epilogues=False)
                    elif variant == "blocks":  # `auto` before the modulation table: each block projects its own
                        _compile_blocks(transformer)
                    elif variant == "gelu_all":  # the GELU epilogue in every family's tanh GELU feed-forwards
                        use_gelu_epilogues(list(transformer.modules()), classes=None)
                        bare.compile(self.mode)
                    else:
                        bare.compile(self.mode)
                    row[key] = self._timed_steps(bare)
                    row[key].update(image_quality(eager, self._image(bare)))
            except Exception as e:
                row[key] = {"failed": first_line(e)}
            finally:
                transformer.unfuse_qkv_projections()
                bare.plans = True
            self.save()
        del bare, transformer
        torch._dynamo.reset()
        free()

    # ------------------------------------------------------------------ restart
    def restart(self):
        cache = Path(self.args.work) / "compile_cache"
        for start in ("first_start", "after_restart"):
            folder = Path(self.args.work) / f"engine_{start}"
            with engine_process(
                folder,
                self.device,
                log=folder / "engine.log",
                compile=self.mode,
                compile_cache_dir=str(cache),
                model_roots=[str(self.models)],  # the checkpoints it builds: request paths load only from there
            ) as client:
                # The start-up warm-up (imports, CUDA context: ~10 s on the H200) is not the first request's: a
                # request sent the moment engine.json appears waits behind it, and the 2026-12-01 rows counted it.
                wait_for(lambda: client.health()["warm_up_s"] is not None, 300, "the engine's warm-up")
                self.results["restart"].setdefault("engine_warm_up_s", {})[start] = client.health()["warm_up_s"]
                for arch in self.families:
                    self.guarded(f"restart {arch} {start}", self._first_and_second, client, arch, start)
            (self.out / f"engine_{start}.log").write_text((folder / "engine.log").read_text()[-100_000:])
        for arch in self.families:
            row = self.results["restart"].get(self._restart_row(arch), {})
            first, again = (row.get(k, {}).get("compile_s") for k in ("first_start", "after_restart"))
            if first and again is not None:
                row["after_restart_over_first"] = round(again / first, 3)
        self.save()

    def _restart_row(self, arch: str) -> str:
        return f"{arch}:{self.args.speed}" if self.args.speed else arch

    def _first_and_second(self, client, arch, start):
        folder = self.build(arch)
        body = {
            "model": {"arch": arch, "name_or_path": folder, "dtype": self.dtype},
            "sample": {"prompt": "a red fox in the snow", "num_inference_steps": 4, "seed": 1, **self.settings[arch]},
            "stream": {"latents": "none"},
        }
        if self.args.speed:  # a fast tier's denoiser (fp8: torchao float8, whose first compile took ~6 min)
            body["sample"]["speed"] = self.args.speed
        graphs = [client.health()["compile"]["graphs"]]
        spent = [client.health()["compile"]["seconds"]]
        phases = [client.health()["compile"].get("phases") or {}]
        runs = []
        for _ in range(2):
            t0 = time.monotonic()
            answer = client.generate_wait(body)
            if answer["http_status"] != 200:
                raise RuntimeError(f"{arch}: {answer}")
            runs.append({"total_s": round(time.monotonic() - t0, 3), "timings": answer.get("timings") or {}})
            graphs.append(client.health()["compile"]["graphs"])
            spent.append(client.health()["compile"]["seconds"])
            phases.append(client.health()["compile"].get("phases") or {})
        load_s = runs[0]["timings"].get("load_s") or 0.0
        self.results["restart"].setdefault(self._restart_row(arch), {})[start] = {
            "first_request_s": runs[0]["total_s"],
            "first_request_timings": runs[0]["timings"],  # the engine's own split: where a long first step went
            "second_request_s": runs[1]["total_s"],
            "load_s": load_s,
            "warm_up_s": round(max(0.0, runs[0]["total_s"] - runs[1]["total_s"] - load_s), 3),
            "compile_s": round(spent[1] - spent[0], 3),  # dynamo's own timer (/health compile.seconds)
            "compile_phases_s": {k: round(v - phases[0].get(k, 0.0), 3) for k, v in phases[1].items()},
            "compile_s_second_request": round(spent[2] - spent[1], 3),
            "graphs": graphs,
            "graphs_added_by_second_request": graphs[2] - graphs[1],
        }

    # ------------------------------------------------------------------ fast tier
    def fast(self):
        """bf16 first (the reference image), the caches on it; then a float8 copy in its place."""
        import torch

        wanted = self.args.fast_variants.split(",")
        bare = self.bare("flux")
        bare.compile(self.mode)
        self.results["fast"]["lossless"], self.lossless = self._timed_image(bare)
        for name in [name for name in ("magcache", "cache_dit") if name in wanted]:
            self._variant(bare, name, name)
        del bare
        torch._dynamo.reset()
        free()
        if not {"fp8", "fp8_magcache"} & set(wanted):  # float8's first compile alone took ~200 s on the H200
            return
        bare = self.bare("flux")
        _float8(bare)
        bare.compile(self.mode)
        for name in [name for name in ("fp8", "fp8_magcache") if name in wanted]:
            self._variant(bare, name, "magcache" if name == "fp8_magcache" else None)

    def _variant(self, bare, name, cache):
        row = self.results["fast"]
        try:
            with _cache(bare, cache, self.args.fast_steps, self.mode):
                row[name], image = self._timed_image(bare)
            row[name].update(image_quality(self.lossless, image))
            row[name]["speedup"] = round(row["lossless"]["e2e_s"] / row[name]["e2e_s"], 3)
        except Exception as e:
            row[name] = {"failed": first_line(e)}
        self.save()

    def engine_fast(self):
        """The engine's ``sample.speed`` tiers on Flux (``python run.py``, ``engine.compile`` from ``--compile``),
        client-side end to end with latents streamed every step; quality against the engine's own lossless image."""
        import numpy as np
        from PIL import Image

        folder = Path(self.args.work) / "engine_fast"
        row = self.results.setdefault("engine_fast", {})
        options = {"freeze_heap": self.args.freeze_heap == "on", "model_roots": [str(self.models)]}  # its checkpoints
        with engine_process(folder, self.device, log=folder / "engine.log", compile=self.mode, **options) as client:
            for speed in self.args.speeds.split(","):
                try:
                    runs = [self._engine_image(client, speed) for _ in range(1 + self.args.repeats)]
                    image = np.asarray(Image.open(runs[-1]["path"]), dtype=np.float32) / 255
                    row[speed] = {
                        "first_s": runs[0]["s"],
                        "e2e_s": round(statistics.median(r["s"] for r in runs[1:]), 3),
                        "e2e_runs": [r["s"] for r in runs[1:]],
                        "requests": [request_row(r) for r in runs[1:]],  # a creep across requests shows here
                        "step_s": runs[-1]["timings"].get("step_s"),
                        "timings": runs[-1]["timings"],  # where the rest of end to end went: encode, decode, save
                        "memory_plan": runs[-1].get("plan"),
                    }
                    if speed == "lossless":
                        self.lossless_engine = image
                    else:
                        row[speed].update(image_quality(self.lossless_engine, image))
                        row[speed]["speedup"] = round(row["lossless"]["e2e_s"] / row[speed]["e2e_s"], 3)
                except Exception as e:
                    row[speed] = {"failed": first_line(e)}
                self.save()
        (self.out / "engine_fast.log").write_text((folder / "engine.log").read_text()[-100_000:])

    def _engine_image(self, client, speed) -> dict:
        body = {
            "model": {"arch": "flux", "name_or_path": self.build("flux"), "dtype": self.dtype},
            "sample": {"prompt": "a red fox in the snow", "num_inference_steps": self.args.fast_steps, "seed": 1}
            | self.settings["flux"]
            | {"speed": speed},
            "stream": {"latents": "raw", "every_n_steps": 1},
        }
        t0 = time.monotonic()
        out = {"plan": None}
        for frame in client.generate(body):
            if frame.type == "result":
                out.update(path=frame.header["path"], timings=frame.header["timings"])
            elif frame.type == "error":
                raise RuntimeError(frame.header.get("message"))
            elif frame.type == "status" and frame.header.get("memory"):
                out["plan"] = plan_row(frame.header["memory"])
        out["s"] = round(time.monotonic() - t0, 3)
        return out

    def _image(self, bare):
        """The tuning stage's image: ``--steps`` steps, seed 1, as the timed calls draw it."""
        import numpy as np

        return np.asarray(bare.call(self.args.steps, image=True)[2], dtype=np.float32)

    def _timed_image(self, bare):
        """End to end at ``--fast-steps`` (a warm-up call first: its compile is not the tier's speed)."""
        import numpy as np

        gen = flux_gen(self)
        bare.model.prepare_gen_config(gen)
        bare_call(bare, gen, Path(self.args.work))
        runs = [bare_call(bare, gen, Path(self.args.work)) for _ in range(self.args.repeats)]
        image = np.asarray(runs[-1]["image"], dtype=np.float32)
        keys = ("e2e_s", "e2e_with_file_s", "e2e_docs_file_s")
        return {k: statistics.median(r[k] for r in runs) for k in keys} | {
            "e2e_runs": [r["e2e_s"] for r in runs]
        }, image

    def peer_line(self):
        run_peer_line(self, _cache)

    # ------------------------------------------------------------------ driver
    def run(self):
        self.families = [f for f in self.args.families.split(",") if f]
        for stage in self.args.stages.split(","):  # in the order given: the likeliest to be cut goes last
            if stage == "attention":
                for arch in self.families:
                    self.guarded(f"attention {arch}", self.attention, arch)
            elif stage in ("regional", "tuning"):
                self.guarded(stage, getattr(self, stage), self.families[0])
            elif stage in ("restart", "fast", "engine_fast", "peer_line"):
                self.guarded(stage, getattr(self, stage))
        print(json.dumps({k: v for k, v in self.results.items() if k != "meta"}, indent=1, default=str)[:20000])


def _meta(args) -> dict:
    import diffusers
    import torch

    return {
        "date": time.strftime("%Y-%m-%d %H:%M:%S"),
        "gpu": torch.cuda.get_device_name(0) if torch.cuda.is_available() else "cpu",
        "torch": torch.__version__,
        "diffusers": diffusers.__version__,
        "cudnn": torch.backends.cudnn.version(),
        "sdpa_priority": [int(b) for b in torch._C._get_sdp_priority_order()],
        "steps": args.steps,
        "repeats": args.repeats,
    }


@contextlib.contextmanager
def _only_kernel(name):
    """SDPA's ``name`` kernel alone; ``fa4`` is the flash kernel, which the caller swaps FlashAttention 4 into
    once around its measurement (``flash_impl``: a swap costs ~3 ms, too much for every forward). Compiled
    graphs are cached per kernel: before, every kernel's compiled run reused the first one's graphs."""
    from torch.nn.attention import SDPBackend, sdpa_kernel

    kernel = {"cudnn": SDPBackend.CUDNN_ATTENTION, "efficient": SDPBackend.EFFICIENT_ATTENTION}
    with sdpa_kernel([kernel.get(name, SDPBackend.FLASH_ATTENTION)]), sdpa_cache_key():  # flash and fa4
        yield


def _denoiser_only(bare, kernel) -> None:
    """``kernel`` alone for the denoiser's attention, the rest of the pipeline as usual (text encoders' masked
    attention and the VAE's 512-wide heads take no fused kernel: the whole call under one kernel failed)."""
    transformer = bare.model.pipeline.transformer
    forward = type(transformer).forward.__get__(transformer)

    def only(*args, **kwargs):
        with _only_kernel(kernel):
            return forward(*args, **kwargs)

    transformer.forward = only


def _inductor_settings(variant: str) -> dict:
    """Inductor's settings for a tuning variant, on only while it compiles: ``cdt`` is coordinate-descent tuning
    (diffusers' flux-fast settings); ``_tma`` lets max-autotune also try Triton's persistent matmul with Hopper's
    TMA loads against cuBLAS (the GEMMs are 83 of Flux's 130 ms a step, at 72 % of the H200's peak)."""
    settings = {}
    if "cdt" in variant:
        settings.update(coordinate_descent_tuning=True, coordinate_descent_check_all_directions=True)
    if variant.endswith("_tma"):
        settings["triton.enable_persistent_tma_matmul"] = True
    return settings


def _uncompile(bare) -> None:
    """The denoiser as loaded: each compiled block's wrapper dropped, so the next compile starts from eager."""
    for module in bare.model.pipeline.components.values():
        if hasattr(module, "modules"):
            for sub in module.modules():
                sub._compiled_call_impl = None
                sub.__dict__.pop("forward", None)  # a block's compiled forward (toolkit/models/compile.py)
            module._aitk_compiled = None


def _float8(bare) -> None:
    """Float8 weights and activations, per-row scales: the engine's ``float8dq``
    (toolkit/models/components/loading.py)."""
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow, quantize_

    quantize_(bare.model.pipeline.transformer, Float8DynamicActivationFloat8WeightConfig(granularity=PerRow()))


class _cache:
    """A cache around the calls: diffusers' MagCache with its Flux.1 ratios, or cache-dit's default (its README:
    ``cache_dit.enable_cache(pipe)``, then compile), removed afterwards."""

    def __init__(self, bare, kind, steps, mode):
        self.bare, self.kind, self.steps, self.mode = bare, kind, steps, mode

    def __enter__(self):
        pipe = self.bare.model.pipeline
        if self.kind == "magcache":
            from diffusers.hooks import MagCacheConfig
            from diffusers.hooks.mag_cache import FLUX_MAG_RATIOS

            pipe.transformer.enable_cache(MagCacheConfig(mag_ratios=FLUX_MAG_RATIOS, num_inference_steps=self.steps))
        elif self.kind == "cache_dit":
            import cache_dit
            import torch

            torch._dynamo.reset()
            _uncompile(self.bare)
            cache_dit.enable_cache(pipe)
            self.bare.compile(self.mode)

    def __exit__(self, *exc):
        pipe = self.bare.model.pipeline
        if self.kind == "magcache":
            pipe.transformer.disable_cache()
        elif self.kind == "cache_dit":
            import cache_dit

            cache_dit.disable_cache(pipe)


def main(argv=None) -> int:
    parser = bench_parser(__doc__, work="/tmp/aitk_compile_work")
    parser.add_argument("--families", default="flux,zimage,wan21,sdxl")
    parser.add_argument("--stages", default="attention,restart,fast")
    parser.add_argument("--steps", type=int, default=12)
    parser.add_argument("--repeats", type=int, default=2)
    parser.add_argument("--fast-steps", type=int, default=28)
    parser.add_argument("--speed", help="restart stage: the requests' sample.speed (fp8: a float8 denoiser)")
    parser.add_argument("--speeds", default="lossless,cache,fp8,fast", help="engine_fast stage, lossless first")
    parser.add_argument("--fast-variants", default="magcache,cache_dit,fp8,fp8_magcache", help="fast stage's")
    parser.add_argument("--compile", choices=("auto", "max"), help="engine.compile (default auto; max on --tiny)")
    parser.add_argument("--variants", default="auto,fused_qkv,cdt,fused_qkv_cdt,max_autotune", help="tuning stage")
    parser.add_argument("--freeze-heap", choices=("on", "off"), default="on", help="engine_fast: engine.freeze_heap")
    CompileBench(parse_bench_args(parser, argv)).run()
    return 0


if __name__ == "__main__":
    sys.exit(main())
