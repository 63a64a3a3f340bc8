"""The model layer on real tiny checkpoints: loading through from_pretrained, the step hook, cancel, replay."""

import copy
import inspect

import numpy as np
import pytest
import torch

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.media_probe import probe
from toolkit.models import tiny
from toolkit.models.registry import ARCHS, get_model_class
from toolkit.sample_step_hook import GenerationCancelled, step_hook

STEPS = 3

# The families the product ships, written out: every test parametrized over ARCHS would go quietly green if
# one vanished from the registry, so its disappearance (or an unreviewed addition) fails here.
FAMILIES = {
    "image": [
        "anima",
        "auraflow",
        "chroma",
        "chroma_radiance",
        "cogview4",
        "ernie_image",
        "flex2",
        "flux",
        "flux2",
        "flux2_klein_4b",
        "flux2_klein_9b",
        "flux_kontext",
        "hidream",
        "ideogram4",
        "krea2",
        "lumina2",
        "nucleus_image",
        "pixart",
        "pixart_sigma",
        "prx_pixel",
        "qwen_image",
        "qwen_image_edit",
        "qwen_image_edit_plus",
        "sd1",
        "sd2",
        "sd3",
        "sdxl",
        "ssd",
        "vega",
        "zimage",
        "zimage_l2p",
    ],
    "video": [
        "hunyuan_video",
        "hunyuan_video15",
        "ltx",
        "ltx2",
        "ltx2.3",
        "ltx2.5",
        "minimax_h3",
        "wan21",
        "wan21_i2v",
        "wan22_14b",
        "wan22_14b_i2v",
        "wan22_5b",
    ],
    "audio": ["ace_step_15", "ace_step_15_xl", "stable_audio"],
}


def test_the_registry_holds_exactly_the_shipped_families_by_modality():
    assert sorted(ARCHS) == sorted(a for archs in FAMILIES.values() for a in archs)
    for modality, archs in FAMILIES.items():
        assert [a for a in archs if get_model_class(a).modality != modality] == []


@pytest.fixture(scope="module", params=sorted(ARCHS))
def model(request, tiny_cache):
    arch = request.param
    m = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    m.load_model()
    return m


def control_image_file(folder, index: int) -> str:
    """A deterministic noise PNG standing in for a user's control image (edit / image-to-video families)."""
    from PIL import Image

    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"control_{index}.png"
    if not path.exists():
        pixels = np.random.default_rng(index).integers(0, 256, (64, 64, 3), dtype=np.uint8)
        Image.fromarray(pixels).save(path)
    return str(path)


def gen_config(model, folder, seed=11, **overrides) -> GenerateImageConfig:
    kw = dict(
        tiny.sample(model.arch),
        prompt="a red circle on a blue background",
        num_inference_steps=STEPS,
        guidance_scale=4.0,
        seed=seed,
        output_folder=str(folder),
    )
    for i in range(model.control_images):
        kw["ctrl_img" if i == 0 else f"ctrl_img_{i + 1}"] = control_image_file(folder.parent / "controls", i)
    kw.update(overrides)
    return GenerateImageConfig(**kw)


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_every_arch_declares_what_clients_need(arch):
    cls = get_model_class(arch)
    info = cls.describe()
    assert info["modality"] in ("image", "video", "audio")
    sample = tiny.sample(arch)
    assert sample and sample["output_ext"] in cls.output_exts
    assert cls.defaults["output_ext"] in cls.output_exts
    factors = info["latent"]["rgb_factors"]
    assert factors is None or (len(factors) == info["latent"]["channels"] and all(len(r) == 3 for r in factors))


def test_hook_fires_once_per_step_with_declared_latent_shape(model, tmp_path):
    seen = []
    model.sample_step_hook = lambda s: seen.append((s.step, s.num_steps, s.latents(), s.latents("x0")))
    gen = gen_config(model, tmp_path)
    try:
        [result] = model.generate_images([gen])
    finally:
        model.sample_step_hook = None
    assert [s[0] for s in seen] == list(range(STEPS))
    assert all(s[1] == STEPS for s in seen)
    declared = model.latent_shape(gen)
    assert len(declared) == len(model.latent.layout)
    for _, _, latents, x0 in seen:
        assert tuple(latents.shape) == declared
        assert tuple(x0.shape) == declared
        assert torch.isfinite(latents).all() and torch.isfinite(x0).all()
    assert result["kind"] == model.modality


