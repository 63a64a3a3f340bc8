"""Video and audio families on their tiny checkpoints: latent previews match ComfyUI's tables, packed latents
unpack like the pipelines do, LTX-2 writes an mp4 with sound, audio durations are what was asked for, image-to-
video families follow their control image, and the Wan family shares one text encoder."""

import numpy as np
import pytest
import torch

from extensions_built_in.inference_engine.latent_preview import project_rgb
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.media_probe import audio_stream_duration, probe
from toolkit.models import tiny
from toolkit.models.registry import get_model_class

STEPS = 3

# ------------------------------------------------------------------ anchors (comfy/latent_formats.py)
# Spot rows (channel -> R, G, B) and biases typed in from the anchors tables, one latent space per entry.
ANCHORS = {
    "Wan22": dict(
        channels=48,
        bias=(0.0317, -0.0878, -0.1388),
        rows={
            0: (0.0119, 0.0103, 0.0046),
            21: (0.0390, 0.0670, 0.2863),
            39: (-0.3441, -0.3543, -0.2008),
            47: (-0.0837, 0.0168, 0.0055),
        },
    ),
    "Wan21": dict(
        channels=16,
        bias=(-0.1835, -0.0868, -0.3360),
        rows={0: (-0.1299, -0.1692, 0.2932), 6: (-0.3477, -0.4059, -0.2925), 15: (0.1984, 0.0913, 0.1861)},
    ),
    "LTXV": dict(
        channels=128,
        bias=(-0.0571, -0.1657, -0.2512),
        rows={
            0: (1.1202e-02, -6.3815e-04, -1.0021e-02),
            37: (-1.5247e-01, -2.1437e-01, -2.1843e-01),
            127: (-1.4605e-02, -6.7032e-03, 3.9675e-03),
        },
    ),
    "LTXAV": dict(
        channels=128,
        bias=(-0.347892, -0.363814, -0.370287),
        rows={
            0: (0.001135, -0.010555, -0.004925),
            6: (-0.036369, -0.046631, -0.057898),
            127: (-0.019355, -0.021055, -0.021919),
        },
    ),
    "HunyuanVideo15": dict(
        channels=32,
        bias=(0.0456, -0.0202, -0.0644),
        rows={0: (0.0568, -0.0521, -0.0131), 9: (0.0393, 0.0944, 0.1131), 31: (0.0005, -0.0106, 0.0242)},
    ),
    "MiniMaxH3Video": dict(
        channels=24,
        bias=(0.057426, -0.022078, -0.071449),
        rows={
            0: (-0.018555, 0.024344, -0.017536),
            9: (0.531539, 0.548819, 0.624404),
            23: (0.004224, 0.017284, 0.027196),
        },
    ),
    "HunyuanVideo": dict(
        channels=16,
        bias=(0.0259, -0.0192, -0.0761),
        rows={0: (-0.0395, -0.0331, 0.0445), 12: (-0.2315, -0.1920, -0.1355), 15: (0.0249, -0.0469, -0.1703)},
    ),
}

# arch -> (anchors table, one-hot channel, value, expected RGB of that pixel). The expected bytes were worked
# out by hand: round(clip((value * row + bias + 1) / 2, 0, 1) * 255), e.g. Wan22 channel 39 at 2.0, red:
# (2 * -0.3441 + 0.0317 + 1) / 2 = 0.17175 -> 43.8 -> 44.
PROJECTIONS = {
    "wan22_5b": ("Wan22", 39, 2.0, (44, 26, 59)),
    "wan22_14b": ("Wan21", 6, 2.0, (15, 13, 10)),
    "wan22_14b_i2v": ("Wan21", 6, 2.0, (15, 13, 10)),
    "wan21_i2v": ("Wan21", 6, 2.0, (15, 13, 10)),
    "ltx": ("LTXV", 37, 3.0, (62, 24, 12)),
    "ltx2": ("LTXAV", 6, 4.0, (65, 57, 51)),
    "ltx2.3": ("LTXAV", 6, 4.0, (65, 57, 51)),  # ComfyUI previews every LTX-2.x AV checkpoint with LTXAV
    "ltx2.5": ("LTXAV", 6, 4.0, (65, 57, 51)),
    # (0.531539 + 0.057426 + 1) / 2 = 0.79448 -> 202.6 -> 203; (0.548819 - 0.022078 + 1) / 2 -> 195; blue -> 198
    "minimax_h3": ("MiniMaxH3Video", 9, 1.0, (203, 195, 198)),
    "hunyuan_video": ("HunyuanVideo", 12, 2.0, (72, 76, 83)),
    # (4 * 0.0393 + 0.0456 + 1) / 2 = 0.6014 -> 153; (4 * 0.0944 - 0.0202 + 1) / 2 -> 173; blue -> 177
    "hunyuan_video15": ("HunyuanVideo15", 9, 4.0, (153, 173, 177)),
}
PACKED = ["ltx", "ltx2", "ltx2.3", "ltx2.5"]
I2V = ["wan21_i2v", "wan22_14b_i2v", "wan22_5b", "ltx2", "ltx2.3", "ltx2.5", "minimax_h3"]
OPTIONAL_I2V = [a for a in I2V if not get_model_class(a).control_images]  # image or text to video


