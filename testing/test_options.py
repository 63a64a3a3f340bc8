"""Every option the API documents changes what it says it changes: each test here fails if its option is
read and then silently ignored. The ``sample`` and ``stream`` keys of a request go through the real engine over
HTTP on tiny checkpoints; the engine's config keys through a real ``run.py`` job; the client CLI's flags
through its own ``main``. Options covered elsewhere say where (``lora_path``: test_lora.py; ``-r/-n/-l``:
test_job_process.py; ``extras_name_or_path``: test_pool.py)."""

import hashlib
import json
import os
import subprocess
import sys
import time
from typing import Optional

import numpy as np
import pytest

from testing.stream_contract import body_for, upload_test_image
from toolkit.media_probe import probe

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def run(engine_server, body) -> tuple[list, dict]:
    """All frames of one generation, and its result header (the request must succeed)."""
    frames = list(engine_server.client.generate(body))
    results = [f.header for f in frames if f.type == "result"]
    assert results, [f.header for f in frames if f.type == "error"]
    return frames, results[0]


def digest(result: dict) -> str:
    with open(result["path"], "rb") as f:
        return hashlib.sha256(f.read()).hexdigest()


def pixels(result: dict) -> np.ndarray:
    from PIL import Image

    with Image.open(result["path"]) as img:
        return np.asarray(img.convert("RGB"), dtype=np.int16)


def sd1(**sample) -> dict:
    sample = {"seed": 3, "guidance_scale": 5.0} | sample
    return body_for("sd1", steps=sample.pop("num_inference_steps", 2), seed=sample.pop("seed"), **sample)


# ---------------------------------------------------------------------------------------------- sample keys
@pytest.mark.parametrize(
    "key,a,b",
    [
        ("prompt", "a red circle", "a green square"),
        ("negative_prompt", "", "blurry, dark"),
        ("guidance_scale", 1.5, 9.0),
        ("seed", 1, 2),
    ],
)
def test_sample_keys_that_steer_sampling_change_the_image(engine_server, key, a, b):
    """Same request but for one key: different pixels. The same value twice: the same bytes."""
    _, first = run(engine_server, sd1(**{key: a}))
    _, again = run(engine_server, sd1(**{key: a}))
    _, other = run(engine_server, sd1(**{key: b}))
    assert digest(first) == digest(again)
    assert np.abs(pixels(first) - pixels(other)).max() > 0, f"{key} made no difference"


def test_width_and_height_set_the_canvas_and_the_latent(engine_server):
    frames, result = run(engine_server, sd1(width=96, height=64))
    assert (
        (result["width"], result["height"]) == (96, 64) == tuple(probe(result["path"])[k] for k in ("width", "height"))
    )
    assert frames[0].header["latent"]["shape"] == [1, 4, 8, 12]


def test_num_inference_steps_is_the_number_of_steps_run(engine_server):
    frames, _ = run(engine_server, sd1(num_inference_steps=5))
    assert [f.header["step"] for f in frames if f.type == "progress"] == [1, 2, 3, 4, 5]
    assert {f.header["total"] for f in frames if f.type == "progress"} == {5}


@pytest.mark.parametrize("ext", ["jpg", "webp"])
def test_output_ext_is_the_file_format(engine_server, ext):
    _, result = run(engine_server, sd1(output_ext=ext))
    assert result["ext"] == ext and result["path"].endswith("." + ext)
    from PIL import Image

    with Image.open(result["path"]) as img:
        assert img.format == {"jpg": "JPEG", "webp": "WEBP"}[ext]


def test_num_frames_and_fps_shape_the_video(engine_server):
    """wan21's tiny defaults are 9 frames at 8 fps; ask for others."""
    _, result = run(engine_server, body_for("wan21", steps=2, num_frames=5, fps=12, output_ext="mp4"))
    info = probe(result["path"])
    assert (result["frames"], info["frames"]) == (5, 5)
    assert result["fps"] == 12 and info["fps"] == pytest.approx(12, abs=0.01)


def test_duration_s_is_the_length_of_the_audio(engine_server):
    _, result = run(engine_server, body_for("stable_audio", steps=2, duration_s=1.0))
    assert result["duration_s"] == pytest.approx(1.0, abs=0.05)
    assert probe(result["path"])["duration_s"] == pytest.approx(1.0, abs=0.05)


def test_lyrics_change_the_song(engine_server):
    def song(lyrics):
        _, result = run(engine_server, body_for("ace_step_15", steps=2, seed=4, duration_s=1.0, lyrics=lyrics))
        return result

    assert digest(song("[verse]\nla la la")) != digest(song("[verse]\nhey ho"))
    assert digest(song("[verse]\nhey ho")) == digest(song("[verse]\nhey ho"))


