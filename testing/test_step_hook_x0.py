"""``x0()`` of a scheduler step: the denoised estimate previews and OpenAI's partial images are drawn from.

Pipelines call ``scheduler.step(..., return_dict=False)``; DDIM (builtin:shapes), Euler and most others then
return ``(prev_sample, pred_original_sample)``, whose x0 the hook once dropped (x0 previews showed the noisy
sample). PNDM returns no x0 at all: it is computed from ``alphas_cumprod``."""

from types import SimpleNamespace

import pytest
import torch

from toolkit.sample_step_hook import step_hook


def noisy(scheduler, prediction_type):
    torch.manual_seed(0)
    scheduler.set_timesteps(10)
    t = scheduler.timesteps[1]
    a = scheduler.alphas_cumprod[t]
    x0, eps = torch.randn(1, 4, 8, 8), torch.randn(1, 4, 8, 8)
    x_t = a.sqrt() * x0 + (1 - a).sqrt() * eps
    output = eps if prediction_type == "epsilon" else a.sqrt() * eps - (1 - a).sqrt() * x0
    return x0, x_t, output, t


@pytest.mark.parametrize("name", ["DDIMScheduler", "PNDMScheduler", "DDPMScheduler"])
@pytest.mark.parametrize("prediction_type", ["epsilon", "v_prediction"])
def test_x0_is_the_clean_sample_for_ddpm_family_schedulers(name, prediction_type):
    import diffusers

    clip = {} if name == "PNDMScheduler" else {"clip_sample": False}  # their x0 is clipped to [-1, 1] by default
    scheduler = getattr(diffusers, name)(prediction_type=prediction_type, **clip)
    x0, x_t, output, t = noisy(scheduler, prediction_type)
    seen = []
    with step_hook(SimpleNamespace(scheduler=scheduler), seen.append):
        scheduler.step(output, t, x_t, return_dict=False)
    [step] = seen
    assert torch.allclose(step.x0(), x0, atol=1e-4)
    assert not torch.allclose(step.sample, x0, atol=1e-2)  # the raw sample is still noisy


def test_a_tuple_whose_second_element_is_not_x0_is_not_taken_for_it():
    from toolkit.sample_step_hook import _unpack_output

    prev, second = torch.zeros(1), torch.ones(1)
    got = _unpack_output((prev, second), SimpleNamespace())
    assert got[0] is prev and got[1] is second
    assert _unpack_output((prev,), SimpleNamespace()) == (prev, None)
    tcd = type("TCDScheduler", (), {})()
    assert _unpack_output((prev, second), tcd)[1] is None  # TCD's second is the re-noised sample