@pytest.mark.parametrize("arch", sorted(PROJECTIONS))
def test_declared_factors_are_the_anchors_table(arch):
    table = ANCHORS[PROJECTIONS[arch][0]]
    latent = get_model_class(arch).latent
    assert latent.layout == "BCFHW" and latent.channels == table["channels"]
    assert len(latent.rgb_factors) == table["channels"]
    assert latent.factors_source == f"ComfyUI {PROJECTIONS[arch][0]}"
    assert tuple(latent.rgb_bias) == table["bias"]
    for row, rgb in table["rows"].items():
        assert tuple(latent.rgb_factors[row]) == rgb, (arch, row)


@pytest.mark.parametrize("arch", sorted(PROJECTIONS))
def test_projecting_a_one_hot_latent_frame_gives_the_hand_computed_pixel(arch):
    name, channel, value, expected = PROJECTIONS[arch]
    latent = get_model_class(arch).latent
    x = np.zeros((1, latent.channels, 2, 3, 4), dtype=np.float32)  # B, C, F, H, W
    x[0, channel, 0, 1, 2] = value
    x[0, (channel + 1) % latent.channels, 1] = 5.0  # frame 1 must not leak into frame 0's preview
    rgb = project_rgb(x, latent.rgb_factors, latent.rgb_bias)
    assert rgb.shape == (3, 4, 3)
    assert tuple(int(v) for v in rgb[1, 2]) == expected
    # Every other pixel is the bias alone.
    bias = ANCHORS[name]["bias"]
    assert tuple(int(v) for v in rgb[0, 0]) == tuple(round((b + 1) / 2 * 255) for b in bias)


def test_wan_22_5b_and_a14b_use_different_latent_spaces():
    assert get_model_class("wan22_5b").latent.channels == 48
    assert get_model_class("wan22_5b").latent.spatial_factor == 16
    assert get_model_class("wan22_14b").latent.channels == 16
    assert get_model_class("wan22_14b").latent.rgb_factors == get_model_class("wan21").latent.rgb_factors


# ------------------------------------------------------------------ loaded tiny models
_LOADED = {}


def loaded(arch):
    if arch not in _LOADED:
        m = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
        m.load_model()
        _LOADED[arch] = m
    return _LOADED[arch]


@pytest.fixture(scope="module", autouse=True)
def _free_models(tiny_cache):
    yield
    _LOADED.clear()


def gen_config(model, folder, seed=5, **overrides):
    kw = dict(
        tiny.sample(model.arch),
        prompt="a red circle on a blue background",
        num_inference_steps=STEPS,
        guidance_scale=4.0,
        seed=seed,
        output_folder=str(folder),
    )
    kw.update(overrides)
    return GenerateImageConfig(**kw)


def write_png(path, seed, size=(80, 48)):
    from PIL import Image

    rng = np.random.default_rng(seed)
    Image.fromarray(rng.integers(0, 256, (size[1], size[0], 3), dtype=np.uint8)).save(path)
    return str(path)