def test_every_control_image_slot_reaches_the_pipeline(engine_server, monkeypatch):
    """qwen_image_edit_plus takes up to three reference images. The tiny model's outputs barely depend on them
    (1e-5), so this checks the chain itself: each slot's upload is resolved into the config the engine
    reports, and the pipeline is called with those images, in slot order."""
    from PIL import Image

    from toolkit.models.archs.qwen_image_edit_plus import QwenImageEditPlusModel

    client = engine_server.client
    assets = [upload_test_image(client, seed=s) for s in range(3)]
    seen = []
    real = QwenImageEditPlusModel.pipeline_kwargs
    monkeypatch.setattr(
        QwenImageEditPlusModel, "pipeline_kwargs", lambda self, gen: seen.append(real(self, gen)) or seen[-1]
    )
    for first in ("ctrl_img", "ctrl_img_1"):
        refs = {first: assets[0]["id"], "ctrl_img_2": assets[1]["id"], "ctrl_img_3": assets[2]["id"]}
        frames, _ = run(engine_server, body_for("qwen_image_edit_plus", steps=2, **refs))
        sample = frames[0].header["config"]["sample"]
        assert [sample[k] for k in ("ctrl_img_1", "ctrl_img_2", "ctrl_img_3")] == [a["path"] for a in assets]
        images = seen[-1]["image"]
        assert len(images) == 3
        for image, asset in zip(images, assets):
            with Image.open(asset["path"]) as source:
                assert np.array_equal(np.asarray(image), np.asarray(source.convert("RGB").resize(image.size)))


# ---------------------------------------------------------------------------------------------- stream keys
def latents(frames) -> list:
    return [f for f in frames if f.type == "latent"]


def test_latents_none_sends_no_latent_frames(engine_server):
    frames, _ = run(engine_server, {**sd1(), "stream": {"latents": "none"}})
    assert latents(frames) == [] and frames[0].header["latent"]["kind"] == "none"


def test_latents_x0_sends_the_predicted_clean_image_not_the_noisy_sample(engine_server):
    """On the first of several steps the raw sample is still mostly noise; x0 is the model's estimate."""
    body = sd1(num_inference_steps=4)
    raw = latents(run(engine_server, {**body, "stream": {"latents": "raw", "every_n_steps": 100}})[0])
    x0 = latents(run(engine_server, {**body, "stream": {"latents": "x0", "every_n_steps": 100}})[0])
    assert [f.header["step"] for f in raw] == [f.header["step"] for f in x0] == [1, 4]  # first and last
    assert not np.array_equal(raw[0].array(), x0[0].array())


def test_every_n_steps_thins_the_latent_frames(engine_server):
    frames, _ = run(engine_server, {**sd1(num_inference_steps=7), "stream": {"every_n_steps": 3}})
    steps = [f.header["step"] for f in latents(frames)]
    assert 7 in steps and set(steps) <= {1, 4, 7}, steps  # a slow reader may drop some; never others
    assert frames[0].header["latent"]["every_n_steps"] == 3


def test_downsample_shrinks_latents_spatially(engine_server):
    frames, _ = run(engine_server, {**sd1(width=64, height=96), "stream": {"downsample": 2}})
    assert frames[0].header["latent"]["shape"] == [1, 4, 6, 4]
    assert {tuple(f.header["shape"]) for f in latents(frames)} == {(1, 4, 6, 4)}


def test_max_frames_caps_the_latent_frames_of_a_video(engine_server):
    body = body_for("wan21", steps=2, num_frames=9)  # 9 frames -> 3 latent frames
    full = run(engine_server, body)[0]
    capped = run(engine_server, {**body, "stream": {"max_frames": 2}})[0]
    assert full[0].header["latent"]["shape"][2] == 3
    assert capped[0].header["latent"]["shape"][2] == 2
    assert {f.header["shape"][2] for f in latents(capped)} == {2}


def test_latent_headers_describe_their_payloads(engine_server):
    """shape, dtype and layout of every latent frame, checked against the bytes that carry it."""
    for arch in ("sd1", "wan21", "stable_audio"):
        frames, _ = run(engine_server, body_for(arch, steps=2))
        start = frames[0].header["latent"]
        for f in latents(frames):
            h = f.header
            assert h["dtype"] == "float16" and h["layout"] == start["layout"] and len(h["shape"]) == len(h["layout"])
            assert h["shape"] == start["shape"]
            assert len(f.payload) == int(np.prod(h["shape"])) * 2
            arr = f.array()
            assert arr.dtype == np.float16 and list(arr.shape) == h["shape"]
            assert np.array_equal(arr.view(np.uint16).ravel(), np.frombuffer(f.payload, "<u2"))


