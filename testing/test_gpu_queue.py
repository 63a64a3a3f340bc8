"""testing/bench/gpu_queue.sh, the GPU session's queue of benchmarks, run on CPU (``TINY=1``) with a real script:
each stage writes under its own name, its exit code is kept, a failing stage does not stop the queue, and the
checkpoints of one stage are gone before the next (the GPU machine's disk holds one family)."""

import json
import os
import subprocess

from testing.test_bench_scripts import ROOT


def test_the_queue_runs_every_stage_keeps_each_exit_code_and_clears_the_checkpoints(tmp_path):
    queue = tmp_path / "queue"
    queue.write_text(
        "# a comment, then a blank line\n\n"
        "profile step_profile.py --families flux --steps 2 --repeats 1\n"
        "broken step_profile.py --no-such-option\n"
    )
    models, results = tmp_path / "models", tmp_path / "results"
    models.mkdir()
    (models / "left_by_an_earlier_stage").write_text("x")
    env = {**os.environ, "TINY": "1", "MODELS": str(models), "OMP_NUM_THREADS": "1"}
    done = subprocess.run(
        ["bash", "testing/bench/gpu_queue.sh", str(queue), str(results)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0 and "queue done" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    rcs = [line.split()[:2] for line in (results / "rc.txt").read_text().splitlines()]
    assert rcs == [["profile", "rc=0"], ["broken", "rc=2"]]
    profile = json.loads((results / "profile" / "step_profile.json").read_text())
    assert profile["meta"]["tiny"] and profile["families"]["flux"]["step_s"] > 0
    assert list(models.iterdir()) == []


def run_queue(tmp_path, stages: str, kept: dict = None, **env) -> tuple[str, list]:
    """gpu_queue.sh on CPU over the queue ``stages``, with ``kept`` (name -> text) in its models folder first:
    its output, and the stage names rc.txt lists."""
    queue, models = tmp_path / "queue", tmp_path / "models"
    queue.write_text(stages)
    models.mkdir(exist_ok=True)
    for name, text in (kept or {}).items():
        (models / name).write_text(text)
    env = {**os.environ, "TINY": "1", "MODELS": str(models), **env}
    cmd = ["bash", "testing/bench/gpu_queue.sh", str(queue), str(tmp_path / "results")]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=120)
    rc = tmp_path / "results/rc.txt"
    return done.stdout + done.stderr, [line.split()[0] for line in rc.read_text().splitlines()] if rc.exists() else []


def test_stages_named_in_skip_are_left_out(tmp_path):
    """A machine taken back mid-queue: the queue starts again on the fresh one without the stages that finished."""
    stages = "done step_profile.py --no-such-option\nleft step_profile.py --no-such-option\n"
    out, ran = run_queue(tmp_path, stages, SKIP="done other")
    assert "=== done skipped" in out and ran == ["left"]


def test_keep_models_leaves_the_checkpoints_for_the_next_stage(tmp_path):
    """A queue of one family: each stage would build the same checkpoint again (Flux.1-dev: 23 s of device time)."""
    stages = "a step_profile.py --no-such-option\nb step_profile.py --no-such-option\n"
    out, ran = run_queue(tmp_path, stages, {"flux": "built by stage a"}, KEEP_MODELS="1")
    assert "queue done" in out and ran == ["a", "b"], out[-2000:]
    assert (tmp_path / "models/flux").read_text() == "built by stage a"


def test_a_dash_stage_clears_the_kept_checkpoints_between_families(tmp_path):
    """KEEP_MODELS=1 over SDXL, Flux.1-dev and Z-Image together outgrows the GPU machine's 64 GB disk."""
    stages = "a step_profile.py --no-such-option\nclear_sdxl -\nb step_profile.py --no-such-option\n"
    out, ran = run_queue(tmp_path, stages, {"sdxl": "built by stage a"}, KEEP_MODELS="1")
    assert "=== clear_sdxl: checkpoints cleared" in out and "queue done" in out, out[-2000:]
    assert list((tmp_path / "models").iterdir()) == [] and ran == ["a", "b"]


def _stages(queue: str) -> list[tuple[str, str, list, str]]:
    """(name, script, args, the comment just above) for each stage line of a queue file."""
    stages, comment = [], ""
    for line in (ROOT / "testing/bench/queues" / queue).read_text().splitlines():
        if line.startswith("#"):
            comment = line
        elif line.strip():
            name, script, *args = line.split()
            stages.append((name, script, args, comment))
    return stages


def test_issue57s_queue_parses_as_load_bench_would_on_the_gpu_machine():
    """testing/bench/queues/issue57_batching.txt: every stage is load_bench.py with arguments it takes (gpu_queue.sh
    adds --out and --models), a family that exists, and a real-size build on CUDA."""
    from testing.bench.load_bench import build_parser
    from toolkit.models.registry import ARCHS

    stages = _stages("issue57_batching.txt")
    assert stages and len({name for name, *_ in stages}) == len(stages)
    for name, script, args, _ in stages:
        assert script == "load_bench.py"
        parsed = build_parser().parse_args(["--out", f"/tmp/R/{name}", "--models", "/tmp/m", *args])
        assert parsed.arch in ARCHS and parsed.real and parsed.device == "cuda"


def test_the_next_sessions_queue_parses_as_each_script_would_and_fits_the_disk():
    """testing/bench/queues/issues57_58_next.txt: every stage parses as its script would on the GPU machine, and
    the checkpoints kept at once (KEEP_MODELS=1) are at most SDXL and Flux.1-dev (~42 of the 64 GB disk): a clear
    stage ("NAME -") comes before Z-Image."""
    import importlib

    stages = _stages("issues57_58_next.txt")
    assert len({name for name, *_ in stages}) == len(stages)
    order = []
    for name, script, args, _ in stages:
        if script == "-":
            order.append("-")
            continue
        module = importlib.import_module("testing.bench." + script.removesuffix(".py"))
        parsed = module.build_parser().parse_args(["--out", f"/tmp/R/{name}", "--models", "/tmp/m", *args])
        order.append(getattr(parsed, "arch", None) or parsed.families)
        assert parsed.device == "cuda" and parsed.real, name
        assert script != "grid_bench.py" or parsed.lora_patch, name
    assert order == ["sdxl", "flux", "sdxl", "sdxl", "flux", "-", "zimage"]


def test_issue62s_queue_names_only_stages_and_flags_that_exist_with_an_estimate_each():
    """testing/bench/queues/issue62_cards.txt: every stage parses as its script would parse it on the GPU machine
    (gpu_queue.sh adds --out and --models), names families that exist, and carries its device-time estimate; the
    families come in the issue's order of value, the cheap ones with their 8-bit quality."""
    import importlib
    import re

    from toolkit.models.registry import ARCHS

    stages = _stages("issue62_cards.txt")
    assert len({name for name, *_ in stages}) == len(stages)
    minutes, parsed = 0.0, []
    for name, script, args, comment in stages:
        module = importlib.import_module("testing.bench." + script.removesuffix(".py"))
        parsed.append(module.build_parser().parse_args(["--out", f"/tmp/R/{name}", "--models", "/tmp/m", *args]))
        assert parsed[-1].budget_mode == "neighbour" and set(parsed[-1].families.split(",")) <= set(ARCHS)
        assert all(float(b.partition(":")[0]) >= 0 for b in parsed[-1].budgets.split(","))
        estimate = re.match(r"# ~([0-9.]+) min \(cumulative ([0-9.]+)\)", comment)
        assert estimate, f"{name}: no estimate above it"
        minutes += float(estimate[1])
        assert abs(minutes - float(estimate[2])) < 0.6, f"{name}: its cumulative estimate is off"
    assert [a.families for a in parsed[:5]] == ["flux", "sdxl", "zimage", "qwen_image", "wan21"]
    assert {a.families for a in parsed[5:]} == {"hidream", "wan22_14b", "flux2"}
    assert all(a.quality for a in parsed[:5])
    assert all(set(a.budgets.split(",")) == {"0", "24", "16", "12"} for a in parsed[:4])


def test_a_queue_file_changed_while_the_queue_runs_does_not_change_the_run(tmp_path):
    """Each GPU call lays the working tree down again: a queue file edited here meanwhile must not reach the loop
    that is running (it read the new file from the old byte offset: half a line as a stage, then the first again)."""
    queue, fake = tmp_path / "queue", tmp_path / "python"
    queue.write_text("first x.py\nsecond x.py\n")
    edited = "# a comment line added above the stages\\nother x.py\\nfirst x.py\\nsecond x.py\\n"
    fake.write_text(f"#!/bin/sh\nprintf '{edited}' > {queue}\n")  # every stage rewrites the queue file
    fake.chmod(0o755)
    env = {**os.environ, "TINY": "1", "PYTHON": str(fake), "MODELS": str(tmp_path / "models")}
    cmd = ["bash", "testing/bench/gpu_queue.sh", str(queue), str(tmp_path / "results")]
    done = subprocess.run(cmd, cwd=ROOT, env=env, capture_output=True, text=True, timeout=60)
    assert "queue done" in done.stdout, done.stdout[-2000:] + done.stderr[-2000:]
    assert [line.split()[0] for line in (tmp_path / "results/rc.txt").read_text().splitlines()] == ["first", "second"]
