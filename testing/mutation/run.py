"""Mutation run over the modules whose mistakes the suite must catch (docs/TESTING.md has the latest scores).

    .venv/bin/python testing/mutation/run.py                    # every target, ~15 min on 2 cores
    .venv/bin/python testing/mutation/run.py queue protocol     # some of them

Each target is a set of files, the focused tests that guard them, and the functions in scope. mutmut (3.x)
runs in a scratch copy of the tree, one target at a time, so each mutant runs only that target's tests (the
whole suite per mutant would not fit a 2-core machine). It mutates every function of the files; the score
counts the functions in scope (``pool.py``'s release/evict logic, not its pinned-memory copies, which need a
GPU; an arch file's unpacking, not its tiny-checkpoint recipe). Survivors are printed with their diff.
Needs ``pip install -r testing/mutation/requirements.txt``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import subprocess
import sys
import tempfile

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
# Every family whose streamed latents are not the loop's tensor as is (packed tokens, normalised, transposed).
UNPACKING_ARCHS = [
    "flux",
    "flux_kontext",
    "chroma",
    "qwen_image",
    "flux2_klein",
    "flux2",
    "ltx",
    "ltx2",
    "stable_audio",
]

TARGETS = {
    "protocol": dict(
        files=["extensions_built_in/inference_engine/protocol.py"],
        tests=["testing/test_protocol.py", "testing/test_protocol_errors.py"],
        scope=r".",
    ),
    "stream": dict(
        files=["extensions_built_in/inference_engine/stream.py"], tests=["testing/test_stream.py"], scope=r"."
    ),
    "queue": dict(
        files=["extensions_built_in/inference_engine/request_queue.py"],
        tests=["testing/test_request_queue.py"],
        scope=r".",
    ),
    "pool": dict(
        files=["toolkit/models/components/pool.py", "toolkit/models/pinned.py"],
        tests=["testing/test_pool_units.py", "testing/test_pinned_host.py", "testing/test_pool_safety.py"],
        scope=r"ComponentPool.(get_or_load|_touch|begin_request|mark_used|release_unused|evict|unload|"
        r"evict_for|_can_park)__|host_buffers__|_detach_hooks__",
    ),
    "unpacking": dict(
        files=[f"toolkit/models/archs/{a}.py" for a in UNPACKING_ARCHS],
        tests=[
            "testing/test_archs_image.py",
            "testing/test_archs_video_audio.py",
            "-k",
            "packed or unpack or latent_shape or blc",
        ],
        scope=r"unpack|latent_shape",
    ),
}


def scratch_copy(dest: str) -> None:
    """The tree as git sees it (tracked and untracked-not-ignored files), without .venv, caches or outputs."""
    names = (
        subprocess.run(
            ["git", "ls-files", "-co", "--exclude-standard", "-z"], cwd=ROOT, check=True, capture_output=True
        )
        .stdout.decode()
        .split("\0")
    )
    for name in filter(None, names):
        src = os.path.join(ROOT, name)
        if os.path.isfile(src) and not name.startswith("ui/"):
            os.makedirs(os.path.dirname(os.path.join(dest, name)), exist_ok=True)
            shutil.copy2(src, os.path.join(dest, name))


def mutmut_config(target: dict) -> str:
    quoted = lambda items: "[" + ", ".join(json.dumps(i) for i in items) + "]"  # noqa: E731
    return (
        "\n[tool.mutmut]\n"
        'source_paths = ["extensions_built_in", "toolkit", "jobs"]\n'
        f"only_mutate = {quoted(target['files'])}\n"
        'also_copy = ["testing", "config", "run.py"]\n'
        f"pytest_add_cli_args_test_selection = {quoted(target['tests'])}\n"
        'pytest_add_cli_args = ["-p", "no:cacheprovider", "-q", "-x"]\n'
    )


def run_target(name: str, target: dict) -> dict:
    mutmut = os.path.join(os.path.dirname(sys.executable), "mutmut")
    with tempfile.TemporaryDirectory(prefix=f"mutation-{name}-") as work:
        scratch_copy(work)
        with open(os.path.join(work, "pyproject.toml"), "a") as f:
            f.write(mutmut_config(target))
        env = dict(os.environ, AITK_TINY_CACHE=os.environ.get("AITK_TINY_CACHE", os.path.join(ROOT, ".cache", "tiny")))
        subprocess.run([mutmut, "run"], cwd=work, env=env, stdout=subprocess.DEVNULL, check=False)
        listing = subprocess.run(
            [mutmut, "results", "--all", "true"], cwd=work, env=env, capture_output=True, text=True
        ).stdout
        results = dict(re.findall(r"^\s*(\S+): (.+)$", listing, flags=re.M))
        in_scope = {m: s for m, s in results.items() if re.search(target["scope"], m.replace("ǁ", "."))}
        survivors = {}
        for mutant, status in in_scope.items():
            if status in ("survived", "no tests"):
                diff = subprocess.run([mutmut, "show", mutant], cwd=work, env=env, capture_output=True, text=True)
                survivors[mutant] = [line for line in diff.stdout.splitlines() if line[:2] in ("- ", "+ ")]
    counts: dict = {}
    for status in in_scope.values():
        counts[status] = counts.get(status, 0) + 1
    caught = counts.get("killed", 0) + counts.get("timeout", 0)
    return {
        "target": name,
        "files": target["files"],
        "tests": target["tests"],
        "mutants": len(in_scope),
        "out_of_scope": len(results) - len(in_scope),
        "counts": counts,
        "score": round(caught / len(in_scope), 4) if in_scope else None,
        "survivors": survivors,
    }


def main() -> int:
    parser = argparse.ArgumentParser()
    parser.add_argument("targets", nargs="*", help=f"some of {', '.join(TARGETS)} (default: all)")
    parser.add_argument("--json", help="write the results here too")
    args = parser.parse_args()
    unknown = set(args.targets) - set(TARGETS)
    if unknown:
        parser.error(f"unknown target(s) {', '.join(sorted(unknown))}; known: {', '.join(TARGETS)}")
    args.targets = args.targets or list(TARGETS)
    report = []
    for name in args.targets:
        result = run_target(name, TARGETS[name])
        report.append(result)
        print(f"{name}: {result['mutants']} mutants in scope, {result['counts']}, score {result['score']}", flush=True)
        for mutant, diff in result["survivors"].items():
            print(f"  {mutant}\n    " + "\n    ".join(diff), flush=True)
        if args.json:
            with open(args.json, "w") as f:
                json.dump(report, f, indent=2, ensure_ascii=False)
    return 0


if __name__ == "__main__":
    sys.exit(main())