def test_result_headers_describe_their_files(engine_server):
    for arch in ("sd1", "wan21", "stable_audio"):
        _, result = run(engine_server, body_for(arch, steps=2))
        info = probe(result["path"])
        assert result["bytes"] == os.path.getsize(result["path"])
        assert result["kind"] == info["kind"] and result["ext"] == info["ext"]
        for key in ("width", "height", "frames", "sample_rate"):
            if result.get(key) is not None:
                assert result[key] == info[key], key
        if result.get("duration_s") is not None:
            assert result["duration_s"] == pytest.approx(info["duration_s"], abs=0.05)


# ---------------------------------------------------------------------------------------------- engine config keys
def start_engine_job(tmp_path, engine: dict, env: Optional[dict] = None, **process):
    """A real ``python run.py`` InferenceEngine job (``env`` added to this process's environment); returns
    (process, job folder)."""
    db = tmp_path / "aitk.db"
    job_folder = tmp_path / "jobs" / "opts"
    config = {
        "job": "extension",
        "config": {
            "name": "opts",
            "process": [
                {
                    "type": "InferenceEngine",
                    "device": "cpu",
                    "sqlite_db_path": str(db),
                    "training_folder": str(tmp_path / "training"),
                    "engine": engine,
                    **process,
                }
            ],
        },
    }
    path = tmp_path / "engine.json.yaml"
    path.write_text(json.dumps(config))
    proc = subprocess.Popen(
        [sys.executable, "run.py", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, **(env or {})},
    )
    return proc, job_folder


def wait_for_file(path, proc, timeout=120):
    deadline = time.monotonic() + timeout
    while not os.path.exists(path):
        if proc.poll() is not None:
            raise AssertionError(f"the engine exited: {proc.stdout.read()[-3000:]}")
        assert time.monotonic() < deadline, f"{path} did not appear within {timeout} s"
        time.sleep(0.1)


def stop(proc):
    proc.terminate()
    try:
        proc.wait(60)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(10)


def test_engine_config_keys_take_effect(tmp_path):
    """One engine with every folder, budget and start-up key set, each observed doing its job."""
    from extensions_built_in.inference_engine.client import EngineClient

    job_folder, outputs, assets, loras = (tmp_path / n for n in ("job", "outs", "uploads", "loras"))
    loras.mkdir()
    proc, _ = start_engine_job(
        tmp_path,
        {
            "job_folder": str(job_folder),
            "output_folder": str(outputs),
            "assets_folder": str(assets),
            "lora_roots": [str(loras)],
            "model_roots": [str(tmp_path / "models")],
            "warm_up": False,
            "keep_resident_gb": 1,
            "idle_unload_seconds": 10,
            "max_queue": 3,
            "assets_max_gb": 0.5,
            "assets_max_age_hours": 2,
            "vram_budget_gb": 22,
            "memory": "off",
            "memory_quality": "lossless",
            "default_model": {"arch": "sd1", "name_or_path": "tiny:sd1", "dtype": "float32"},
            "models": {"tiny": {"arch": "sd1", "name_or_path": "tiny:sd1", "sample": {"width": 64}}},
        },
    )
    try:
        wait_for_file(job_folder / "engine.json", proc)  # engine.job_folder
        with EngineClient.from_engine_json(str(job_folder / "engine.json"), generation_timeout_s=120) as client:
            health = client.health()
            assert health["device"] == "cpu" and health["warm_up_s"] is None  # warm_up: false
            assert health["max_queue"] == 3  # enforced: test_request_queue.py, test_engine_http.py
            assert health["vram_budget"] == {"requested_gb": 22, "bytes": None}  # CUDA only: test_device.py
            assert health["memory"]["mode"] == "off"  # the planner itself: test_memory_plan.py
            assert health["memory"]["quality"] == "lossless"  # what it does: test_memory_per_card.py
            assert client._json("GET", "/checkpoints")["roots"] == [
                str(tmp_path / "models")
            ]  # listing: test_lora_catalog
            assert (health["assets"]["max_bytes"], health["assets"]["max_age_s"]) == (2**29, 7200)  # test_security
            assert client._json("GET", "/v1/models")["data"][0]["id"] == "tiny"  # engine.models: test_openai_api
            deadline = time.monotonic() + 60
            while client.health()["active"] is None:  # default_model loads at start, before any request
                assert time.monotonic() < deadline, "default_model was not loaded"
                time.sleep(0.2)
            assert client.health()["counters"]["holder_builds"] == 1
            asset = upload_test_image(client)
            assert os.path.dirname(asset["path"]) == str(assets)  # engine.assets_folder
            out = client.generate_wait(body_for("sd1", steps=2))
            assert out["http_status"] == 200 and os.path.dirname(out["result"]["path"]) == str(outputs)
            assert client.health()["counters"]["holder_reuses"] == 1  # the default model served it
            out = client.generate_wait(
                body_for("sd1", steps=2)
                | {
                    "model": {
                        "arch": "sd1",
                        "name_or_path": "tiny:sd1/b",
                        "extras_name_or_path": "tiny:sd1",
                        "dtype": "float32",
                    }
                }
            )
            assert out["http_status"] == 200
            unets = [e for e in client.health()["pool"] if e["subfolder"] == "unet"]
            assert len(unets) == 2  # keep_resident_gb: the idle first UNet stays warm
            refused = client.generate_wait(
                body_for("sd1")
                | {"model": {"arch": "sd1", "name_or_path": "tiny:sd1", "lora_path": str(tmp_path / "x.safetensors")}}
            )
            assert refused["http_status"] == 422 and str(loras) in json.dumps(refused)  # engine.lora_roots
            deadline = time.monotonic() + 30
            while client.health()["pool"]:  # idle_unload_seconds: 10 (2 let a slow CI machine unload the default
                # model between its load and the first request)
                assert time.monotonic() < deadline, "idle_unload_seconds did not unload"
                time.sleep(0.3)
    finally:
        stop(proc)


