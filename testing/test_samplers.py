"""Samplers by A1111's names (toolkit/samplers.py): what each family lists, how names resolve, what a request
writes into its file, and that a swap loads nothing. testing/test_models.py runs every listed sampler per family."""

import json

import pytest

from testing.stream_contract import body_for
from toolkit import samplers
from toolkit.media_info import FULL, PARAMETERS, parameters_text, read_info
from toolkit.models.registry import ARCHS, get_model_class


@pytest.mark.parametrize("arch", sorted(ARCHS))
def test_each_family_lists_its_default_first_and_only_schedules_its_classes_take(arch):
    import inspect

    import diffusers

    cls = get_model_class(arch)
    listed = samplers.samplers_for(cls)
    assert listed[0].name == cls.default_sampler and len({s.name for s in listed}) == len(listed)
    for s in listed:
        if s.cls is None:
            assert cls.sampler_kind == "own" and s.schedules == ("default",)
            continue
        takes = set(inspect.signature(getattr(diffusers, s.cls).__init__).parameters)
        for schedule in s.schedules:
            assert set(samplers.SCHEDULES[schedule]) <= takes, (s.name, schedule)
    assert cls.describe()["samplers"][0]["name"] == cls.default_sampler


def test_names_resolve_from_a1111_and_comfyui_spellings_and_errors_name_the_field():
    sd1, flux = get_model_class("sd1"), get_model_class("flux")
    assert samplers.resolve(sd1, "dpmpp_2m_sde", "Karras") == ("DPM++ 2M SDE", "karras")
    assert samplers.resolve(sd1, "euler A", "sgm_uniform") == ("Euler a", "simple")
    assert samplers.resolve(flux, None, None) == (None, "default")
    assert samplers.resolve(flux, "uni_pc", "automatic") == ("UniPC", "default")
    with pytest.raises(samplers.SamplerError) as e:
        samplers.resolve(flux, "DPM++ 2M SDE", None)  # a discrete sampler: flux is flow matching
    assert e.value.field == "sampler" and "Euler, Heun, DPM++ 2M, UniPC" in str(e.value)
    with pytest.raises(samplers.SamplerError) as e:
        samplers.resolve(flux, "UniPC", "karras")  # the flow solvers' karras flag reads the discrete table
    assert e.value.field == "scheduler" and "default" in str(e.value)
    with pytest.raises(samplers.SamplerError):
        samplers.resolve(get_model_class("stable_audio"), "Euler", None)  # only its own


def test_a_built_sampler_carries_the_checkpoints_training_schedule():
    from diffusers import EulerDiscreteScheduler, FlowMatchEulerDiscreteScheduler

    own = EulerDiscreteScheduler(prediction_type="v_prediction", beta_schedule="scaled_linear", beta_end=0.02)
    built = samplers.build(get_model_class("sd2"), own, "DPM++ 2M", "karras")
    assert type(built).__name__ == "DPMSolverMultistepScheduler"
    assert built.config.prediction_type == "v_prediction" and built.config.beta_end == 0.02
    assert built.config.use_karras_sigmas and built.config.algorithm_type == "dpmsolver++"
    assert samplers.build(get_model_class("sd2"), own, None, "default") is None  # nothing asked: no swap
    flow = FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True, max_shift=0.9)
    solver = samplers.build(get_model_class("flux"), flow, "UniPC", "default")
    assert solver.config.use_flow_sigmas and solver.config.prediction_type == "flow_prediction"
    assert solver.config.flow_shift == 3.0 and solver.config.use_dynamic_shifting
    assert solver.config.get("max_shift") == 0.9  # pipelines read it from the scheduler's config for mu


def test_a_solver_without_sigmas_takes_a_flow_pipelines_call():
    """FluxPipeline calls ``retrieve_timesteps(scheduler, n, sigmas=linspace(1, 1/n, n), mu=mu)``, which refuses
    a scheduler whose ``set_timesteps`` lacks ``sigmas``: the adapted one takes it and makes n steps."""
    import numpy as np
    from diffusers import FlowMatchEulerDiscreteScheduler
    from diffusers.pipelines.flux.pipeline_flux import retrieve_timesteps

    flow = FlowMatchEulerDiscreteScheduler(shift=3.0, use_dynamic_shifting=True)
    for name in ("Heun", "DPM++ 2M", "UniPC"):
        built = samplers.build(get_model_class("flux"), flow, name, "default")
        timesteps, n = retrieve_timesteps(built, None, "cpu", sigmas=list(np.linspace(1, 1 / 6, 6)), mu=1.1)
        assert n == (11 if name == "Heun" else 6) and float(timesteps[0]) > float(timesteps[-1]), name


def test_parameters_text_writes_sampler_and_schedule_as_a1111_does():
    sample = {"prompt": "p", "num_inference_steps": 20, "sampler": "DPM++ 2M", "scheduler": "karras", "seed": 1}
    assert "Steps: 20, Sampler: DPM++ 2M, Schedule type: Karras, Seed: 1" in parameters_text({"sample": sample})
    plain = parameters_text({"sample": sample | {"scheduler": "default"}})
    assert "Sampler: DPM++ 2M, Seed: 1" in plain and "Schedule type" not in plain  # Automatic is left out


def test_the_engine_lists_swaps_and_records_samplers_without_loading_anything(engine_server):
    client = engine_server.client
    models = {m["arch"]: m for m in client.models()}
    assert [s["name"] for s in models["sd1"]["samplers"]][:3] == ["Euler", "Euler a", "DPM++ 2M"]
    assert models["flux"]["samplers"][1] == {"name": "Heun", "schedules": ["default"]}
    plain = client.generate_wait(body_for("sd1", steps=3, seed=5))
    before = client.health()["counters"]
    swapped = client.generate_wait(body_for("sd1", steps=3, seed=5, sampler="dpmpp_2m", scheduler="karras"))
    after = client.health()["counters"]
    assert after["misses"] == before["misses"] and after["holder_builds"] == before["holder_builds"]
    text = read_info(swapped["result"]["path"])
    assert "Steps: 3, Sampler: DPM++ 2M, Schedule type: Karras" in text[PARAMETERS]
    assert json.loads(text[FULL])["sample"]["sampler"] == "DPM++ 2M"
    assert "Sampler: Euler," in read_info(plain["result"]["path"])[PARAMETERS]  # the tiny checkpoint's own
    again = client.generate_wait(body_for("sd1", steps=3, seed=5))  # the checkpoint's own is back
    assert open(again["result"]["path"], "rb").read() == open(plain["result"]["path"], "rb").read()
