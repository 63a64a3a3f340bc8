"""family_sweep.py's results: each run's figures, the medians over engines and repeats, the JSON it saves after every
run and the Markdown table (docs/bench/sweep_table.md reads the same medians)."""

from __future__ import annotations

import json
from pathlib import Path

from testing.bench.quality_8bit import summary as quality_summary

BUDGET_MODES = {
    "neighbour": "a neighbour process holds the rest of the card (the engine has no budget setting)",
    "fraction": "engine.vram_budget_gb, the allocator's share of the card",
}


def engine_figures(run: dict) -> dict:
    """What one engine measured, kept per engine when ``--engines`` starts several for a budget."""
    cold, warm, new_prompt = run.get("cold") or {}, run.get("warm") or {}, run.get("new_prompt") or {}
    timings = warm.get("timings") or {}
    repeats = run.get("repeats") or {}
    return {
        "plan": (run.get("plan") or {}).get("summary"),
        "ok": not (run.get("exception") or cold.get("error") or warm.get("error") or repeats.get("error")),
        "step_s": _median_of(timings.get("step_s"), repeats.get("warm"), "step_s"),
        "save_s": timings.get("save_s"),
        "warm_s": _median_of(warm.get("total_s"), repeats.get("warm"), "total_s"),
        "new_prompt_s": _median_of(new_prompt.get("total_s"), repeats.get("new_prompt"), "total_s"),
        "cold_s": cold.get("total_s"),
        "requests": 1 + len(repeats.get("warm") or []),
    }


def _median_of(first, more: list | None, key: str):
    """``first`` and the repeats' ``key`` (``--repeats``), their median; ``first`` alone without repeats."""
    import statistics

    values = [v for v in [first, *(r[key] for r in more or [])] if v is not None]
    return statistics.median(values) if values else None


def engines_median(run: dict, key: str):
    """The median over the budget's engines that finished (the first engine's figure when it ran alone), and
    their range."""
    import statistics

    values = [e[key] for e in run.get("engines") or [] if e["ok"] and e.get(key) is not None]
    if not values:
        return engine_figures(run)[key], None
    return statistics.median(values), (min(values), max(values)) if len(values) > 1 else None


def summary_row(run: dict) -> dict:
    cold, warm = run.get("cold") or {}, run.get("warm") or {}
    step, step_range = engines_median(run, "step_s")
    return {
        "plan": (run.get("plan") or {}).get("summary"),
        "error": cold.get("error") or warm.get("error"),
        "exception": run.get("exception"),
        "step_s": step,
        "step_range": step_range,
        "engines": len(run.get("engines") or []) or 1,
        "stream_ms": (warm.get("timings") or {}).get("stream_ms"),  # CPU per step moving streamed blocks
        "warm_s": engines_median(run, "warm_s")[0],
        "new_prompt_s": engines_median(run, "new_prompt_s")[0],
        "cold_s": engines_median(run, "cold_s")[0],
        "output": warm.get("output"),
    }


def save(result: dict, out: Path) -> None:
    (out / "family_sweep.json").write_text(json.dumps(result, indent=2, default=str))
    (out / "family_sweep.md").write_text(render_markdown(result))


def render_markdown(result: dict) -> str:
    lines = [
        "| arch | budget | plan | s/step | × full (full: × bare) | warm e2e s | × full | new prompt e2e s | × full "
        "| cold s | peak GiB | output |",
        "|---|---|---|---|---|---|---|---|---|---|---|---|",
    ]
    for arch, family in result["families"].items():
        full = summary_row(family["runs"].get("0", {}))
        bare_step = (family.get("bare") or {}).get("step_s")
        if "exception" in family.get("build", {}):
            lines.append(f"| {arch} | | build failed: {family['build']['exception'][:120]} | | | | | | | | | |")
        for budget, run in family["runs"].items():
            row = summary_row(run)
            peak = ((run.get("vram") or {}).get("peak_allocated") or 0) / 2**30
            if row["error"] or row["exception"]:
                problem = (
                    (row["error"] or {}).get("code", "")
                    + ": "
                    + str((row["error"] or {}).get("message") or row["exception"])[:160]
                )
                lines.append(f"| {arch} | {_label(budget)} | {problem} | | | | | | | | | |")
                continue
            lines.append(
                "| {} | {} | {} | {} | {} | {} | {} | {} | {} | {} | {:.1f} | {} |".format(
                    arch,
                    _label(budget),
                    row["plan"] or "all on the GPU",
                    _fmt(row["step_s"]) + _spread(row),
                    _ratio(row["step_s"], bare_step if budget == "0" else full["step_s"])
                    + (" bare" if budget == "0" and bare_step else ""),
                    _fmt(row["warm_s"]),
                    _ratio(row["warm_s"], full["warm_s"]),
                    _fmt(row["new_prompt_s"]),
                    _ratio(row["new_prompt_s"], full["new_prompt_s"]),
                    _fmt(row["cold_s"]),
                    peak,
                    "ok" if (row["output"] or {}).get("ok") else f"CHECK {row['output']}",
                )
            )
    mode = result["meta"].get("budget_mode", "fraction")
    lines.append(f"\nBudgets: {BUDGET_MODES.get(mode, mode)}.")
    for arch, family in result["families"].items():
        if quality := family.get("quality"):
            steps = quality.get("steps")
            lines.append(f"- {arch}, 8-bit denoiser against bf16 ({steps} steps): {quality_summary(quality)}")
    note = "\n\nTINY smoke run (CPU, one layer per stack): not a measurement.\n" if result["meta"]["tiny"] else "\n"
    return "\n".join(lines) + note


def _label(entry: str) -> str:
    budget, _, qtype = entry.partition(":")
    return "full" if budget == "0" else f"{budget} GiB" + (f", {qtype}" if qtype else "")


def _spread(row: dict) -> str:
    low_high = row["step_range"]
    return f" ({_fmt(low_high[0])}–{_fmt(low_high[1])}, {row['engines']} engines)" if low_high else ""


def _fmt(x) -> str:
    return "" if x is None else f"{x:.3f}" if x < 10 else f"{x:.1f}"


def _ratio(a, b) -> str:
    return f"{a / b:.2f}×" if a and b else ""