def test_training_folder_places_the_job_folder_and_warm_up_runs_by_default(tmp_path):
    proc, job_folder = start_engine_job(tmp_path, {})
    engine_json = tmp_path / "training" / "opts" / "engine.json"
    try:
        wait_for_file(engine_json, proc)
        from extensions_built_in.inference_engine.client import EngineClient

        with EngineClient.from_engine_json(str(engine_json)) as client:
            deadline = time.monotonic() + 60
            while client.health()["warm_up_s"] is None:
                assert time.monotonic() < deadline, "warm_up did not run"
                time.sleep(0.2)
            assert client.health()["warm_up_s"] > 0
    finally:
        stop(proc)


# ---------------------------------------------------------------------------------------------- client CLI flags
CLI_FLAGS = [
    (["--arch", "sdxl"], ("model", "arch"), "sdxl"),
    (["--dtype", "bf16"], ("model", "dtype"), "bf16"),
    (["--negative", "blurry"], ("sample", "negative_prompt"), "blurry"),
    (["--width", "96"], ("sample", "width"), 96),
    (["--height", "80"], ("sample", "height"), 80),
    (["--steps", "7"], ("sample", "num_inference_steps"), 7),
    (["--cfg", "2.5"], ("sample", "guidance_scale"), 2.5),
    (["--seed", "9"], ("sample", "seed"), 9),
    (["--frames", "17"], ("sample", "num_frames"), 17),
    (["--fps", "24"], ("sample", "fps"), 24),
    (["--duration", "3.5"], ("sample", "duration_s"), 3.5),
    (["--lyrics", "la"], ("sample", "lyrics"), "la"),
    (["--ext", "jpg"], ("sample", "output_ext"), "jpg"),
    (["--latents", "x0"], ("stream", "latents"), "x0"),
    (["--every", "4"], ("stream", "every_n_steps"), 4),
    (["--max-frames", "2"], ("stream", "max_frames"), 2),
    (["--downsample", "2"], ("stream", "downsample"), 2),
]


@pytest.mark.parametrize("flag,where,value", CLI_FLAGS, ids=[f[0][0] for f in CLI_FLAGS])
def test_every_generate_flag_lands_in_the_request(flag, where, value):
    from extensions_built_in.inference_engine.client import build_body, parser

    args = parser().parse_args(["generate", "--model", "m", "--prompt", "p", *flag])
    assert build_body(args)[where[0]][where[1]] == value


def test_cli_generate_uploads_the_control_image_saves_latents_and_the_file(engine_server, tmp_path):
    """``--ctrl-img`` is uploaded and used, ``--save-latents`` writes a PNG per latent frame, ``--out`` gets
    the result."""
    from PIL import Image

    from extensions_built_in.inference_engine.client import main

    control = tmp_path / "control.png"
    Image.new("RGB", (64, 64), (10, 200, 30)).save(control)
    out = tmp_path / "out"
    code = main(
        [
            "--url",
            engine_server.url,
            "--token",
            engine_server.TOKEN,
            "generate",
            "--arch",
            "flux_kontext",
            "--model",
            "tiny:flux_kontext",
            "--prompt",
            "x",
            "--width",
            "64",
            "--height",
            "64",
            "--steps",
            "3",
            "--ctrl-img",
            str(control),
            "--save-latents",
            "--out",
            str(out),
        ]
    )
    assert code == 0
    names = sorted(os.listdir(out))
    assert len([n for n in names if "_latent_" in n]) >= 1 and any(
        n.endswith(".png") and "_latent_" not in n for n in names
    )
    assert len(os.listdir(engine_server.engine.assets_folder)) >= 1
