"""The first request to a freshly started engine, with and without ``engine.warm_up``.

    python testing/bench/first_request.py [--device cpu] [--idle 10] [--repeats 2]

Starts the engine as users do (``python run.py``), waits for engine.json, stays idle for ``--idle`` seconds (a
user opening the Generate page), then times one small tiny-model request: what the first click costs.
"""

from __future__ import annotations

import argparse
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def first_request(device: str, warm_up: bool, idle: float) -> dict:
    from testing.bench.engine_process import engine_process
    from testing.stream_contract import body_for

    with engine_process(Path(tempfile.mkdtemp()), device, warm_up=warm_up) as client:
        time.sleep(idle)
        t0 = time.monotonic()
        out = client.generate_wait(body_for("sd1", steps=2))
        return {
            "warm_up": warm_up,
            "first_request_s": round(time.monotonic() - t0, 3),
            "load_s": out["timings"]["load_s"],
            "warm_up_s": client.health()["warm_up_s"],
        }


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--idle", type=float, default=10.0)
    parser.add_argument("--repeats", type=int, default=2)
    args = parser.parse_args()
    rows = [first_request(args.device, warm, args.idle) for _ in range(args.repeats) for warm in (False, True)]
    print("| warm_up | first request s | of which load s | warm-up at start s |\n|---|---|---|---|")
    for r in rows:
        print(f"| {r['warm_up']} | {r['first_request_s']} | {r['load_s']} | {r['warm_up_s']} |")
    return 0


if __name__ == "__main__":
    sys.exit(main())
