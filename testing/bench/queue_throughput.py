"""Queued requests: does saving one result overlap sampling the next?

    python testing/bench/queue_throughput.py [--arch sd1] [--n 6] [--size 1024] [--steps 2]

Starts the engine as users do, loads the model, then submits ``--n`` requests at once (a script's batch) and
reports the wall time against the sum of the per-request load + sample + save times the engine reports. With
saving on the main thread the two are equal; with results saved on their own thread the wall time is shorter
by up to the saving time of all but the last request.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def main() -> int:
    import tempfile

    from testing.bench.engine_process import engine_process, queue_row, send_at_once
    from testing.stream_contract import body_for

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--arch", default="sd1")
    parser.add_argument("--n", type=int, default=6)
    parser.add_argument("--size", type=int, default=1024)
    parser.add_argument("--steps", type=int, default=2)
    parser.add_argument("--device", default="cpu")
    args = parser.parse_args()
    with engine_process(Path(tempfile.mkdtemp()), args.device) as client:
        body = lambda seed: body_for(args.arch, steps=args.steps, seed=seed, width=args.size, height=args.size)  # noqa: E731
        client.generate_wait(body(0))  # resident
        wall, results = send_at_once([lambda i=i: client.generate_wait(body(i + 1)) for i in range(args.n)])
    row = queue_row(wall, [r["timings"] for r in results])
    print("| arch | size | requests | wall s | Σ load+sample+save s | of which Σ save s | wall / Σ | between s |")
    print("|---|---|---|---|---|---|---|---|")
    print(
        f"| {args.arch} | {args.size}² | {args.n} | {row['wall_s']} | {row['sum_busy_s']} | {row['sum_save_s']} "
        f"| {row['wall_over_sum']} | {row['gaps_s']} |"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
