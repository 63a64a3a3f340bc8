"""The benches' budgets as smaller cards (testing/bench/neighbour.py) and the 8-bit quality step
(testing/bench/quality_8bit.py), on CPU: the neighbour process starts, reports and goes with the bench however the
bench ends; family_sweep gives the engine no budget setting in neighbour mode and the fraction in fraction mode;
the quality step reads images and videos back and compares them. The allocation itself needs a GPU: its sizes are
checked here, the bytes on the GPU run."""

import contextlib
import json
import os
import signal
import subprocess
import sys
import time
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
GIB = 1024**3


def _alive(pid: int) -> bool:
    """Running, not a zombie (an orphan whose new parent has not reaped it yet is gone for the card)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().split(") ")[1][0] != "Z"
    except (FileNotFoundError, IndexError):
        return False


def test_the_neighbour_takes_all_free_memory_but_the_budget_in_pieces():
    from testing.bench.neighbour import CHUNK, chunks

    sizes = chunks(80 * GIB, 24 * GIB)
    assert sum(sizes) == 56 * GIB and max(sizes) <= CHUNK and len(sizes) == 14
    assert sum(chunks(10 * GIB + 5, 3 * GIB)) == 7 * GIB + 5
    assert chunks(20 * GIB, 24 * GIB) == [] and chunks(24 * GIB, 24 * GIB) == []  # a budget the card does not exceed


def test_each_budget_mode_gives_the_engine_its_own_options_and_the_neighbour_lives_only_inside():
    from testing.bench.neighbour import card_budget

    with card_budget(24, "neighbour", "cpu") as (options, record):
        pid = record["neighbour"]["pid"]
        assert options == {} and record["budget_mode"] == "neighbour" and _alive(pid)
        assert record["neighbour"]["held"] == 0 and record["neighbour"]["leave"] == 24 * GIB  # CPU: holds nothing
    assert _gone(pid)
    with card_budget(24, "fraction", "cpu") as (options, record):
        assert options == {"vram_budget_gb": 24} and record == {"budget_mode": "fraction"}
    with card_budget(0, "neighbour", "cpu") as (options, record):  # the whole card: nobody beside the engine
        assert options == {} and "neighbour" not in record
    with pytest.raises(ValueError, match="budget mode"), card_budget(24, "allocator", "cpu"):
        pass


def test_a_bench_that_dies_takes_its_neighbour_with_it():
    """Killed outright (no finally runs), the bench still closes the neighbour's stdin: the neighbour exits and
    the memory it held is the card's again, for the next stage's engine."""
    start = (
        "from testing.bench.neighbour import neighbour\n"
        "hold = neighbour(24, 'cpu')  # kept: a context manager collected mid-run would stop the neighbour\n"
        "held = hold.__enter__()\n"
        "print(held['pid'], flush=True)"
    )
    assert not _outlives_its_bench(start), "the neighbour outlived its bench"


def _outlives_its_bench(start_child: str) -> bool:
    """A bench starts a child (``start_child`` prints its pid) and is killed outright: is the child still there
    after a while? (It is killed then, so a failing test leaves nothing behind.)"""
    script = f"import sys, time\nsys.path.insert(0, {str(ROOT)!r})\n{start_child}\ntime.sleep(120)\n"
    bench = subprocess.Popen([sys.executable, "-c", script], stdout=subprocess.PIPE, text=True)
    try:
        pid = int(bench.stdout.readline())
        assert _alive(pid)
    finally:
        bench.kill()
        bench.wait()
    survived = not _gone(pid)
    if survived:
        os.kill(pid, signal.SIGKILL)
    return survived


def _gone(pid: int, within_s: float = 10) -> bool:
    deadline = time.monotonic() + within_s
    while _alive(pid) and time.monotonic() < deadline:
        time.sleep(0.05)
    return not _alive(pid)


def test_an_engine_goes_with_the_bench_that_started_it():
    """engine_process starts the engine with ``die_with_parent``: a bench killed outright left its engine holding
    the GPU beside the next stage's (the queue's own CPU run, a stage stopped by SIGTERM)."""
    start = (
        "import subprocess\n"
        "from testing.bench.engine_process import die_with_parent\n"
        "child = subprocess.Popen([sys.executable, '-c', 'import time; time.sleep(120)'], preexec_fn=die_with_parent)\n"
        "print(child.pid, flush=True)"
    )
    assert not _outlives_its_bench(start), "the engine outlived its bench"


def test_a_neighbour_that_cannot_hold_says_why_before_any_engine_starts():
    """No CUDA here: the neighbour asked for a GPU fails, and the bench's row gets its error, not a card that
    silently had no neighbour."""
    from testing.bench.neighbour import neighbour

    with pytest.raises(RuntimeError, match="did not start") as failed, neighbour(24, "cuda:0"):
        pass
    assert "Error" in str(failed.value)  # the neighbour's own traceback, cut to its tail


class _FakeClient:
    def __init__(self, calls: list):
        self.calls = calls

    def health(self) -> dict:
        vram = {"total": 80 * GIB, "used": 56 * GIB + GIB // 2, "budget": None}
        return {
            "vram": vram,
            "memory": {
                "plan": {"summary": "all on the GPU"},
                "quality": "fast",
                "h2d_gbps": 24.5,
                "copy_correction": 1.3,
            },
            "prompt_cache": {},
            "compile": {},
            "pool": [],
        }


def _sweep_args(tmp_path, mode: str, **more):
    from testing.bench.family_sweep import build_parser

    argv = ["--out", str(tmp_path / "out"), "--work", str(tmp_path / "w"), "--tiny", "--families", "flux"]
    argv += ["--budget-mode", mode, *more.get("argv", [])]
    return build_parser().parse_args(argv)


def _fake_engine(monkeypatch, started: list):
    """engine_process and the requests replaced: what run_budget starts the engine with, and whether a
    neighbour was alive at that moment."""
    from testing.bench import budget_probe, engine_process, family_sweep

    @contextlib.contextmanager
    def fake_engine(folder, device, **options):
        neighbours = [p for p in _children() if "neighbour.py" in _cmdline(p)]
        started.append({"options": options, "neighbours": neighbours})
        yield _FakeClient(started)

    monkeypatch.setattr(engine_process, "engine_process", fake_engine)
    answer = {"total_s": 1.0, "path": "x"}
    monkeypatch.setattr(budget_probe, "timed_request", lambda client, body, keep_path=False: dict(answer))
    monkeypatch.setattr(family_sweep, "checked_output", lambda path, model_class, sample: {"ok": True})


def _children() -> list[int]:
    return [int(p) for p in os.listdir("/proc") if p.isdigit() and _parent(int(p)) == os.getpid()]


def _parent(pid: int) -> int:
    try:
        return int(Path(f"/proc/{pid}/stat").read_text().split(") ")[1].split()[1])
    except (FileNotFoundError, IndexError):
        return -1


def _cmdline(pid: int) -> str:
    try:
        return Path(f"/proc/{pid}/cmdline").read_text()
    except FileNotFoundError:
        return ""


def test_family_sweep_starts_the_engine_with_no_budget_beside_a_neighbour_and_records_what_it_found(
    tmp_path, monkeypatch
):
    from testing.bench.family_sweep import run_budget

    started: list = []
    _fake_engine(monkeypatch, started)
    args = _sweep_args(tmp_path, "neighbour", argv=["--memory-quality", "fast"])
    row = run_budget(args, "flux", tmp_path / "m", "24")
    assert "exception" not in row, row.get("exception")
    options = started[0]["options"]
    assert "vram_budget_gb" not in options and options["memory_quality"] == "fast"
    assert len(started[0]["neighbours"]) == 1 and row["neighbour"]["pid"] == started[0]["neighbours"][0]
    assert row["budget_mode"] == "neighbour" and row["engine_found"]["free_gib"] == 23.5
    assert row["memory_quality"] == {"asked": "fast", "engine": "fast"}
    assert row["link"]["h2d_gbps"] == 24.5 and row["link"]["copy_correction"] == 1.3  # the machine's link, kept
    assert not _alive(row["neighbour"]["pid"])

    started.clear()
    row = run_budget(_sweep_args(tmp_path, "fraction"), "flux", tmp_path / "m", "24")
    assert started[0]["options"]["vram_budget_gb"] == 24 and started[0]["neighbours"] == []
    assert "memory_quality" not in started[0]["options"]  # unset: the engine's own default
    assert row["budget_mode"] == "fraction" and row["memory_quality"]["asked"] is None

    started.clear()
    row = run_budget(_sweep_args(tmp_path, "neighbour", argv=["--no-new-prompt"]), "flux", tmp_path / "m", "0")
    assert "vram_budget_gb" not in started[0]["options"] and started[0]["neighbours"] == []  # full card: alone
    assert "warm" in row and "new_prompt" not in row


def test_the_quality_step_reads_videos_back_frame_by_frame_and_says_when_files_are_equal(tmp_path):
    from testing.bench.quality_8bit import compared, read_pixels, variant_model
    from toolkit.media import save_video

    frames = np.random.default_rng(0).integers(0, 256, (5, 32, 48, 3), dtype=np.uint8)
    save_video(frames, str(tmp_path / "a.webp"), fps=8)
    pixels = read_pixels(str(tmp_path / "a.webp"))
    assert pixels.shape == (5, 32, 48, 3) and pixels.dtype == np.float32 and 0 <= pixels.min() <= pixels.max() <= 1
    assert compared(pixels, "same", {"sha256": "same"}, str(tmp_path / "a.webp"))["identical"]
    noisier = np.clip(frames.astype(int) + 40, 0, 255).astype(np.uint8)
    save_video(noisier, str(tmp_path / "b.webp"), fps=8)
    row = compared(pixels, "a", {"sha256": "b"}, str(tmp_path / "b.webp"))
    assert not row["identical"] and 5 < row["psnr_db"] < 40 and row["ssim"] < 1
    model = {"arch": "flux", "name_or_path": "x", "dtype": "bf16"}
    assert variant_model(model, "bf16") == model
    assert variant_model(model, "float8") == model | {"quantize": True, "qtype": "float8", "quantize_te": False}
    json.dumps(row)  # every figure is a JSON number (no infinity)
