"""The ``x0`` latent preview (the default) for every scheduler class the families use: mid-run, the denoised
estimate must differ from x_t and be closer to the final latent than x_t is. DDIM's estimate came in the
step's tuple and was dropped (``builtin:shapes`` previews showed only noise), and the ``x_t - sigma * output``
fallback was wrong for DPM-Solver++ (PixArt) and the EDM cosine solver (Stable Audio): each now reads the
scheduler's own estimate (toolkit/sample_step_hook.py)."""

import pytest
import torch

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import tiny
from toolkit.models.registry import get_model_class


def mid_run_and_final(arch: str, path: str, tmp_path) -> tuple:
    model_class = get_model_class(arch)
    model = model_class("cpu", ModelConfig(name_or_path=path, arch=arch, dtype="float32"))
    model.load_model()
    seen = []
    model.sample_step_hook = lambda step: seen.append((step.latents("raw").clone(), step.latents("x0").clone()))
    settings = {k: v for k, v in tiny.sample(arch).items() if k != "output_ext"}
    gen = GenerateImageConfig(
        prompt="a red circle on a blue background",
        num_inference_steps=8,
        seed=1,
        output_folder=str(tmp_path),
        **settings,
    )
    model.prepare_gen_config(gen)
    model._sample(model.pipeline, gen)
    return type(model.pipeline.scheduler).__name__, seen[len(seen) // 2], seen[-1][0]


@pytest.mark.parametrize(
    "arch,path,scheduler",
    [
        ("sd1", "builtin:shapes", "DDIMScheduler"),
        ("sdxl", "tiny:sdxl", "EulerDiscreteScheduler"),
        ("flux", "tiny:flux", "FlowMatchEulerDiscreteScheduler"),
        ("wan21", "tiny:wan21", "UniPCMultistepScheduler"),
        ("pixart_sigma", "tiny:pixart_sigma", "DPMSolverMultistepScheduler"),
        ("stable_audio", "tiny:stable_audio", "CosineDPMSolverMultistepScheduler"),
        ("minimax_h3", "tiny:minimax_h3", "MiniMaxH3Scheduler"),  # a data-ward velocity: x0 = x_t + sigma * v
    ],
)
def test_the_x0_preview_is_the_denoised_estimate_for_each_scheduler(arch, path, scheduler, tmp_path, tiny_cache):
    name, (x_t, x0), final = mid_run_and_final(arch, path, tmp_path)
    assert name == scheduler  # the class this case stands for
    assert not torch.equal(x_t, x0)
    assert (x0 - final).norm() < (x_t - final).norm(), "x0 mid-run must be closer to the result than x_t"