def test_cancel_then_same_seed_is_byte_identical_to_uncancelled(model, tmp_path):
    reference = model.generate_images([gen_config(model, tmp_path / "a")])[0]

    def cancel_at_step_1(step):
        if step.step == 1:
            raise GenerationCancelled()

    model.sample_step_hook = cancel_at_step_1
    with pytest.raises(GenerationCancelled):
        model.generate_images([gen_config(model, tmp_path / "cancelled")])
    model.sample_step_hook = None
    assert not (tmp_path / "cancelled").exists() or not any(p.is_file() for p in (tmp_path / "cancelled").iterdir())

    replay = model.generate_images([gen_config(model, tmp_path / "b")])[0]
    with open(reference["path"], "rb") as a, open(replay["path"], "rb") as b:
        assert a.read() == b.read()


def test_different_seeds_differ(model, tmp_path):
    a = model.generate_images([gen_config(model, tmp_path / "a", seed=1)])[0]
    b = model.generate_images([gen_config(model, tmp_path / "b", seed=2)])[0]
    with open(a["path"], "rb") as fa, open(b["path"], "rb") as fb:
        assert fa.read() != fb.read()


def test_every_listed_sampler_and_schedule_generates_and_the_checkpoints_own_comes_back(model, tmp_path):
    """Each sampler ``GET /models`` lists for the family, on each schedule type it lists, runs on the resident
    pipeline: no part reloads, the checkpoint's scheduler is back after every request, the checkpoint's own
    sampler asked for by name is the default run, and every other one takes steps of its own."""
    from toolkit import samplers

    pipeline = model.get_generation_pipeline()
    own, parts = pipeline.scheduler, dict(model.parts)

    def run(**chosen):  # 4 steps: at 3, beta's symmetric sigmas fall where the default's linear ones do
        gen = gen_config(model, tmp_path, num_inference_steps=max(4, model.min_steps), **chosen)
        media = model.generate_media(gen)
        out = next(a for a in (media.image, media.frames, media.audio) if a is not None)
        return gen, np.asarray(out)

    default, reference = run()
    own_name = samplers.name_of(own, type(model))
    assert default.sampler == own_name and default.scheduler == "default"
    same_steps, own_steps = [], []
    for listed in samplers.samplers_for(type(model)):
        for schedule in listed.schedules:
            gen, out = run(sampler=listed.name, scheduler=schedule)
            assert (gen.sampler, gen.scheduler) == (listed.name, schedule)
            assert np.isfinite(out.astype(np.float64)).all() and pipeline.scheduler is own
            if (listed.name, schedule) == (own_name, "default"):
                own_steps.append(np.array_equal(out, reference))
            elif np.array_equal(out, reference):
                same_steps.append((listed.name, schedule))
    assert all(parts[role] is module for role, module in model.parts.items())
    assert own_steps == [True]
    assert same_steps == []


def test_outputs_have_requested_size_frames_or_duration(model, tmp_path):
    gen = gen_config(model, tmp_path)
    [result] = model.generate_images([gen])
    info = probe(result["path"])
    assert info["kind"] == model.modality
    if model.modality == "image":
        assert (info["width"], info["height"]) == (64, 64)
    elif model.modality == "video":
        assert (info["width"], info["height"], info["frames"]) == (64, 64, tiny.sample(model.arch)["num_frames"])
    else:
        assert info["duration_s"] == pytest.approx(2.0, abs=1 / 25)


