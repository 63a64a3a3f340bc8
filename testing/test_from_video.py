"""Video-to-video (toolkit/models/from_video.py): ``sample.init_video`` at a strength on Wan 2.1 (diffusers'
WanVideoToVideoPipeline built with from_pipe) and LTX-Video (its own pipeline, started from the encoded video by
latent_start.py), on their tiny models; every other family refuses it by name.

Tiny checkpoints have random VAEs, so what is checked is the mechanics: the steps the strength leaves run and
progress counts them, strength 1 is text-to-video, and the first step starts on the line from the encoded video
to the run's own noise (the same video whatever the strength)."""

import pathlib

import numpy as np
import pytest
import torch
from PIL import Image

from testing.stream_contract import body_for
from testing.test_models import gen_config
from toolkit.config_modules import ModelConfig
from toolkit.media_info import PARAMETERS, read_info
from toolkit.models import from_image, from_video
from toolkit.models.registry import ARCHS, get_model_class

STEPS = 6
VIDEO_FAMILIES = sorted(a for a in ARCHS if from_image.VID2VID in from_image.tasks_of(get_model_class(a)))


def test_the_families_that_start_from_a_video_are_these():
    assert VIDEO_FAMILIES == ["ltx", "wan21", "wan22_14b", "wan22_5b"]


@pytest.fixture(scope="module")
def clip(tmp_path_factory):
    """Nine random 64x64 frames as an animated WebP (what POST /assets takes) and the same as an mp4."""
    folder = tmp_path_factory.mktemp("clip")
    rng = np.random.default_rng(0)
    frames = [Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)) for _ in range(9)]
    frames[0].save(folder / "clip.webp", save_all=True, append_images=frames[1:], lossless=True, duration=125)
    return folder, frames


def test_frames_are_read_fitted_to_the_request_and_held_at_the_end(clip, tmp_path):
    from toolkit.config_modules import GenerateImageConfig
    from toolkit.media import GeneratedMedia, save_generated

    folder, frames = clip
    read = from_video.read_frames(str(folder / "clip.webp"))
    assert len(read) == 9 and np.array_equal(np.asarray(read[3]), np.asarray(frames[3]))
    fitted = from_video.fitted_frames(str(folder / "clip.webp"), 12, (32, 48))
    assert len(fitted) == 12 and fitted[0].size == (32, 48) and fitted[-1] is fitted[8]  # the last one held
    gen = GenerateImageConfig(
        prompt="p", width=64, height=64, num_frames=9, output_ext="mp4", output_folder=str(tmp_path)
    )
    saved = save_generated(GeneratedMedia("video", frames=np.stack([np.asarray(f) for f in frames]), fps=8), gen, 0, 1)
    assert len(from_video.read_frames(saved["path"])) == 9  # an mp4 the engine wrote reads back through PyAV
    (tmp_path / "bad.mp4").write_bytes(b"not a video")
    assert "not a readable video" in from_video.check(str(tmp_path / "bad.mp4"))


@pytest.fixture(scope="module", params=VIDEO_FAMILIES)
def model(request, tiny_cache):
    m = get_model_class(request.param)("cpu", ModelConfig(name_or_path=f"tiny:{request.param}", arch=request.param))
    m.load_model()
    return m


def test_video_to_video_runs_the_steps_its_strength_leaves_from_the_video(model, clip, tmp_path):
    folder, _ = clip
    video = str(folder / "clip.webp")
    first, steps = {}, []

    def hook(step):
        steps.append((step.step, step.num_steps))
        if step.step == 0:
            first.update(x=step.raw.input_sample.double().clone(), sigma=float(step.raw.sigma))

    model.sample_step_hook = hook
    try:
        parts = dict(model.parts)
        text_to_video = model.generate_media(gen_config(model, tmp_path, num_inference_steps=STEPS)).frames
        noise = first["x"]
        starts = {}
        for strength in (0.3, 0.6):
            steps.clear()
            out = model.generate_media(
                gen_config(model, tmp_path, num_inference_steps=STEPS, init_video=video, strength=strength)
            ).frames
            ran = int(STEPS * strength)
            assert steps[-1] == (ran - 1, ran) and out.shape == text_to_video.shape
            starts[strength] = (first["x"], first["sigma"])
        same = model.generate_media(
            gen_config(model, tmp_path, num_inference_steps=STEPS, init_video=video, strength=1)
        )
        assert np.array_equal(same.frames, text_to_video)  # nothing of the video left: text-to-video
        assert all(model.parts[role] is module for role, module in parts.items())  # from_pipe: nothing loaded
    finally:
        model.sample_step_hook = None
    # the first step lies on the line from one encoded video to the text-to-video run's own noise
    x0 = {s: (x - sigma * noise) / (1 - sigma) for s, (x, sigma) in starts.items()}
    assert starts[0.6][1] > starts[0.3][1]
    assert torch.allclose(x0[0.3], x0[0.6], atol=1e-4) and x0[0.3].abs().mean() > 1e-3
    if model.vid2vid_pipeline:
        assert type(model._task_pipelines[from_image.VID2VID]).__name__ == model.vid2vid_pipeline


