"""A VRAM budget that behaves like a smaller card: a neighbour process holds all of the GPU but the budget.

``engine.vram_budget_gb`` caps only what the engine's caching allocator may reserve (CUDA's per-process memory
fraction); the CUDA context, cuBLAS workspaces and anything allocated outside the allocator stay free beside it.
So a plan that "fits 24 GiB" under the fraction may not fit a 24 GB card, where about 23.5 GiB is left once the
context exists. Here another process takes the rest of the card first, so the engine finds what it would find on
that card, its own context included, and runs with no budget setting at all.

    with card_budget(24, "neighbour", "cuda") as (engine_options, record):   # engine_options: {}
        with engine_process(folder, "cuda", **engine_options) as client: ...
    with card_budget(24, "fraction", "cuda") as (engine_options, record):    # {"vram_budget_gb": 24}

The neighbour leaves the budget free after its own CUDA context (it measures free memory, not the card's total:
its context is not the engine's), says so on one line of stdout (``HOLDING {json}``), and sleeps until its stdin
closes: when the bench ends, or dies however it dies (a killed process closes its pipes too), the neighbour exits
and the memory is the card's again. On a device that is not CUDA (``--tiny`` runs) it holds nothing and never
imports torch: the plumbing runs, the allocation does not.

    python3 testing/bench/neighbour.py --leave-gib 24 --device cuda:0     # by hand: holds until Ctrl-D
"""

from __future__ import annotations

import argparse
import contextlib
import json
import subprocess
import sys
import tempfile
import threading
from pathlib import Path

GIB = 1024**3
CHUNK = 4 * GIB  # pieces rather than one request the size of the card: the hold needs no single range that large
MODES = ("neighbour", "fraction")
READY = "HOLDING "


def chunks(free: int, leave: int) -> list[int]:
    """Allocation sizes that together take ``free - leave`` bytes (none when the budget is the card or more)."""
    want = max(0, free - leave)
    return [min(CHUNK, want - start) for start in range(0, want, CHUNK)]


def hold(leave: int, device: str) -> tuple[dict, list]:
    """Take all but ``leave`` bytes of ``device``'s free memory; returns what was found and held, and the tensors
    (kept alive by the caller)."""
    report: dict = {"device": device, "leave": leave, "held": 0}
    if not device.startswith("cuda"):
        return report, []
    import torch

    index = torch.device(device).index or 0
    torch.cuda.init()
    free, total = torch.cuda.mem_get_info(index)  # after this process's own context
    tensors = [torch.empty(size, dtype=torch.uint8, device=f"cuda:{index}") for size in chunks(free, leave)]
    report.update(total=total, free_before=free, held=sum(t.numel() for t in tensors))
    report["free_after"] = torch.cuda.mem_get_info(index)[0]
    return report, tensors


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--leave-gib", type=float, required=True, help="what stays free for the engine")
    parser.add_argument("--device", default="cuda:0")
    args = parser.parse_args(argv)
    report, tensors = hold(int(args.leave_gib * GIB), args.device)
    print(READY + json.dumps(report), flush=True)
    sys.stdin.read()  # returns when the bench closes the pipe or its process is gone
    del tensors
    return 0


@contextlib.contextmanager
def neighbour(budget_gb: float, device: str, start_timeout: float = 120):
    """The neighbour process for one budget, started and holding before the body runs, gone after it; yields its
    report (``pid``, and on CUDA the bytes it found free, held and left)."""
    errors = tempfile.TemporaryFile()
    command = [sys.executable, str(Path(__file__).resolve()), "--leave-gib", str(budget_gb), "--device", device]
    proc = subprocess.Popen(command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=errors, text=True)
    try:
        line = _first_line(proc, start_timeout)
        if not line.startswith(READY):
            errors.seek(0)
            tail = errors.read()[-2000:].decode(errors="replace")
            raise RuntimeError(f"the neighbour holding all but {budget_gb:g} GiB did not start: {line!r} {tail}")
        yield json.loads(line[len(READY) :]) | {"pid": proc.pid}
    finally:
        _stop(proc)
        errors.close()


def _first_line(proc: subprocess.Popen, timeout: float) -> str:
    got: list = []
    reader = threading.Thread(target=lambda: got.append(proc.stdout.readline()), daemon=True)
    reader.start()
    reader.join(timeout)
    return got[0] if got else ""


def _stop(proc: subprocess.Popen) -> None:
    with contextlib.suppress(OSError):
        proc.stdin.close()
    try:
        proc.wait(30)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait()


@contextlib.contextmanager
def card_budget(budget_gb: float, mode: str, device: str):
    """``budget_gb`` (0: the whole card) the way ``mode`` simulates it; yields the engine options to start the
    engine with and what to record beside its figures."""
    if mode not in MODES:
        raise ValueError(f"budget mode must be one of {', '.join(MODES)} (got {mode!r})")
    record: dict = {"budget_mode": mode}
    if not budget_gb:
        yield {}, record
    elif mode == "fraction":
        yield {"vram_budget_gb": budget_gb}, record
    else:
        with neighbour(budget_gb, device) as held:
            yield {}, record | {"neighbour": held}


def engine_found(health: dict) -> dict:
    """What the engine found on the GPU when it started (``/health`` read before the first request): free is the
    card's free memory (``torch.cuda.mem_get_info``) as the memory plan will see it, after the engine's context."""
    vram = health.get("vram") or {}
    total, used = vram.get("total"), vram.get("used")
    free = total - used if total is not None and used is not None else None
    gib = None if free is None else round(free / GIB, 2)
    return {"free": free, "free_gib": gib, "total": total, "budget": vram.get("budget")}


def add_budget_mode(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--budget-mode",
        default="neighbour",
        choices=MODES,
        help="neighbour: another process holds all of the card but the budget (the engine runs with no budget "
        "setting, as on a smaller card); fraction: engine.vram_budget_gb, the allocator's cap (the context and "
        "anything outside the allocator stay free), for comparison with earlier runs",
    )


if __name__ == "__main__":
    sys.exit(main())
