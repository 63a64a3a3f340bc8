"""The GPU suite's results as markdown tables (``gpu_suite.md``, pasted into docs/BENCHMARKS.md): one function per
table, each row marked ✅/❌ against its target."""

from __future__ import annotations


def ok(cond) -> str:
    return " ✅" if cond else " ❌"


def render_markdown(r: dict) -> str:
    lines = _header(r["meta"]) + _steps(r["families"]) + _compiled(r["families"]) + _cancel_and_oom(r["families"])
    lines += _queue(r["families"])
    lines += _pool(r.get("pool", {}))
    if r.get("errors"):
        lines += ["", "Stage errors: " + "; ".join(r["errors"])]
    return "\n".join(lines) + "\n"


def _header(m: dict) -> list:
    return [
        f"### GPU suite — {m.get('date')}, {m.get('gpu')}, torch {m.get('torch')}, diffusers {m.get('diffusers')}, "
        f"transformers {m.get('transformers')}, engine.compile {m.get('compile', 'off')}"
        f"{' (TINY smoke run)' if m.get('tiny') else ''}",
        "",
        f"`python testing/bench/gpu_suite.py --out DIR` ({m.get('steps')} steps, {m.get('repeats')} interleaved "
        "repeats; random-init weights at real size, text encoders at real width with 2 layers). Step = median "
        "of CUDA-event step times (same clock in the bare pipeline and in the engine's hook); whole-call = "
        "(t(N) − t(2)) / (N − 2).",
    ]


def _compiled(families: dict) -> list:
    """Only with ``--compile``: the engine against bare diffusers under the same compile (issue #14)."""
    rows = [(arch, f) for arch, f in families.items() if f.get("bare_compiled", {}).get("event_step_s")]
    if not rows:
        return []
    lines = [
        "",
        "| family | bare eager s/step | bare, same compile s/step (first call s) | engine s/step | engine / bare "
        "eager | engine / bare compiled (≤ 1.02) | engine first request s | graphs compiled after the warm-up (0) | "
        "CUDA graphs recorded after the warm-up (0) |",
        "|---|---|---|---|---|---|---|---|---|",
    ]
    for arch, f in rows:
        c, raw = f["bare_compiled"], f["raw"]
        ratio = raw.get("ratio_vs_bare_compiled")
        cells = [
            arch,
            f["bare"]["event_step_s"],
            f"{c['event_step_s']} ({c.get('first_call_s')})",
            raw["event_step_s"],
            raw.get("ratio_vs_bare"),
            f"{ratio}{ok(ratio is not None and ratio <= 1.02)}",
            f.get("cold_total_s"),
            _recompiles(f.get("compile_graphs") or {}),
            _recompiles(f.get("cuda_graphs") or {}),
        ]
        lines.append(_row(cells))
    return lines


def _recompiles(graphs: dict) -> str:
    if graphs.get("after_measure") is None or graphs.get("after_warm_up") is None:
        return ""
    added = graphs["after_measure"] - graphs["after_warm_up"]
    return f"{added}{ok(added == 0)}"


