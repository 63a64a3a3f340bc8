"""Compare grids (``POST /grid``, issue #58) on the tiny SD 1.5 model: a training job's checkpoints as one axis,
every cell an ordinary engine request whose image equals the same request made alone, the base model loaded
once while the LoRAs swap as unmerged adapters, cancels that end only what they name, the labelled grid image
read back with the project's metadata reader, and a replay that makes the same cells."""

import json
import os

import numpy as np
import pytest
from PIL import Image

from extensions_built_in.inference_engine.grid_image import read_grid
from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for
from testing.test_lora_hotswap import eager_compile, loras  # noqa: F401  (fixtures)
from toolkit.media_info import PARAMETERS, read_info

JOB = "grid_job"
STEPS = (250, 500, 750)


def write_job(root, job: str, steps=STEPS, sample_prompts=("[trigger] a cat", "a dog --w 512 --seed 3")) -> list[str]:
    """A training run's folder as AI Toolkit leaves it: its config and a LoRA per save."""
    import yaml
    from safetensors.torch import save_file

    from testing.test_lora_formats import kohya, peft_lora

    folder = root / job
    folder.mkdir(parents=True, exist_ok=True)
    config = {
        "job": "extension",
        "config": {
            "name": job,
            "process": [
                {
                    "type": "sd_trainer",
                    "model": {"arch": "sd1", "name_or_path": "tiny:sd1"},
                    "trigger_word": "sks",
                    "sample": {"prompts": list(sample_prompts), "seed": 42, "sample_steps": 3},
                }
            ],
        },
    }
    (folder / "config.yaml").write_text(yaml.safe_dump(config))
    paths = []
    for i, step in enumerate(steps):
        path = folder / f"{job}_{step:09d}.safetensors"
        meta = {"training_info": json.dumps({"step": step, "epoch": 1}), "ss_base_model_version": "sd_1.5"}
        save_file(kohya(peft_lora(10 + i)), str(path), metadata=meta)
        paths.append(str(path))
    return paths


@pytest.fixture(scope="module")
def training(tmp_path_factory, tiny_cache):
    root = tmp_path_factory.mktemp("training")
    return root, write_job(root, JOB)


@pytest.fixture()
def engine(tmp_path, training):
    h = EngineHarness(tmp_path, lora_roots=[str(training[0])])
    yield h
    h.close()


def base(steps=2, seed=11, prompt="a cat on a mat") -> dict:
    body = body_for("sd1", steps=steps, seed=seed, prompt=prompt)
    body["stream"] = {"latents": "raw", "every_n_steps": 1}
    return body


def run_grid(h, body) -> list:
    frames = list(h.client.grid(body))
    assert frames[0].type == "start" and "grid" in frames[0].header, frames[0].header
    assert frames[-1].type == "end" and "cell" not in frames[-1].header
    return frames


def grid_result(frames) -> dict:
    [result] = [f.header for f in frames if f.type == "result" and "cell" not in f.header]
    return result


def cell_results(frames) -> dict:
    return {f.header["cell"]: f.header for f in frames if f.type == "result" and "cell" in f.header}


def pixels(path) -> np.ndarray:
    return np.asarray(Image.open(path).convert("RGB"), dtype=np.int16)


def find(page: np.ndarray, cell: np.ndarray):
    """Where ``cell``'s pixels are in ``page`` (top left), or None."""
    h, w = cell.shape[:2]
    hits = np.argwhere((page[: page.shape[0] - h + 1, : page.shape[1] - w + 1] == cell[0, 0]).all(-1))
    return next(((int(y), int(x)) for y, x in hits if np.array_equal(page[y : y + h, x : x + w], cell)), None)


def lora_loads(frames) -> list[str]:
    return [
        f.header["message"]
        for f in frames
        if f.type == "status"
        and "cell" in f.header
        and "LoRA" in f.header["message"]
        and "Loading" in f.header["message"]
    ]


