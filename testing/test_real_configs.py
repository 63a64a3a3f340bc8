"""The real-size configs the GPU sweep builds (testing/bench/real_configs): every family has one, each
component's parameter count matches its model card, and at real widths (one layer per stack) the whole
pipeline runs on a CPU, so the configs agree with each other before any GPU time is spent on them."""

import shutil

import pytest

from testing.bench.real_build import build_real, parameter_counts, weighted_components
from testing.bench.real_configs import PARAMS, REAL, SHALLOW_SAMPLE
from testing.test_models import FAMILIES, gen_config
from toolkit.config_modules import ModelConfig
from toolkit.media_probe import probe
from toolkit.models.components.pool import ComponentPool, active_pool
from toolkit.models.registry import get_model_class

ALL = sorted(a for archs in FAMILIES.values() for a in archs)
TOLERANCE = 0.03  # published counts are rounded ("12B"); 3 % still catches a wrong width or a missing stack


@pytest.mark.parametrize("arch", ALL)
def test_every_family_has_a_real_config_and_a_published_size_for_each_weighted_component(arch):
    assert arch in REAL, f"{arch}: no real-size config"
    assert sorted(PARAMS.get(arch, {})) == sorted(weighted_components(arch)), f"{arch}: published sizes per role"


@pytest.mark.parametrize("arch", sorted(PARAMS))
def test_parameter_counts_match_the_model_cards(arch, tiny_cache):
    counts = parameter_counts(arch)
    wrong = {
        role: (round(counts[role] / 1e9, 3), billions)
        for role, billions in PARAMS[arch].items()
        if abs(counts[role] / 1e9 - billions) > TOLERANCE * billions
    }
    assert not wrong, f"{arch}: built vs published (billions): {wrong}"


@pytest.mark.parametrize("arch", sorted(REAL))
def test_real_widths_at_one_layer_generate_on_cpu(arch, tmp_path, tiny_cache):
    folder = tmp_path / arch
    try:
        build_real(arch, str(folder), "cpu", __import__("torch").float32, depth=1)
        model = get_model_class(arch)("cpu", ModelConfig(name_or_path=str(folder), arch=arch, dtype="float32"))
        with active_pool(ComponentPool()):  # as the engine loads: its pool shares components of the same files
            model.load_model()
        if "transformer_2" in weighted_components(arch):
            # Wan 2.2 14B's experts: the same class, config and seed, so one copy on disk; two modules loaded
            first = (folder / "transformer").resolve()
            weights = [f for f in (folder / "transformer_2").iterdir() if f.name.endswith(".safetensors")]
            assert weights and all(f.is_symlink() and f.resolve().parent == first for f in weights)
            assert model.pipeline.transformer is not model.pipeline.transformer_2
        gen = gen_config(
            model, tmp_path / "out", num_inference_steps=2, extra_kwargs=dict(SHALLOW_SAMPLE.get(arch, {}))
        )
        [result] = model.generate_images([gen])
        assert probe(result["path"])["kind"] == model.modality
    finally:
        # Real widths at float32 are gigabytes a family: 29 of them left in pytest's kept temp folders filled
        # a 75 GB disk.
        shutil.rmtree(folder, ignore_errors=True)


def test_a_component_built_elsewhere_is_linked_loaded_and_removed_with_the_checkpoint(tmp_path, tiny_cache):
    """``build_real(spill=...)``: FLUX.2-dev's encoder is built in /dev/shm on the one-GPU machine, whose disk
    cannot hold all 104 GiB; the checkpoint links it, loads like any other, and leaves nothing behind."""
    import torch

    from testing.bench.real_build import remove_real

    folder, elsewhere = tmp_path / "sd1", tmp_path / "shm"
    build_real("sd1", str(folder), "cpu", torch.float32, depth=1, spill={"text_encoder": str(elsewhere)})
    linked = folder / "text_encoder"
    assert linked.is_symlink() and linked.resolve() == (elsewhere / "sd1" / "text_encoder").resolve()
    assert (linked / "config.json").exists() and any(linked.glob("*.safetensors"))
    model = get_model_class("sd1")("cpu", ModelConfig(name_or_path=str(folder), arch="sd1", dtype="float32"))
    with active_pool(ComponentPool()):
        model.load_model()
    assert sum(p.numel() for p in model.pipeline.text_encoder.parameters()) > 0
    remove_real(str(folder))
    assert not folder.exists() and not (elsewhere / "sd1" / "text_encoder").exists()


def test_building_on_the_meta_device_imports_and_hands_back_outside_it(tiny_cache, monkeypatch):
    """Under ``torch.device("meta")`` every tensor a first import creates is meta for the rest of the process:
    the suite's ``cache`` tier test failed after the plan table's ("Tensor.item() cannot be called on meta
    tensors": diffusers' FLUX_MAG_RATIOS). So the class is imported before the device applies, and the modules
    are handed back with it gone (the generator yielded inside the ``with``: its caller ran on meta too)."""
    import torch

    import toolkit.models.components.loading as loading
    from testing.bench import real_build

    seen = []
    real_import = loading.import_class
    monkeypatch.setattr(
        loading, "import_class", lambda path: seen.append(torch.empty(0).device.type) or real_import(path)
    )
    for role, module in real_build._meta_modules("flux"):
        assert next(module.parameters()).is_meta
        assert torch.empty(0).device.type == "cpu", role  # the caller's own tensors
    assert seen and set(seen) == {"cpu"}


def test_parameters_a_class_leaves_empty_get_random_values_and_torch_s_layers_keep_their_own():
    """Nucleus-Image declares its expert stacks with ``torch.empty``: random-init at real size they held whatever
    memory they landed on and the bench's outputs came back NaN (testing/bench/real_build.py ``initialised``)."""
    import torch

    from testing.bench.real_build import initialised

    class Experts(torch.nn.Module):
        def __init__(self):
            super().__init__()
            self.stack = torch.nn.Parameter(torch.full((2, 4, 4), float("nan")))
            self.norm = torch.nn.Parameter(torch.ones(4))
            self.gain = torch.nn.Parameter(torch.ones(4, 1, 1, 1))  # Wan's VAE norms: a gain, not a weight matrix
            self.proj = torch.nn.Linear(4, 4)

    module = Experts()
    weight = module.proj.weight.clone()
    initialised(module)
    assert torch.isfinite(module.stack).all() and 0 < module.stack.std() < 0.1
    assert torch.equal(module.norm, torch.ones(4)) and torch.equal(module.proj.weight, weight)
    assert torch.equal(module.gain, torch.ones(4, 1, 1, 1))