# ------------------------------------------------------------------ packed latents
@pytest.mark.parametrize("arch", PACKED)
@pytest.mark.parametrize("size", [(64, 64, 9), (96, 64, 17)])
def test_packed_latents_unpack_like_the_pipeline(arch, size, tmp_path):
    from diffusers import LTX2Pipeline, LTXPipeline

    model = loaded(arch)
    width, height, frames = size
    gen = gen_config(model, tmp_path, width=width, height=height, num_frames=frames)
    model.prepare_gen_config(gen)
    shape = model.latent_shape(gen)
    _, c, f, h, w = shape
    assert (f, h, w) == ((frames - 1) // 8 + 1, height // 32, width // 32)
    packed = torch.randn(1, f * h * w, c, generator=torch.Generator().manual_seed(0))
    pipe_cls = LTXPipeline if arch == "ltx" else LTX2Pipeline
    ours = model.unpack_latents(packed, gen)
    theirs = pipe_cls._unpack_latents(
        packed, f, h, w, model.pipeline.transformer_spatial_patch_size, model.pipeline.transformer_temporal_patch_size
    )
    assert tuple(ours.shape) == shape
    assert torch.equal(ours, theirs)
    assert torch.equal(pipe_cls._pack_latents(ours), packed)  # and it is the inverse of the pipeline's packing


def test_ltx2_last_streamed_latents_are_the_pipelines_own_latent_output(tmp_path):
    model = loaded("ltx2")
    seen = []
    model.sample_step_hook = lambda s: seen.append(s.latents().clone())
    try:
        model.generate_images([gen_config(model, tmp_path)])
    finally:
        model.sample_step_hook = None
    gen = gen_config(model, tmp_path)
    kw = model.pipeline_kwargs(gen)
    out = model.pipeline(**kw, generator=torch.Generator().manual_seed(gen.seed), output_type="latent")
    # output_type="latent" unpacks and denormalises; the tiny VAE's stats are identity (mean 0, std 1, scale 1).
    assert torch.allclose(seen[-1], out.frames, atol=1e-6)


def test_minimax_h3_last_streamed_latents_are_the_pipelines_unpacked_latents(tmp_path):
    """The step hook sees MiniMax-H3's packed video rows; unpacked they are the pipeline's own after-denoise latents
    (BCFHW), and the denoised estimate is x_t + sigma * v (its velocity points at the data)."""
    model = loaded("minimax_h3")
    seen = []
    model.sample_step_hook = lambda s: seen.append((s.latents().clone(), s.latents("x0").clone()))
    try:
        model.generate_images([gen_config(model, tmp_path)])
    finally:
        model.sample_step_hook = None
    gen = gen_config(model, tmp_path)
    model.prepare_gen_config(gen)
    kw = model.pipeline_kwargs(gen)
    out = model.pipeline(**kw, generator=torch.Generator().manual_seed(gen.seed), output="latents")
    assert len(seen) == STEPS and tuple(out.shape) == model.latent_shape(gen)
    assert torch.equal(seen[-1][0], out)
    # The last step lands on sigma 0, so what it returns is the estimate it made (flow matching's sign would put
    # the estimate as far on the other side of x_t).
    assert torch.allclose(seen[-1][1], seen[-1][0], atol=1e-5) and not torch.allclose(seen[-1][0], seen[-2][0])


# ------------------------------------------------------------------ media
# Video families with a sound track: LTX-2's vocoder writes 24 kHz, LTX-2.3's and 2.5's 48, MiniMax-H3's VAE 32.
SOUND = {"ltx2": 24000, "ltx2.3": 48000, "ltx2.5": 48000, "minimax_h3": 32000}


@pytest.mark.parametrize("arch", sorted(SOUND))
def test_video_with_sound_writes_an_mp4_with_an_aac_audio_stream(arch, tmp_path):
    import av

    model = loaded(arch)
    [result] = model.generate_images([gen_config(model, tmp_path)])
    info = probe(result["path"])
    assert info["ext"] == "mp4" and info["has_audio"] is True
    assert (info["width"], info["height"], info["frames"]) == (64, 64, tiny.sample(arch)["num_frames"])
    assert info["sample_rate"] == SOUND[arch]
    with av.open(result["path"]) as container:
        assert [s.codec_context.name for s in container.streams.audio] == ["aac"]
    video_s = info["frames"] / info["fps"]
    # The track covers the clip to within one audio latent frame (LTX: 25 per second, MiniMax-H3: 40), and never
    # outlasts it by more than the AAC encoder's last frame.
    assert audio_stream_duration(result["path"]) == pytest.approx(video_s, abs=1 / 25 + 1024 / info["sample_rate"])


def test_ltx25_samples_the_full_dit_with_the_scheduler_shifts_back_on():
    """LTX-2.5's folders hold the distilled DiT in transformer/ (model_index's) and the full one in
    transformer_full/, with a scheduler set for distilled sigmas. The family, as AI Toolkit, samples the full DiT
    with dynamic shifting and the terminal shift."""
    import json
    import os

    from diffusers import LTX2VideoTransformer3DModel

    from toolkit.models.tiny import tiny_checkpoint

    model = loaded("ltx2.5")
    folder = tiny_checkpoint("ltx2.5")
    ours = list(model.pipeline.transformer.parameters())
    for subfolder, same in (("transformer_full", True), ("transformer", False)):
        theirs = LTX2VideoTransformer3DModel.from_pretrained(folder, subfolder=subfolder).parameters()
        assert all(torch.equal(a, b) for a, b in zip(ours, theirs)) is same, subfolder
    with open(os.path.join(folder, "scheduler", "scheduler_config.json")) as f:
        shipped = json.load(f)
    assert shipped["use_dynamic_shifting"] is False and shipped["shift_terminal"] is None
    config = model.pipeline.scheduler.config
    assert config.use_dynamic_shifting is True and config.shift_terminal == 0.1


AUDIO = ["stable_audio", "ace_step_15", "ace_step_15_xl"]


@pytest.mark.parametrize("arch", AUDIO)
@pytest.mark.parametrize("duration", [1.5, 2.0])
def test_audio_has_the_requested_duration(arch, duration, tmp_path):
    model = loaded(arch)
    [result] = model.generate_images([gen_config(model, tmp_path, duration_s=duration)])
    info = probe(result["path"])
    one_latent_frame = model.latent.temporal_factor / info["sample_rate"]
    assert info["kind"] == "audio"
    assert info["duration_s"] == pytest.approx(duration, abs=one_latent_frame)


def test_stable_audio_streams_its_whole_window_as_blc(tmp_path):
    model = loaded("stable_audio")
    seen = []
    model.sample_step_hook = lambda s: seen.append((tuple(s.raw.sample.shape), tuple(s.latents().shape)))
    try:
        gen = gen_config(model, tmp_path, duration_s=1.0)
        model.generate_images([gen])
    finally:
        model.sample_step_hook = None
    window = model.pipeline.transformer.config.sample_size
    assert seen[0] == ((1, 64, window), (1, window, 64)) and model.latent_shape(gen) == (1, window, 64)


def test_stable_audio_clamps_durations_longer_than_its_window(tmp_path):
    model = loaded("stable_audio")
    gen = gen_config(model, tmp_path, duration_s=600.0)
    model.prepare_gen_config(gen)
    assert gen.duration_s <= model.max_duration_s() < gen.duration_s + 0.01
    # Unloaded (how the engine announces the latent shape) it reads the window from the checkpoint's config...
    cls = get_model_class("stable_audio")
    unloaded = cls("cpu", ModelConfig(name_or_path="tiny:stable_audio", arch="stable_audio"))
    assert unloaded.latent_shape(gen) == model.latent_shape(gen)
    # ...and without a readable config (a hub id while offline) assumes Stable Audio Open 1.0's 47.55 s.
    offline = cls("cpu", ModelConfig(name_or_path="nobody/not-a-stable-audio-repo", arch="stable_audio"))
    gen = gen_config(offline, tmp_path, duration_s=600.0)
    offline.prepare_gen_config(gen)
    assert offline.latent_shape(gen) == (1, 1024, 64)
    assert gen.duration_s == pytest.approx(47.55, abs=0.01)  # 1024 x 2048 / 44100


# ------------------------------------------------------------------ image to video
def generate_frames(model, folder, **overrides):
    """The frames the family hands to the writer (uint8 F x H x W x 3): compared before lossy encoding, so an
    mp4 encoder's own run-to-run differences cannot mask or fake a difference in what the model produced."""
    captured = []
    to_media = model.to_media
    model.to_media = lambda output, gen: captured.append(to_media(output, gen)) or captured[-1]
    try:
        [result] = model.generate_images([gen_config(model, folder, **overrides)])
    finally:
        del model.to_media  # back to the class's method
    assert probe(result["path"])["frames"] == len(captured[0].frames)
    return captured[0].frames


@pytest.mark.parametrize("arch", I2V)
def test_image_to_video_follows_the_control_image(arch, tmp_path):
    model = loaded(arch)
    a = write_png(tmp_path / "a.png", seed=1)
    b = write_png(tmp_path / "b.png", seed=2, size=(64, 64))
    frames_a = generate_frames(model, tmp_path / "a", ctrl_img=a)
    frames_b = generate_frames(model, tmp_path / "b", ctrl_img=b)
    frames_a2 = generate_frames(model, tmp_path / "a2", ctrl_img=a)
    assert frames_a.shape == frames_b.shape == (tiny.sample(arch)["num_frames"], 64, 64, 3)
    assert not np.array_equal(frames_a, frames_b)
    assert np.array_equal(frames_a, frames_a2)


@pytest.mark.parametrize("arch", [a for a in I2V if get_model_class(a).control_images])
def test_image_to_video_without_a_control_image_says_so(arch, tmp_path):
    model = loaded(arch)
    with pytest.raises(ValueError, match="control image"):
        model.generate_images([gen_config(model, tmp_path)])


@pytest.mark.parametrize("arch", OPTIONAL_I2V)
def test_optional_control_image_switches_text_to_video_to_image_to_video(arch, tmp_path):
    model = loaded(arch)
    t2v = generate_frames(model, tmp_path / "t2v")
    i2v = generate_frames(model, tmp_path / "i2v", ctrl_img=write_png(tmp_path / "c.png", seed=3))
    assert t2v.shape == i2v.shape and not np.array_equal(t2v, i2v)
    assert model.pipeline.__class__.__name__ == model.pipeline_class  # the holder's pipeline is untouched


# ------------------------------------------------------------------ Wan 2.2 A14B experts, sharing
def test_wan22_14b_steps_through_both_experts(tmp_path):
    model = loaded("wan22_14b")
    timesteps = []
    model.sample_step_hook = lambda s: timesteps.append(s.timestep)
    try:
        model.generate_images([gen_config(model, tmp_path)])
    finally:
        model.sample_step_hook = None
    boundary = model.pipeline.config.boundary_ratio * model.pipeline.scheduler.config.num_train_timesteps
    assert len(timesteps) == STEPS
    assert any(t >= boundary for t in timesteps) and any(t < boundary for t in timesteps)
    experts = (model.pipeline.transformer, model.pipeline.transformer_2)
    assert not torch.equal(next(experts[0].parameters()), next(experts[1].parameters()))


WAN_UMT5 = ["wan21", "wan21_i2v", "wan22_5b", "wan22_14b", "wan22_14b_i2v"]


def _tensors(folder):
    import glob
    import os

    from safetensors.torch import load_file

    out = {}
    for f in sorted(glob.glob(os.path.join(folder, "*.safetensors"))):
        out.update(load_file(f))
    return out


def test_wan_families_share_one_text_encoder_and_variants_only_change_the_denoiser():
    import os

    from toolkit.models.tiny import tiny_checkpoint

    reference = _tensors(os.path.join(tiny_checkpoint("wan21"), "text_encoder"))
    for arch in WAN_UMT5[1:]:
        te = _tensors(os.path.join(tiny_checkpoint(arch), "text_encoder"))
        assert te.keys() == reference.keys() and all(torch.equal(te[k], reference[k]) for k in te), arch
    base, variant = tiny_checkpoint("wan22_5b"), tiny_checkpoint("wan22_5b/b")
    for sub, same in (("text_encoder", True), ("vae", True), ("transformer", False)):
        a, b = _tensors(os.path.join(base, sub)), _tensors(os.path.join(variant, sub))
        assert all(torch.equal(a[k], b[k]) for k in a) is same, sub


# ------------------------------------------------------------------ HunyuanVideo 1.5 specifics
def test_hunyuan_video15_guidance_is_the_requests_own(tmp_path):
    """Its pipeline takes guidance from a guider component, not a call argument: each request sets it."""
    model = loaded("hunyuan_video15")

    def frames(scale, sub):
        [result] = model.generate_images([gen_config(model, tmp_path / sub, guidance_scale=scale)])
        assert model.pipeline.guider.guidance_scale == scale
        return probe(result["path"])["frames"], open(result["path"], "rb").read()

    one, cfg, cfg_again = frames(1.0, "a"), frames(6.0, "b"), frames(6.0, "c")
    assert one[0] == cfg[0] == 9
    assert cfg[1] == cfg_again[1] and cfg[1] != one[1]


def test_hunyuan_video15_reads_quoted_text_with_byt5(tmp_path):
    model = loaded("hunyuan_video15")
    encoder = model.parts["text_encoder_2"]
    calls = {"n": 0}
    original = encoder.forward

    def counting(*args, **kwargs):
        calls["n"] += 1
        return original(*args, **kwargs)

    encoder.forward = counting
    try:
        model.generate_images([gen_config(model, tmp_path / "plain", num_inference_steps=1)])
        plain = calls["n"]
        model.generate_images(
            [gen_config(model, tmp_path / "glyph", num_inference_steps=1, prompt='a shop sign that reads "OPEN"')]
        )
    finally:
        del encoder.forward
    assert plain == 0 and calls["n"] >= 1  # only glyph text (in quotes) goes through ByT5
