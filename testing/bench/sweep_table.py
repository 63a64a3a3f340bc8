"""One row per family from every real-size sweep kept in ``docs/bench`` (issue #13's table): the full card, a
24 GiB budget and a 16 GiB budget, each from the latest run that finished, eager (the compiled runs have their
own tables in docs/BENCHMARKS.md), the 16 GiB plan predicted where it was not measured.

    .venv/bin/python testing/bench/sweep_table.py --out docs/bench/sweep_table.md

The sweeps are ``testing/bench/family_sweep.py``'s JSON files, plus the first sweep's summary lines (its JSON
did not come back from the GPU machine). Each cell names the run it comes from, so every figure leads to its
raw data and its command (docs/BENCHMARKS.md, by the run's folder).
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))

BENCH = ROOT / "docs" / "bench"
GIB = 1024**3
SUMMARY_LINE = re.compile(r"^(\w+) (\d+(?:\.\d+)?) (\{.*\})$")
# The targets under a budget, against the full card: s/step for image families and Wan 2.2 14B; a second
# request's end to end for every family.
STEP_TARGET = {"image": 1.3, "wan22_14b": 1.6, "wan22_14b_i2v": 1.6}
E2E_TARGET = 1.5
# LTX-2's mp4 on a GPU machine without PyAV carried (2026-12-03): the request ran to its save
# (testing/bench/family_sweep.py now refuses such a family before building it).
NO_PYAV = "No module named 'av'"
NO_PYAV_NOTE = "the GPU machine had no PyAV to write its mp4 (not carried)"


def runs(bench: Path = BENCH) -> list:
    """Every finished or failed run as a flat dict, oldest first."""
    found = []
    for path in sorted(bench.glob("family_sweep_*/*.json")):
        data = json.loads(path.read_text())
        meta = data.get("meta", {})
        if meta.get("compile") not in (None, "off") or meta.get("tiny"):
            continue
        for arch, family in data["families"].items():
            for key, run in family.get("runs", {}).items():
                found.append(_from_json(arch, key, run, family.get("bare"), meta.get("date", ""), path, bench))
            if not family.get("runs") and family.get("bare"):  # the bare pipeline alone (--budgets '' --bare)
                found.append(_from_json(arch, "bare", {}, family["bare"], meta.get("date", ""), path, bench))
    for path in sorted(bench.glob("family_sweep_*/*.txt")):
        date = path.parent.name.removeprefix("family_sweep_")
        for line in path.read_text().splitlines():
            match = SUMMARY_LINE.match(line)
            if match:
                arch, budget, summary = match.group(1), float(match.group(2)), json.loads(match.group(3))
                found.append(_from_summary(arch, budget, summary, date, path, bench))
    return sorted(found, key=lambda r: r["date"])


def _from_json(arch, key, run, bare, date, path, bench) -> dict:
    from testing.bench.family_sweep_report import engines_median

    warm, cold = run.get("warm") or {}, run.get("cold") or {}
    step_s, step_range = engines_median(run, "step_s")  # several engines per budget (--engines): their median
    output = warm.get("output") or cold.get("output") or {}
    error = (warm.get("error") or cold.get("error") or {}).get("message") or run.get("error") or run.get("exception")
    peaks = (cold.get("timings") or {}).get("peak_gib") or {}
    budget = key.split(":")[0]
    return {
        "arch": arch,
        "budget": "full" if budget == "0" else budget,
        "qtype": key.split(":")[1] if ":" in key else run.get("memory_qtype"),
        "ok": bool(output.get("ok")) and not error,
        "error": error,
        "plan": (run.get("plan") or {}).get("summary"),
        "step_s": step_s,
        "step_range": step_range,
        "first_step_s": (cold.get("timings") or {}).get("step_s") if (cold.get("output") or {}).get("ok") else None,
        "engines": len(run.get("engines") or []) or 1,
        # A warm request that encodes its prompt: runs since the prompt cache also time one with a new prompt,
        # where "warm" repeats the first one's (and skips encoding); older runs' "warm" encoded it again.
        "warm_s": engines_median(run, "new_prompt_s" if run.get("new_prompt") else "warm_s")[0],
        "cold_s": engines_median(run, "cold_s")[0],
        "peak_gib": max(peaks.values()) if peaks else None,
        "bare_s": (bare or {}).get("step_s"),
        "sample": run.get("sample") or {},
        "output": output,
        "date": date,
        "source": str(path.relative_to(bench)),
    }


def _from_summary(arch, budget, summary, date, path, bench) -> dict:
    return {
        "arch": arch,
        "budget": "full" if budget == 0 else f"{budget:g}",
        "qtype": None,
        "ok": bool((summary.get("output") or {}).get("ok")) and not summary.get("error"),
        "error": summary.get("error"),
        "plan": summary.get("plan"),
        "step_s": summary.get("step_s"),
        "step_range": None,
        "engines": 1,
        "warm_s": summary.get("warm_s"),
        "cold_s": summary.get("cold_s"),
        "peak_gib": None,
        "bare_s": None,
        "sample": {},
        "output": summary.get("output") or {},
        "date": date,
        "source": str(path.relative_to(bench)),
    }


def latest(rows: list, arch: str, budget: str) -> dict | None:
    """The newest finished run of ``arch`` at ``budget``, else the newest failed one (what stopped it)."""
    mine = [r for r in rows if r["arch"] == arch and r["budget"] == budget]
    finished = [r for r in mine if r["ok"]]
    return (finished or mine or [None])[-1]


def _failed_since(rows: list, shown: dict) -> str:
    """A newer run at the same budget that failed (a later plan), so a finished older run does not hide it."""
    mine = [r for r in rows if r["arch"] == shown["arch"] and r["budget"] == shown["budget"]]
    newest = mine[-1]
    if newest is shown or newest["ok"] or NO_PYAV in (newest["error"] or ""):
        return ""
    plan = f"{newest['plan']}: " if newest["plan"] else ""
    return f"; **a newer run did not finish** ({newest['source']}): {plan}{(newest['error'] or '')[:160]}…"


def full_card(rows: list, arch: str) -> dict | None:
    """The full card's newest finished run that timed the bare pipeline beside it, else its newest run: a ratio
    to bare from one run, since the launch-bound families' step swings up to 2x between two engine processes
    (SDXL's 0.063 and 0.113 s/step on 2026-12-03, same plan, same quiet GPU)."""
    paired = [r for r in rows if r["arch"] == arch and r["budget"] == "full" and r["ok"] and r["bare_s"]]
    return paired[-1] if paired else latest(rows, arch, "full")


def native(row: dict) -> str:
    """The size asked for (an animated WebP stores a frame equal to the one before as a longer frame, so its
    frame count can be lower than the frames generated: HunyuanVideo's 129 read back as 128 at 129 x 41 ms)."""
    sample, out = row["sample"], row["output"]
    if out.get("kind") == "audio":
        return f"{out.get('duration_s'):g} s audio"
    if sample.get("width"):
        frames = f"×{sample['num_frames']}" if sample.get("num_frames") else ""
        return f"{sample['width']}×{sample['height']}{frames}"
    return f"{out['width']}×{out['height']}" if out.get("width") else "native"


def _spread(row: dict) -> str:
    """A median over several engines says so, with its range."""
    low_high = row["step_range"]
    return f" [median of {row['engines']} engines, {low_high[0]:.4g}–{low_high[1]:.4g}]" if low_high else ""


def _ratio(value, reference) -> float | None:
    return round(value / reference, 2) if value and reference else None


def _mark(ratio, target) -> str:
    if ratio is None or target is None:
        return ""
    return " ✅" if ratio <= target else " ❌"


def family_row(rows: list, arch: str, predicted16: str) -> dict:
    from toolkit.models.registry import get_model_class

    b24, b16 = (latest(rows, arch, b) for b in ("24", "16"))
    full = full_card(rows, arch)
    step_target = STEP_TARGET.get(arch, STEP_TARGET.get(get_model_class(arch).modality))
    bare_row = next((r for r in reversed(rows) if r["arch"] == arch and r["bare_s"]), None)
    if full and full["bare_s"]:
        bare_row = full
    bare = bare_row and bare_row["bare_s"]
    cells = {"arch": arch, "native": native(full or b24 or b16 or {"output": {}, "sample": {}})}
    if full and full["ok"]:
        by_bare = f" ({_ratio(full['step_s'], bare):.2f}× bare" if bare else " (bare: not measured"
        by_bare += f" {bare:.4g}, {bare_row['source']})" if bare and bare_row["source"] != full["source"] else ")"
        peak = f", peak {full['peak_gib']:.1f} GiB" if full["peak_gib"] else ""
        times = f"{full['warm_s']:.3g} s warm, {full['cold_s']:.3g} s cold{peak}"
        cells["full"] = f"{full['step_s']:.4g}{_spread(full)}{by_bare}; {times}"
    else:
        cells["full"] = f"**not finished**: {full['error']}" if full else "not run"
    cells["full_source"] = full["source"] if full else ""
    for name, run in (("24", b24), ("16", b16)):
        if run is None:
            cells[name] = f"predicted: {predicted16}" if name == "16" else "not run"
            continue
        if not run["ok"] and NO_PYAV in (run["error"] or ""):  # the benchmark's own fault, not the plan's
            cells[name] = f"{run['plan']}: sampled and decoded, not saved: {NO_PYAV_NOTE} ({run['source']})"
            continue
        if not run["ok"]:
            cells[name] = f"**did not finish** ({run['source']}): {run['error'] or 'no output'}"
            if run.get("first_step_s") and full:  # the cold request saved its output; a later one failed
                first = run["first_step_s"]
                cells[name] += (
                    f"; its first request finished: {first:.4g} s/step ({_ratio(first, full['step_s']):.2f}×)"
                )
            continue
        reference = latest([r for r in rows if r["source"] == run["source"]], arch, "full") or full
        reference = reference if reference and reference["ok"] else None
        step = _ratio(run["step_s"], reference and reference["step_s"])
        e2e = _ratio(run["warm_s"], reference and reference["warm_s"])
        # The full card's own plan under a budget runs the same code: a ratio then measures the shared machine
        # between two runs (launch-bound SDXL, SD 1.5 and the audio models swing 2x), not the plan.
        same = reference is not None and run["plan"] == reference["plan"]
        targets = (step_target, E2E_TARGET) if name == "24" and not same else (None, None)
        ratios = (
            f"{run['step_s']:.4g} s/step{_spread(run)} ({step:.2f}×{_mark(step, targets[0])}), "
            f"{run['warm_s']:.3g} s warm ({e2e:.2f}×{_mark(e2e, targets[1])})"
            if step and e2e
            else f"{run['step_s']:.4g} s/step, {run['warm_s']:.3g} s warm"
        )
        plan = "the full card's plan" if same else run["plan"]
        cells[name] = f"{plan}: {ratios}{_other_full(reference, full)} ({run['source']})" + _failed_since(rows, run)
    return cells


def _other_full(reference: dict | None, full: dict | None) -> str:
    """The ratios' full card when it is not the one in the row's first cell (a budget is compared with the full
    card of its own run: ACE-Step's 0.79 s against 0.80 s on 12-05, not the 0.49 s of 11-30 in the first cell)."""
    if not reference or not full or reference["source"] == full["source"]:
        return ""
    return f" against its run's full card: {reference['step_s']:.4g} s/step, {reference['warm_s']:.3g} s warm"


def table(bench: Path = BENCH) -> str:
    from testing.bench.plan_table import predicted
    from toolkit.models.registry import ARCHS

    rows = runs(bench)
    lines = [
        "| arch | native | full card: s/step (× bare), warm, cold, peak | 24 GiB: plan: s/step (× full), warm (× full) "
        "| 16 GiB |",
        "|---|---|---|---|---|",
    ]
    for arch in ARCHS:
        guess = predicted(arch, 16, 64)
        guess_text = f"{guess['summary']} (peak {guess['peak_gib']} GiB)" if guess["fits"] else guess["summary"]
        cells = family_row(rows, arch, guess_text)
        full = cells["full"] + (f" ({cells['full_source']})" if cells["full_source"] else "")
        lines.append(f"| {arch} | {cells['native']} | {full} | {cells['24']} | {cells['16']} |")
    return "\n".join(lines) + "\n"


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    text = table()
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