def _steps(families: dict) -> list:
    lines = [
        "",
        "| family | bare s/step | engine s/step, latent every step | ratio (≤ 1.02) | engine, no latents | "
        "latents vs none | whole-call bare / engine / ratio | TTFB ms (≤ 50) | first progress s | first latent s "
        "| e2e s (bare call) | cold load s | VRAM alloc / peak GB |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arch, f in families.items():
        b, raw, none = f.get("bare", {}), f.get("raw", {}), f.get("none", {})
        if not raw:
            continue
        ratio, ttfb = raw.get("ratio_vs_bare"), raw.get("ttfb_ms")
        cells = [
            arch,
            b.get("event_step_s"),
            raw.get("event_step_s"),
            f"{ratio}{ok(ratio is not None and ratio <= 1.02)}",
            none.get("event_step_s"),
            raw.get("ratio_vs_none"),
            f"{b.get('call_step_s')} / {raw.get('call_step_s')} / {raw.get('call_ratio')}",
            f"{ttfb}{ok(ttfb is not None and ttfb <= 50)}",
            raw.get("first_progress_s"),
            raw.get("first_latent_s"),
            f"{raw.get('e2e_s')} ({b.get('call_long_s')})",
            f.get("cold_load_s"),
            f"{f.get('vram_allocated_gb')} / {f.get('vram_peak_gb')}",
        ]
        lines.append(_row(cells))
        if "downsample2" in f:
            d = f["downsample2"]
            ratio = f"{d['ratio_vs_bare']}{ok(d['ratio_vs_bare'] <= 1.02)}"
            lines.append(
                _row([f"{arch}, `downsample: 2`", "", d["event_step_s"], ratio, *[""] * 6, d["e2e_s"], "", ""])
            )
    hooks = [f"{a} {f['raw'].get('hook_ms')} / {f['none'].get('hook_ms')}" for a, f in families.items() if f.get("raw")]
    return lines + ["", "Hook CPU ms per step (latents every step / none): " + ", ".join(hooks)]


def _cancel_and_oom(families: dict) -> list:
    lines = [
        "",
        "| family | cancel → error frame (step; cancel POST round trip, ack → error frame) "
        "| VRAM before → after cancel (≤ 1 %) | OOM probe: size, code, seconds | next request ok "
        "| VRAM before → after OOM |",
        "|---|---|---|---|---|---|",
    ]
    for arch, f in families.items():
        c, o = f.get("cancel", {}), f.get("oom", {})
        if not c and not o:
            continue
        delta = c.get("vram_delta_pct")
        cancel = (
            f"{c.get('latency_s')} s ({c.get('step_s')} s; {c.get('cancel_rtt_s')} s, {c.get('after_ack_s')} s), "
            f"{c.get('code')}{ok(c.get('within_one_step'))}"
        )
        within = delta is not None and abs(delta) <= 1
        vram = f"{c.get('vram_before_gb')} → {c.get('vram_after_gb')} GB ({delta} %){ok(within)}"
        cells = [arch, cancel, vram, "not run", "", ""]
        if o:
            cells[3:] = [
                f"{o.get('size')}, {o.get('code')}, {o.get('seconds')} s (headroom {o.get('headroom_gb')} GB)"
                f"{ok(o.get('code') == 'oom')}",
                f"{o.get('next_request_ok')}{ok(o.get('next_request_ok'))}",
                f"{o.get('vram_before_gb')} → {o.get('vram_after_gb')} GB",
            ]
        lines.append(_row(cells))
    return lines


def _queue(families: dict) -> list:
    queued = {arch: f["queue"] for arch, f in families.items() if f.get("queue")}
    if not queued:
        return []
    return [
        "",
        "| family | 4 requests at once: wall s | Σ load + sample + save s | of which Σ save s | wall / Σ "
        "| main thread between requests s |",
        "|---|---|---|---|---|---|",
    ] + [
        _row([a, q["wall_s"], q["sum_busy_s"], q["sum_save_s"], q["wall_over_sum"], q.get("gaps_s", "")])
        for a, q in queued.items()
    ]


def _pool(p: dict) -> list:
    if not p:
        return []
    s, rt = p.get("swap_a_to_b", {}), p.get("ram_tier_return", {})
    overhead = p.get("pool_hit_overhead_ms")
    return_s = rt.get("transformer_return_s") or rt.get("load_s") or 99
    rows = [
        [
            "pool-hit request overhead (sdxl)",
            f"{overhead} ms over the bare call; saving the PNG, thumbnail and sidecar {p.get('pool_hit_save_s')} s "
            f"of it, the rest {p.get('pool_hit_overhead_without_save_ms')} ms",
            f"< 50 ms:{ok((overhead or 1e9) < 50)}",
        ],
        [
            "swap A→B sharing TE+VAE",
            f"{s.get('load_s')} s ({s.get('hits')} hits, {s.get('misses')} miss) vs UNet alone "
            f"{s.get('unet_alone_load_s')} s = {s.get('ratio')}×",
            f"≤ 1.1×:{ok((s.get('ratio') or 99) <= 1.1)}",
        ],
        [
            "RAM-tier return of the Flux transformer",
            f"{rt.get('transformer_return_s')} s (whole holder {rt.get('load_s')} s, ram hits {rt.get('ram_hits')}, "
            f"misses {rt.get('misses')})",
            f"≤ 1 s:{ok(return_s <= 1)}",
        ],
        [
            "LoRA switch (sdxl, a → b)",
            f"{p.get('switch_to_lora_a_load_s')} s, {p.get('switch_to_lora_b_load_s')} s",
            "no UNet reload",
        ],
        [
            "VRAM after swaps",
            f"A→B {s.get('vram_allocated_gb')} GB; after Flux→SDXL {p.get('vram_allocated_after_flux_to_sdxl_gb')} GB "
            f"(parked: {len(p.get('parked', []))})",
            "only B's",
        ],
    ]
    return ["", "| pool check | result | target |", "|---|---|---|"] + [_row(r) for r in rows]


def _row(cells: list) -> str:
    return "| " + " | ".join(str(c) for c in cells) + " |"