def test_the_engine_takes_an_uploaded_clip_and_writes_it_into_the_file(engine_server, clip):
    folder, _ = clip
    asset = engine_server.client.upload_asset(str(folder / "clip.webp"))
    answer = engine_server.client.generate_wait(body_for("wan21", init_video=asset["id"], strength=0.5))
    assert "result" in answer, answer
    result = answer["result"]
    assert result["kind"] == "video" and (result["width"], result["height"]) == (64, 64)
    text = read_info(result["path"])[PARAMETERS]
    assert "Denoising strength: 0.5" in text and f"Init video: {asset['id']}.webp " in text


def test_an_mp4_upload_starts_a_video_request_and_is_refused_as_an_image(engine_server, clip, tmp_path):
    import httpx

    from toolkit.config_modules import GenerateImageConfig
    from toolkit.media import GeneratedMedia, save_generated

    _, frames = clip
    gen = GenerateImageConfig(prompt="p", width=64, height=64, num_frames=9, output_ext="mp4")
    gen.output_folder = str(tmp_path)
    mp4 = save_generated(GeneratedMedia("video", frames=np.stack([np.asarray(f) for f in frames]), fps=8), gen, 0, 1)
    client = engine_server.client
    asset = client.upload_asset(mp4["path"])
    assert (asset["format"], asset["frames"], asset["width"]) == ("mp4", 9, 64)
    answer = client.generate_wait(body_for("wan21", init_video=asset["id"], strength=0.5))
    assert answer.get("result", {}).get("kind") == "video", answer
    headers = {"Authorization": f"Bearer {engine_server.TOKEN}"}
    r = httpx.post(f"{engine_server.url}/generate", json=body_for("sd1", init_image=asset["id"]), headers=headers)
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "init_image" and "init_video" in r.text
    data = pathlib.Path(mp4["path"]).read_bytes()
    (tmp_path / "cut.mp4").write_bytes(data[: len(data) // 2])
    with open(tmp_path / "cut.mp4", "rb") as f:
        r = httpx.post(f"{engine_server.url}/assets", files={"file": ("cut.mp4", f)}, headers=headers)
    assert r.status_code == 422 and "not a readable video" in r.text, r.text


@pytest.mark.parametrize(
    "arch,sample,field,says",
    [
        ("hunyuan_video", {}, "init_video", "hunyuan_video cannot start from a video (video-to-video): diffusers has"),
        ("wan22_14b_i2v", {}, "init_video", "need an image's embedding"),
        ("sd1", {}, "init_video", "an image family makes no video"),
        ("wan21", {"strength": 0}, "strength", "keeps the video as it is"),
        ("wan21", {"init_image": "x"}, "init_image", "takes no init_image"),
        ("wan22_5b", {"ctrl_img": "x"}, "ctrl_img", "takes no ctrl_img"),
    ],
)
def test_bad_start_videos_are_422s_naming_the_field(engine_server, clip, arch, sample, field, says):
    import httpx

    folder, _ = clip
    asset = engine_server.client.upload_asset(str(folder / "clip.webp"))
    r = httpx.post(
        f"{engine_server.url}/generate",
        json=body_for(arch, init_video=asset["id"], **sample),
        headers={"Authorization": f"Bearer {engine_server.TOKEN}"},
        timeout=60,
    )
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == field and says in r.text, r.text