def test_pixels_made_8_bit_on_the_device_are_the_host_path_s_bytes(model, tmp_path):
    """toolkit/pixels.py: an image or video family's pipeline is asked for ``"pt"`` and its pixels become 8-bit
    where they were made; they must be the very bytes ``"np"`` and the host's conversion give (LTX-2's sound track
    too). Audio families make no pixels."""
    outputs = []
    to_media = model.to_media
    model.to_media = lambda output, gen: outputs.append(output) or to_media(output, gen)
    try:
        on_device = model.generate_media(gen_config(model, tmp_path / "pt"))
        model.pixel_output = "np"  # this instance only
        on_host = model.generate_media(gen_config(model, tmp_path / "np"))
    finally:
        del model.to_media
        vars(model).pop("pixel_output", None)
    if model.modality != "audio":
        pixels = [output.frames[0] if model.modality == "video" else output.images[0] for output in outputs]
        assert [isinstance(p, torch.Tensor) for p in pixels] == [model.pixel_output == "pt", False]
    for name in ("image", "frames", "audio"):
        a, b = getattr(on_device, name, None), getattr(on_host, name, None)
        assert (a is None) == (b is None) and (a is None or (a.dtype == b.dtype and np.array_equal(a, b))), name
    assert on_device.kind == model.modality


def test_rng_state_is_restored_after_generation_and_after_cancel(model, tmp_path):
    torch.manual_seed(1234)
    before = torch.get_rng_state()
    model.generate_images([gen_config(model, tmp_path)])
    assert torch.equal(before, torch.get_rng_state())

    model.sample_step_hook = lambda s: (_ for _ in ()).throw(GenerationCancelled())
    try:
        with pytest.raises(GenerationCancelled):
            model.generate_images([gen_config(model, tmp_path / "x")])
    finally:
        model.sample_step_hook = None
    assert torch.equal(before, torch.get_rng_state())


@pytest.mark.parametrize("arch", [a for a in sorted(ARCHS) if get_model_class(a).modality != "audio"])
def test_sizes_are_floored_to_the_arch_divisibility(arch, tmp_path):
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))  # not loaded
    gen = gen_config(model, tmp_path, width=64 + model.divisibility - 1, height=64 + model.divisibility + 1)
    model.prepare_gen_config(gen)
    assert (gen.width, gen.height) == (64, 64 + model.divisibility)


def test_video_frames_are_snapped_to_the_temporal_compression(tmp_path):
    model = get_model_class("wan21")("cpu", ModelConfig(name_or_path="tiny:wan21", arch="wan21"))
    gen = gen_config(model, tmp_path, num_frames=12)
    model.prepare_gen_config(gen)
    assert gen.num_frames == 9  # 4k + 1


# ------------------------------------------------------------------ the hook mechanism itself
@pytest.fixture(scope="module")
def sd1(tiny_cache):
    m = get_model_class("sd1")("cpu", ModelConfig(name_or_path="tiny:sd1", arch="sd1"))
    m.load_model()
    return m


def test_without_hook_nothing_is_installed(sd1):
    with step_hook(sd1.pipeline, None):
        assert "step" not in sd1.pipeline.scheduler.__dict__


def test_hook_keeps_signature_and_is_removed_afterwards(sd1):
    sched = sd1.pipeline.scheduler
    original = inspect.signature(type(sched).step.__get__(sched))
    with step_hook(sd1.pipeline, lambda s: None):
        assert inspect.signature(sched.step) == original
        assert "generator" in inspect.signature(sched.step).parameters
    assert "step" not in sched.__dict__


def test_hook_is_a_bound_method_that_deepcopy_rebinds(sd1):
    sched = sd1.pipeline.scheduler
    with step_hook(sd1.pipeline, lambda s: None):
        clone = copy.deepcopy(sched)
        assert clone.step.__self__ is clone
        assert sched.step.__self__ is sched


def test_a_request_in_a_process_without_cuda_seeds_without_queueing_a_cuda_seed(sd1, tmp_path, monkeypatch):
    """``torch.manual_seed`` in a process that never started CUDA queues the CUDA seed with a formatted stack of
    its caller (linecache checks every loaded module's file): a few percent of a tiny request's time on CPU."""
    queued = []
    monkeypatch.setattr(torch.cuda._lazy_seed_tracker, "queue_seed_all", lambda *args: queued.append(args))
    torch.default_generator.manual_seed(99)
    sd1.generate_images([gen_config(sd1, tmp_path)])
    assert queued == []
    assert torch.initial_seed() == 99  # the global generator is put back after the request