def test_job_by_multiplier_by_prompt_grid_equals_the_same_requests_one_by_one(engine, training):
    h, (_, paths) = engine, training
    body = base() | {
        "axes": [
            {"name": "lora", "values": [{"job": JOB}]},
            {"name": "lora_multiplier", "values": [0.5, 1.0]},
            {"name": "prompt", "values": ["a cat on a mat", "a red house"]},
        ]
    }
    frames = run_grid(h, body)
    plan = frames[0].header["grid"]
    assert plan["shape"] == [3, 2, 2] and len(plan["cells"]) == 12
    assert plan["axes"][0]["steps"] == list(STEPS)
    assert [a["labels"] for a in plan["axes"]][0] == [f"{JOB} @ {s}" for s in STEPS]
    # Run grouped by LoRA although the LoRA is the fastest-varying axis of the layout: one load per checkpoint.
    order = plan["order"]
    assert [plan["cells"][i]["coords"][0] for i in order] == [0] * 4 + [1] * 4 + [2] * 4
    assert len(lora_loads(frames)) == 3, lora_loads(frames)
    counters = h.client.health()["counters"]
    pool = h.client.health()["pool"]
    assert counters["misses"] == len(pool) and counters["evictions"] == 0  # every component loaded once
    assert counters["holder_builds"] >= 1
    unet = h.engine.holder.pipeline.unet
    from peft.tuners.lora import LoraLayer

    layers = [m for m in unet.modules() if isinstance(m, LoraLayer)]
    assert layers and not any(m.merged_adapters for m in layers)  # adapters, never merged into the weights
    assert len({a for m in layers for a in m.lora_A}) == 1  # stale adapters deleted as each LoRA swapped in

    results = cell_results(frames)
    assert sorted(results) == list(range(12))
    result = grid_result(frames)
    assert frames[-1].header["ok"] is True and len(result["pages"]) == 2
    misses = counters["misses"]
    for index, header in results.items():
        x, y, z = index % 3, (index // 3) % 2, index // 6
        alone = base(prompt=["a cat on a mat", "a red house"][z])
        alone["model"].update(lora_path=paths[x], lora_multiplier=[0.5, 1.0][y])
        out = h.client.generate_wait(alone)
        assert out["http_status"] == 200, out
        assert np.array_equal(pixels(out["result"]["path"]), pixels(header["path"])), index
        assert header["axes"] == {
            "lora": f"{JOB} @ {STEPS[x]}",
            "lora_multiplier": ["0.5", "1"][y],
            "prompt": ["a cat on a mat", "a red house"][z],
        }
    assert h.client.health()["counters"]["misses"] == misses  # the requests made alone loaded nothing either

    # The replay body names the files; posted back it makes the same cells.
    with open(result["replay_path"]) as f:
        replay = json.load(f)
    assert replay == result["replay"] and replay["axes"][0]["values"] == paths
    again = run_grid(h, replay)
    for index, header in cell_results(again).items():
        assert np.array_equal(pixels(header["path"]), pixels(results[index]["path"])), index


def test_grid_pages_are_labelled_and_carry_every_cell(engine, training):
    h, (_, paths) = engine, training
    body = base() | {
        "axes": [
            {"name": "lora", "values": [None, paths[0], paths[2]]},
            {"name": "prompt", "values": [{"search_replace": ["cat", "dog", "fox"]}]},
        ]
    }
    frames = run_grid(h, body)
    result, results = grid_result(frames), cell_results(frames)
    assert len(result["pages"]) == 1 and result["path"].endswith(".png")
    grid = read_grid(result["path"])
    assert [a["name"] for a in grid["axes"]] == ["lora", "prompt"]
    assert grid["axes"][0]["labels"] == ["no LoRA", f"{JOB} @ 250", f"{JOB} @ 750"]
    assert grid["axes"][1]["labels"] == ["a cat on a mat", "a dog on a mat", "a fox on a mat"]
    assert len(grid["cells"]) == 9 and all(c["config"]["sample"]["seed"] == 11 for c in grid["cells"])
    assert grid["cells"][4]["labels"] == {"lora": f"{JOB} @ 250", "prompt": "a dog on a mat"}
    assert grid["cells"][4]["config"]["sample"]["prompt"] == "a dog on a mat"
    assert grid["replay"] == result["replay"]
    text = read_info(result["path"])[PARAMETERS]
    assert "Grid: X: lora (no LoRA, grid_job @ 250, grid_job @ 750); Y: prompt (a cat on a mat" in text
    # Each cell's own pixels, in its slot: find every cell's image in the page where the layout puts it.
    page = pixels(result["path"])
    cells = {i: pixels(r["path"]) for i, r in results.items()}
    spots = {i: find(page, cell) for i, cell in cells.items()}
    assert all(spots.values()), spots
    xs = sorted({x for _, x in spots.values()})
    ys = sorted({y for y, _ in spots.values()})
    assert len(xs) == 3 and len(ys) == 3
    for i, (y, x) in spots.items():
        assert (xs.index(x), ys.index(y)) == (i % 3, i // 3), (i, spots)
    # The gallery lists the page with its grid as its sidecar, one item.
    listed = {o["name"]: o for o in h.client.outputs()}
    assert listed[os.path.basename(result["path"])]["meta"]["grid"]["shape"] == [3, 3]
    for i, r in results.items():  # its cells name it, so the UI's gallery shows the grid in their place
        marked = listed[os.path.basename(r["path"])]["meta"]["grid_cell"]
        assert marked == {"grid": frames[0].request_id, "cell": i, "page": os.path.basename(result["path"])}


def test_a_video_grid_shows_each_cell_s_first_frame_and_its_cells_stay_videos(engine):
    """A Wan LoRA compared like a picture one: each slot holds the first frame of its cell's clip (as the mp4
    decodes), and each cell's own file is the video the viewer plays."""
    from toolkit.models.from_video import read_frames

    body = body_for("wan21", steps=2, seed=11, num_frames=5, output_ext="mp4")
    body["axes"] = [{"name": "seed", "values": [1, 2]}]
    frames = run_grid(engine, body)
    result, results = grid_result(frames), cell_results(frames)
    assert sorted(results) == [0, 1] and all(
        r["kind"] == "video" and r["path"].endswith(".mp4") for r in results.values()
    )
    page = pixels(result["path"])
    stills = {i: np.asarray(read_frames(r["path"], 1)[0], dtype=np.int16) for i, r in results.items()}
    spots = {i: find(page, still) for i, still in stills.items()}
    assert all(spots.values()) and spots[0][1] < spots[1][1], spots  # seed 1's column, then seed 2's
    assert not np.array_equal(stills[0], stills[1])


def test_cancelling_one_cell_ends_only_that_cell(engine, training):
    h = engine
    body = base(steps=2) | {"axes": [{"name": "seed", "values": [1, 2, 3, 4]}]}
    gen = h.client.grid(body)
    start = next(gen)
    plan = start.header["grid"]
    victim = plan["cells"][2]["request_id"]
    assert h.client.cancel(victim)["status"] in ("cancelled", "cancelling")
    frames = [start] + list(gen)
    results = cell_results(frames)
    assert sorted(results) == [0, 1, 3]
    errors = [f.header for f in frames if f.type == "error"]
    assert [(e["cell"], e["code"]) for e in errors] == [(2, "cancelled")]
    assert frames[-1].header["ok"] is True
    grid = read_grid(grid_result(frames)["path"])
    assert grid["cells"][2]["error"]["code"] == "cancelled" and grid["cells"][2]["path"] is None


def test_cancelling_the_grid_ends_its_cells_and_nothing_else(engine, training):
    h = engine
    other = h.client.submit(base(seed=99))  # another client's request, queued before the grid
    body = base(steps=3) | {"axes": [{"name": "seed", "values": [1, 2, 3, 4, 5, 6]}]}
    gen = h.client.grid(body)
    frames = [next(gen)]
    grid_id = frames[0].request_id
    for frame in gen:
        frames.append(frame)
        if frame.type == "result" and frame.header.get("cell") is not None:
            cancelled = h.client.cancel_grid(grid_id)
            assert cancelled["grid_id"] == grid_id and cancelled["cancelled"]
            break
    frames += list(gen)
    done = cell_results(frames)
    assert 1 <= len(done) < 6
    tail = [f for f in frames if "cell" not in f.header]
    assert [f.type for f in tail[-3:]] == ["result", "error", "end"]
    assert tail[-2].header["code"] == "cancelled" and tail[-1].header["ok"] is False
    assert [f.type for f in h.client.frames(other["request_id"])][-2:] == ["result", "end"]
    queue = h.client.queue()
    assert queue["running"] is None and queue["pending"] == []


def test_sampler_steps_and_guidance_axes_make_the_requests_they_name(engine):
    h = engine
    body = base() | {
        "axes": [
            {"name": "sampler", "values": ["Euler", "DPM++ 2M"]},
            {"name": "num_inference_steps", "values": [2, 3]},
            {"name": "guidance_scale", "values": [1.5, 7]},
        ]
    }
    frames = run_grid(h, body)
    results = cell_results(frames)
    assert sorted(results) == list(range(8)) and frames[-1].header["ok"] is True
    starts = {
        f.header["cell"]: f.header["config"]["sample"] for f in frames if f.type == "start" and "cell" in f.header
    }
    for index, header in results.items():
        x, y, z = index % 2, (index // 2) % 2, index // 4
        sample = starts[index]
        assert (sample["sampler"], sample["num_inference_steps"], sample["guidance_scale"]) == (
            ["Euler", "DPM++ 2M"][x],
            [2, 3][y],
            [1.5, 7][z],
        )
        alone = base()
        alone["sample"].update(sampler=sample["sampler"], num_inference_steps=[2, 3][y], guidance_scale=[1.5, 7][z])
        out = h.client.generate_wait(alone)
        assert np.array_equal(pixels(out["result"]["path"]), pixels(header["path"])), index
    assert len(grid_result(frames)["pages"]) == 2


def test_a_model_axis_runs_each_model_s_cells_together(engine, training):
    h, (_, paths) = engine, training
    body = base() | {
        "axes": [
            {"name": "model", "values": ["tiny:sd1", {"name_or_path": "tiny:sd1/b"}]},
            {"name": "lora", "values": paths[:2]},
        ]
    }
    frames = run_grid(h, body)  # the base's dtype (float32) kept for both models
    plan = frames[0].header["grid"]
    assert plan["axes"][0]["labels"] == ["tiny:sd1", "tiny:sd1/b"]
    assert plan["order"] == [0, 2, 1, 3]  # the first model's two LoRAs, then the second's
    started = [f.header["cell"] for f in frames if f.type == "start" and "cell" in f.header]
    assert sorted(started) == [0, 1, 2, 3]
    results = cell_results(frames)
    for index, header in results.items():
        alone = base()
        alone["model"].update(name_or_path=["tiny:sd1", "tiny:sd1/b"][index % 2], lora_path=paths[index // 2])
        out = h.client.generate_wait(alone)
        assert np.array_equal(pixels(out["result"]["path"]), pixels(header["path"])), index
    assert not np.array_equal(pixels(results[0]["path"]), pixels(results[1]["path"]))  # two models indeed


def test_cancelling_the_running_cell_ends_only_that_cell(engine):
    h = engine
    body = base(steps=40) | {"axes": [{"name": "seed", "values": [1, 2, 3]}]}
    frames, cancelled = [], None
    for frame in h.client.grid(body):
        frames.append(frame)
        if frame.type == "progress" and frame.header["cell"] == 1 and cancelled is None:
            cancelled = h.client.cancel(frame.request_id)["status"]
    assert cancelled == "cancelling"
    assert sorted(cell_results(frames)) == [0, 2]
    assert [(f.header["cell"], f.header["code"]) for f in frames if f.type == "error"] == [(1, "cancelled")]
    assert frames[-1].header["ok"] is True


def test_a_client_that_leaves_cancels_the_cells_still_to_come(engine):
    h = engine
    body = base(steps=3) | {"axes": [{"name": "seed", "values": [1, 2, 3, 4, 5, 6]}]}
    gen = h.client.grid(body)
    plan = next(gen).header["grid"]
    for frame in gen:
        if frame.type == "result":
            break
    gen.close()  # drops the connection

    def all_ended():
        reqs = [h.engine.find_request(c["request_id"]) for c in plan["cells"]]
        return all(r.stream.closed for r in reqs) and reqs

    from testing.engine_harness import wait_for

    reqs = wait_for(all_ended, 30, "every cell's stream to end")
    assert any(r.cancelled.is_set() for r in reqs)
    queue = h.client.queue()
    assert queue["running"] is None and queue["pending"] == []


def test_a_detached_grid_is_the_engine_s_and_readers_attach_from_where_it_stands(engine):
    h = engine
    body = base(steps=3) | {"axes": [{"name": "seed", "values": [1, 2, 3, 4]}]}
    ticket = h.client.submit_grid(body)
    assert ticket["cells"] == 4 and ticket["frames"] == f"/grid/{ticket['grid_id']}/frames"
    first = []
    for frame in h.client.grid_frames(ticket["grid_id"]):
        first.append(frame)
        if frame.type == "result":
            break  # this reader leaves: the grid goes on
    assert first[0].type == "start" and first[0].request_id == ticket["grid_id"]
    again = list(h.client.grid_frames(ticket["grid_id"]))
    assert again[0].type == "start" and "grid" in again[0].header  # the grid as it stood, then live
    assert sorted(cell_results(again)) == [0, 1, 2, 3] and again[-1].header["ok"] is True
    done = list(h.client.grid_frames(ticket["grid_id"]))  # a finished grid: all of it at once, but its latents
    assert [f.type for f in done if "cell" not in f.header] == ["start", "result", "end"]
    assert any(f.type == "latent" for f in again) and not any(f.type == "latent" for f in done)
    assert sorted(cell_results(done)) == [0, 1, 2, 3]
    assert h.client.cancel_grid(ticket["grid_id"]) == {"grid_id": ticket["grid_id"], "cancelled": []}


def test_jobs_list_checkpoints_by_step_and_the_jobs_own_sample_prompts(engine, training):
    [job] = engine.client._json("GET", "/grid/jobs")["jobs"]
    assert job["job"] == JOB and job["arch"] == "sd1"
    assert [c["step"] for c in job["checkpoints"]] == list(STEPS)
    assert [c["path"] for c in job["checkpoints"]] == training[1]
    assert job["sample"] == {"prompts": ["sks a cat", "a dog"], "seed": 42, "num_inference_steps": 3}


BAD = [
    ({"axes": []}, ["body", "axes"]),
    ({"axes": [{"name": "steps", "values": [1]}]}, ["body", "axes", 0, "name"]),
    ({"axes": [{"name": "seed", "values": [1]}] * 4}, ["body", "axes"]),
    ({"axes": [{"name": "seed", "values": [1]}, {"name": "seed", "values": [2]}]}, ["body", "axes", 1, "name"]),
    (
        {"axes": [{"name": "seed", "values": list(range(9))}, {"name": "guidance_scale", "values": list(range(9))}]},
        ["body", "axes"],
    ),
    ({"axes": [{"name": "seed", "values": [1, "x"]}]}, ["body", "axes", 0, "values", 1]),
    ({"axes": [{"name": "num_inference_steps", "values": [2, 0]}]}, ["body", "axes", 0, "values", 1]),
    ({"axes": [{"name": "sampler", "values": ["Euler", "no such sampler"]}]}, ["body", "axes", 0, "values", 1]),
    ({"axes": [{"name": "lora", "values": ["/etc/passwd"]}]}, ["body", "axes", 0, "values", 0]),
    ({"axes": [{"name": "lora", "values": [{"job": "nobody_trained_this"}]}]}, ["body", "axes", 0, "values", 0]),
    ({"axes": [{"name": "lora_multiplier", "values": [0.5, 1]}]}, ["body", "axes", 0, "name"]),
    (
        {"axes": [{"name": "prompt", "values": [{"search_replace": ["zebra", "lion"]}]}]},
        ["body", "axes", 0, "values", 0],
    ),
    (
        {"axes": [{"name": "model", "values": [{"arch": "nope", "name_or_path": "tiny:sd1"}]}]},
        ["body", "axes", 0, "values", 0],
    ),
    (
        {"sample": {"prompt": "x", "batch_count": 2}, "axes": [{"name": "seed", "values": [1]}]},
        ["body", "sample", "batch_count"],
    ),
]


@pytest.mark.parametrize("change,loc", BAD)
def test_bad_grids_are_422s_naming_the_field_and_queue_nothing(engine_server, change, loc):
    body = base() | change
    r = engine_server.client.http.post("/grid", json=body)
    assert r.status_code == 422, r.text
    assert r.json()["detail"][0]["loc"][: len(loc)] == loc, r.json()
    assert engine_server.client.queue()["pending"] == []


def test_grid_routes_need_the_token(engine_server):
    import httpx

    r = httpx.post(f"{engine_server.url}/grid", json=base() | {"axes": [{"name": "seed", "values": [1]}]})
    assert r.status_code == 401
    assert engine_server.client.http.post("/grid/nope/cancel").status_code == 404


def test_the_cli_runs_a_grid_from_a_replay_file(engine, training, tmp_path, capsys):
    from extensions_built_in.inference_engine.client import main

    body = base() | {"axes": [{"name": "lora", "values": training[1][:2]}, {"name": "seed", "values": [1, 2]}]}
    path = tmp_path / "grid.json"
    path.write_text(json.dumps(body))
    out = tmp_path / "pages"
    assert main(["--url", engine.url, "--token", engine.TOKEN, "grid", str(path), "--out", str(out)]) == 0
    printed = capsys.readouterr()
    [page] = [line for line in printed.out.split() if line.endswith(".png")]  # the engine logs here too
    assert os.path.dirname(page) == str(out) and read_grid(page)["shape"] == [2, 2]
    assert sum(line.startswith("cell ") for line in printed.err.splitlines()) == 4


def test_a_grid_larger_than_the_free_queue_is_a_429_and_queues_nothing(tmp_path, tiny_cache):
    h = EngineHarness(tmp_path, max_queue=3)
    try:
        r = h.client.http.post("/grid", json=base() | {"axes": [{"name": "seed", "values": [1, 2, 3, 4]}]})
        assert r.status_code == 429 and int(r.headers["retry-after"]) >= 1, r.text
        assert h.client.queue()["pending"] == [] and h.client.health()["counters"]["requests"] == 0
    finally:
        h.close()


def test_sample_settings_read_both_of_ai_toolkit_s_layouts():
    from extensions_built_in.inference_engine.grid_jobs import sample_settings

    def config(sample, trigger="ohwx"):
        return {"config": {"process": [{"trigger_word": trigger, "sample": sample}]}}

    old = config({"prompts": ["[trigger] portrait --w 768 --seed 4", "  "], "neg": "blurry", "sample_steps": 20})
    assert sample_settings(old) == {
        "prompts": ["ohwx portrait"],
        "negative_prompt": "blurry",
        "num_inference_steps": 20,
    }
    new = config({"samples": [{"prompt": "a [trigger] dog"}, {"prompt": "a tree"}], "guidance_scale": 4, "seed": 1})
    assert sample_settings(new) == {"prompts": ["a ohwx dog", "a tree"], "guidance_scale": 4, "seed": 1}
    assert sample_settings({"config": {"process": [{}]}}) is None and sample_settings(None) is None


def test_on_a_compiled_denoiser_a_grid_s_loras_hot_swap_without_recompiling(tmp_path, request):
    """The GPU's path: a compiled Flux keeps its LoRAs in fixed slots that each checkpoint is hot-swapped into
    (toolkit/models/lora_hotswap.py); dynamo's ``eager`` backend traces here as inductor would compile there."""
    files = request.getfixturevalue("loras")  # testing/test_lora_hotswap.py's tiny Flux LoRAs
    request.getfixturevalue("eager_compile")
    from testing.test_lora_hotswap import body as flux_body
    from testing.test_lora_hotswap import engine as hotswap_engine
    from testing.test_lora_hotswap import graphs

    h = hotswap_engine(tmp_path, files, "compiled")
    try:
        first = h.client.generate_wait(flux_body(files["a"]))
        assert first["http_status"] == 200, first
        compiled = graphs(h)
        misses = h.client.health()["counters"]["misses"]
        grid = flux_body() | {
            "axes": [
                {"name": "lora", "values": [files["a"], files["b"], files["wide"]]},
                {"name": "lora_multiplier", "values": [0.5, 1.0]},
            ]
        }
        frames = run_grid(h, grid)
        assert sorted(cell_results(frames)) == list(range(6)) and frames[-1].header["ok"] is True
        swaps = [f.header["message"] for f in frames if f.type == "status" and "hot-swapped" in f.header["message"]]
        assert len(swaps) == 2, swaps  # b, then wide: a was in the slot already, and each LoRA's cells ran together
        assert graphs(h) == compiled  # three LoRAs at two strengths: nothing recompiled
        assert h.client.health()["counters"]["misses"] == misses  # and nothing reloaded
    finally:
        h.close()
