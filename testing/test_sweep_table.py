"""The one table of docs/BENCHMARKS.md "Speed per family" is made from the kept sweeps' JSON
(testing/bench/sweep_table.py): which run each cell takes, and that the table in the docs is the one they make."""

import json
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _sweep(folder, name, date, families, compile_mode=None):
    run_dir = folder / "family_sweep_x"
    run_dir.mkdir(parents=True, exist_ok=True)
    data = {"meta": {"date": date, "compile": compile_mode, "tiny": False}, "families": families}
    (run_dir / name).write_text(json.dumps(data))


def _run(step, warm, plan, ok=True, error=None):
    out = {"ok": ok, "kind": "image", "width": 1024, "height": 1024, "frames": 1}
    timed = {"timings": {"step_s": step}, "total_s": warm, "output": out}
    if error:
        timed = {"error": {"code": "oom", "message": error}}
    return {
        "sample": {"width": 1024, "height": 1024},
        "plan": {"summary": plan},
        "cold": timed | {"total_s": 9.0},
        "warm": timed,
    }


def test_the_sweep_table_takes_each_budgets_latest_finished_eager_run(tmp_path):
    """testing/bench/sweep_table.py: issue #13's one-row-per-family table from the sweeps kept in docs/bench."""
    from testing.bench.sweep_table import family_row, runs, table
    from toolkit.models.registry import ARCHS

    gpu = "transformer, text_encoder, vae on the GPU"
    _sweep(
        tmp_path,
        "a.json",
        "2026-12-01 01:00",
        {
            "flux": {
                "bare": {"step_s": 0.17},
                "runs": {
                    "0": _run(0.17, 2.0, gpu),
                    "24": _run(0.17, 2.6, "transformer visits"),
                    "16": _run(0.2, 2.4, gpu),
                },
            }
        },
    )
    _sweep(
        tmp_path,
        "b.json",
        "2026-12-01 02:00",
        {
            "flux": {
                "runs": {  # newer, but it ran out of memory
                    "24": _run(None, None, "transformer float8", error="Out of memory while sampling")
                }
            }
        },
    )
    _sweep(tmp_path, "c.json", "2026-12-01 03:00", {"flux": {"runs": {"24": _run(0.05, 0.9, "compiled")}}}, "auto")
    _sweep(
        tmp_path,
        "d.json",
        "2026-12-01 04:00",
        {"sd3": {"runs": {"24": _run(None, None, "x", error="Out of memory while loading")}}},
    )
    # The bare pipeline alone, a later run (family_sweep.py --budgets '' --bare): the full card's ratio uses it.
    _sweep(tmp_path, "e.json", "2026-12-01 05:00", {"sd3": {"bare": {"step_s": 0.2}, "runs": {}}})
    _sweep(tmp_path, "f.json", "2026-12-01 06:00", {"sd3": {"runs": {"0": _run(0.19, 2.0, gpu)}}})
    # A newer full card run without the bare pipeline beside it: the full card's cell keeps the run whose ratio
    # to bare is from one run; a budget of this run is compared with this run's full card.
    _sweep(
        tmp_path,
        "g.json",
        "2026-12-01 07:00",
        {"flux": {"runs": {"0": _run(0.3, 3.0, gpu), "16": _run(0.33, 3.3, gpu)}}},
    )
    rows = runs(tmp_path)
    assert [r["source"] for r in rows] == ["family_sweep_x/a.json"] * 3 + ["family_sweep_x/b.json"] * 1 + [
        f"family_sweep_x/{name}.json" for name in "defgg"
    ]  # the compiled run has tables of its own
    flux = family_row(rows, "flux", "guess")
    assert flux["full"].startswith("0.17 (1.00× bare); 2 s warm") and flux["full_source"].endswith("a.json")
    assert flux["24"].startswith("transformer visits: 0.17 s/step (1.00× ✅), 2.6 s warm (1.30× ✅)")
    # A newer run that failed is not hidden behind the older one that finished (HunyuanVideo 1.5 at 24 GiB, 12-03).
    assert flux["24"].endswith(
        "**a newer run did not finish** (family_sweep_x/b.json): transformer float8: Out of memory while sampling…"
    )
    assert flux["16"].startswith("the full card's plan: 0.33 s/step (1.10×)")  # against g's full card; no verdict
    # ... which the cell names, since the row's first cell shows a's
    assert "3.3 s warm (1.10×) against its run's full card: 0.3 s/step, 3 s warm (family_sweep_x/g.json)" in flux["16"]
    assert "against its run's full card" not in flux["24"]  # a's own full card is the first cell's
    sd3 = family_row(rows, "sd3", "guess")
    assert sd3["full"].startswith("0.19 (0.95× bare 0.2, family_sweep_x/e.json); 2 s warm")
    # Several engines per budget (family_sweep.py --engines): the median over the engines that finished, with its
    # range; the one that failed does not count.
    from testing.bench.family_sweep_report import engine_figures

    engines = [_run(0.06, 0.8, gpu), _run(0.11, 1.3, gpu), _run(0.065, 0.9, gpu), _run(None, None, gpu, error="x")]
    first = engines[0] | {"engines": [engine_figures(r) for r in engines]}
    _sweep(tmp_path, "h.json", "2026-12-01 08:00", {"sdxl": {"bare": {"step_s": 0.065}, "runs": {"0": first}}})
    sdxl = family_row(runs(tmp_path), "sdxl", "guess")
    assert sdxl["full"].startswith("0.065 [median of 4 engines, 0.06–0.11] (1.00× bare); 0.9 s warm")
    assert sd3["24"].startswith("**did not finish**") and "loading" in sd3["24"]
    assert sd3["16"] == "predicted: guess"
    no_pyav = _run(None, None, "streams", error="Saving the result failed: ModuleNotFoundError: No module named 'av'")
    _sweep(tmp_path, "i.json", "2026-12-01 09:00", {"sd3": {"runs": {"16": no_pyav}}})  # the harness's fault
    assert family_row(runs(tmp_path), "sd3", "guess")["16"].startswith("streams: sampled and decoded, not saved")
    text = table(tmp_path)
    assert all(f"| {arch} |" in text for arch in ARCHS)


def test_the_one_table_in_the_docs_is_the_one_the_kept_sweeps_make():
    """docs/bench/sweep_table.md and a copy of it in the docs drifted once: the copy still showed FLUX.2-dev's
    16 GiB run as unfinished a session after the file had its finished run. docs/BENCHMARKS.md now quotes the
    figures instead of copying the table, and testing/test_docs_shape.py checks each quoted figure against it."""
    from testing.bench.sweep_table import BENCH, table

    made = table(BENCH)
    assert (BENCH / "sweep_table.md").read_text() == made, (
        "run: .venv/bin/python testing/bench/sweep_table.py --out docs/bench/sweep_table.md"
    )
