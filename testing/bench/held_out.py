"""A request per family from outside the test suite: the engine started as users start it (``python run.py``), one
HTTP request each at a size no test asks for, the result file read back and checked against what was asked.

    python testing/bench/held_out.py --archs sd2,ssd,vega --out docs/bench/held_out.json
    python testing/bench/held_out.py --all --out /tmp/held_out.json

The suite's stream contract (``testing/test_inference_engine.py``) asks each tiny checkpoint for its recipe's
own sample size. Here every image and video is asked one divisibility step wider than that, and every audio clip
a quarter second shorter, so a family that only works at the size its tests use fails here. Each row says what was
asked, what the file holds (``toolkit/media_probe.py`` reads the file, not the response), and PASS or FAIL.
"""

from __future__ import annotations

import argparse
import json
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def asked_for(arch: str) -> dict:
    """The tiny sample's settings moved off the size the suite uses: one divisibility step wider, or 0.25 s shorter
    (a tiny audio checkpoint's window may end just past its sample's duration)."""
    from toolkit.models import tiny
    from toolkit.models.registry import get_model_class

    cls = get_model_class(arch)
    sample = tiny.sample(cls.arch)  # a tag or an alias: its family's tiny checkpoint
    if cls.modality == "audio":
        return sample | {"duration_s": float(sample.get("duration_s") or cls.defaults.get("duration_s") or 2.0) - 0.25}
    return sample | {"width": sample["width"] + cls.divisibility}


def file_matches(arch: str, asked: dict, meta: dict) -> list:
    """What the file holds that differs from what was asked (empty: it matches)."""
    from toolkit.models.registry import get_model_class

    cls = get_model_class(arch)
    wrong = [f"kind {meta['kind']} != {cls.modality}"] if meta["kind"] != cls.modality else []
    if cls.modality == "audio":
        if abs(meta["duration_s"] - asked["duration_s"]) > 0.05 * asked["duration_s"] + 0.05:
            wrong.append(f"duration {meta['duration_s']:.2f} s != {asked['duration_s']:.2f} s")
        return wrong
    if (meta["width"], meta["height"]) != (asked["width"], asked["height"]):
        wrong.append(f"size {meta['width']}x{meta['height']} != {asked['width']}x{asked['height']}")
    if cls.modality == "video" and asked.get("num_frames") and meta["frames"] != asked["num_frames"]:
        wrong.append(f"frames {meta['frames']} != {asked['num_frames']}")
    return wrong


def one(client, arch: str) -> dict:
    from testing.stream_contract import body_for, upload_test_image
    from toolkit.media_probe import probe
    from toolkit.models.registry import get_model_class

    asked = asked_for(arch)
    body = body_for(get_model_class(arch).arch, steps=2, seed=123, **asked)
    body["model"]["arch"] = arch  # a tag (krea2:turbo) or an alias (flex1) as a user names it, on its family's tiny
    for i in range(get_model_class(arch).control_images):
        body["sample"]["ctrl_img" if i == 0 else f"ctrl_img_{i + 1}"] = upload_test_image(client, seed=i)["id"]
    t0 = time.monotonic()
    answer = client.generate_wait(body)
    if "result" not in answer:  # a refusal or an error: this family's FAIL, not the run's end
        return {"arch": arch, "asked": asked, "status": "FAIL", "error": json.dumps(answer)[:400]}
    result = answer["result"]
    meta = probe(result["path"])
    wrong = file_matches(arch, asked, meta)
    return {
        "arch": arch,
        "asked": asked,
        "file": {k: meta.get(k) for k in ("kind", "width", "height", "frames", "duration_s")} | {"ext": result["ext"]},
        "seconds": round(time.monotonic() - t0, 2),
        "status": "FAIL" if wrong else "PASS",
        "wrong": wrong,
    }


def main() -> int:
    from testing.bench.engine_process import engine_process
    from toolkit.models.registry import ARCHS

    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--archs", help="comma-separated arch names")
    parser.add_argument("--all", action="store_true", help="every registered family")
    parser.add_argument("--device", default="cpu")
    parser.add_argument("--out", help="write the rows here as JSON")
    args = parser.parse_args()
    archs = sorted(ARCHS) if args.all else [a for a in (args.archs or "").split(",") if a]
    if not archs:
        parser.error("give --archs A,B or --all")
    folder = Path(tempfile.mkdtemp(prefix="held-out-"))
    rows = []
    with engine_process(folder, args.device, log=folder / "engine.log", idle_unload_seconds=0) as client:
        for arch in archs:
            rows.append(one(client, arch))
            row = rows[-1]
            print(f"{arch:24s} {row['status']}  {row.get('wrong') or row.get('error') or ''}", flush=True)
            if args.out:
                Path(args.out).write_text(json.dumps(rows, indent=1) + "\n")
    failed = [r["arch"] for r in rows if r["status"] != "PASS"]
    print(f"{len(rows) - len(failed)} passed, {len(failed)} failed" + (f": {', '.join(failed)}" if failed else ""))
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
