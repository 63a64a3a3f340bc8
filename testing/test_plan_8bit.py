"""Plans in 8 bits (toolkit/memory_plan.py, toolkit/models/base_model.py): which 8-bit type each component gets,
``engine.memory_qtype``, and the 8-bit placements that leave the GPU (visiting, streaming), down to the arguments
the load funnel receives. The moves themselves are tested in testing/test_offload.py."""

import pytest

from testing.test_memory_plan import PLENTY_OF_RAM, QWEN_IMAGE, WAN22_14B, flux_work, gib
from toolkit.config_modules import ModelConfig
from toolkit.memory_plan import Part, PlanDoesNotFit, Workload, plan_memory
from toolkit.models.components.pool import ComponentPool


def test_flux2_dev_streams_both_in_8_bits_where_bf16_copies_would_not_fit_in_ram():
    """FLUX.2-dev: in 8 bits its transformer (34 GiB) and Mistral encoder (25 GiB) each exceed a 24 GiB card, and
    their bf16 host copies (104 GiB) exceed 64 GiB of RAM; streamed in 8 bits they need 59 GiB of it."""
    parts = [
        Part("transformer", "denoiser", gib(60.0), gib(0.5)),
        Part("text_encoder", "encoder", gib(44.6), gib(1.3)),
        Part("vae", "decoder", gib(0.16)),
    ]
    plan = plan_memory("flux2", parts, gib(23.27), flux_work(), gib(64), budget=gib(24), qtype="float8dq")
    assert plan.placements == {"transformer": "quantized_stream", "text_encoder": "quantized_stream", "vae": "gpu"}
    assert plan.summary().startswith("transformer float8dq stream to the GPU as they run; text_encoder float8 stream")
    with pytest.raises(PlanDoesNotFit, match="host RAM"):
        plan_memory("flux2", parts, gib(23.27), flux_work(), gib(48), budget=gib(24), qtype="float8dq")


def test_float8_activations_only_for_the_denoiser_the_encoder_keeps_weight_only(monkeypatch, tiny_cache):
    """float8dq (float8 weights and activations: float8 tensor cores) is for the denoiser, which runs every step;
    a text encoder runs once per request and a language model's activation outliers would be clipped, so under
    the same plan it gets float8 weight-only (Qwen-Image on 30 GiB, without streaming, quantizes both)."""
    from toolkit.models import base_model
    from toolkit.models.archs.qwen_image import QwenImageModel

    plan = plan_memory(
        "qwen_image", QWEN_IMAGE, gib(30), flux_work(1328), PLENTY_OF_RAM, qtype="float8dq", can_stream=False
    )
    assert plan.placements == {"transformer": "quantized", "text_encoder": "quantized", "vae": "gpu"}
    assert plan.qtype_for("text_encoder") == "float8" and plan.qtype_for("transformer") == "float8dq"
    assert plan.summary().startswith("transformer float8dq on the GPU; text_encoder float8 on the GPU")
    seen = {}
    monkeypatch.setattr(base_model, "load_component", lambda cls, src, sub, **kw: seen.setdefault(sub, kw))
    model = QwenImageModel("cuda", ModelConfig(name_or_path="tiny:qwen_image", arch="qwen_image"))
    model.plan = plan
    for role in ("transformer", "text_encoder"):
        model.load_component(role, model.components[role])
    assert (seen["transformer"]["qtype"], seen["text_encoder"]["qtype"]) == ("float8dq", "float8")


def test_an_8_bit_visitor_is_quantized_on_the_host_and_moved_by_the_offload_hooks(monkeypatch, tiny_cache):
    """``quantized_visit``: loaded (and quantized) where it waits, the host, and named a visitor, so the
    pipeline's offload hooks move it through host copies of its 8-bit tensors (toolkit/models/offload.py)."""
    from toolkit.models import base_model
    from toolkit.models.archs.wan22_14b import Wan2214bModel

    seen = {}
    monkeypatch.setattr(base_model, "load_component", lambda cls, src, sub, **kw: seen.setdefault(sub, kw))
    model = Wan2214bModel("cuda", ModelConfig(name_or_path="tiny:wan22_14b", arch="wan22_14b"))
    model.plan = plan_memory(
        "wan22_14b",
        WAN22_14B,
        gib(24),
        Workload(gib(4.2), gib(4.9), gib(1.2)),
        PLENTY_OF_RAM,
        qtype="float8dq",
        can_stream=False,  # with streaming the experts stream (test_memory_plan.py); without it they visit in 8 bits
    )
    assert model.plan.summary().startswith("transformer, transformer_2 float8dq visit the GPU")
    for role in ("transformer", "transformer_2"):
        model.load_component(role, model.components[role])
        assert seen[role]["qtype"] == "float8dq" and seen[role]["device"] == "cpu"
    from toolkit.memory_plan import host_bytes

    assert host_bytes(model.plan.parts, model.plan.placements) == sum(int(gib(26.6) * 0.53) for _ in range(2)) + gib(
        10.6
    )  # 8-bit host copies, and the encoder's bf16 one


def test_float8dq_is_torchaos_per_row_dynamic_float8_through_each_librarys_config():
    pytest.importorskip("torchao")
    from torchao.quantization import Float8DynamicActivationFloat8WeightConfig, PerRow

    from toolkit.models.components.loading import _quantization_config, check_qtype, import_class

    for cls in ("diffusers.FluxTransformer2DModel", "transformers.T5EncoderModel"):
        ao = _quantization_config(import_class(cls), "float8dq").quant_type
        assert isinstance(ao, Float8DynamicActivationFloat8WeightConfig)
        assert all(isinstance(g, PerRow) for g in ao.granularity)
    assert "needs a CUDA GPU" in check_qtype("float8dq", "cpu")


@pytest.mark.parametrize("setting,expected", [("none", None), ("int8", "int8")])
def test_engine_memory_qtype_chooses_what_the_plan_quantizes_with(setting, expected, monkeypatch):
    """``engine.memory_qtype``: ``none`` plans without quantizing (visits and streaming: bit-exact weights);
    a named type replaces the GPU's best (``auto``)."""
    from extensions_built_in.inference_engine.request_memory import RequestMemory
    from toolkit.models.components import loading

    monkeypatch.setattr(loading, "best_qtype", lambda device: "float8dq")
    planner = RequestMemory("cuda", "auto", ComponentPool(), None, qtype=setting)
    assert planner.qtype == expected and planner.describe(None)["qtype"] == expected
    assert RequestMemory("cuda", "auto", ComponentPool(), None).qtype == "float8dq"


@pytest.mark.parametrize(
    "setting,message", [("float4", "engine.memory_qtype must be one of"), ("float8dq", "float8 tensor cores")]
)
def test_a_memory_qtype_this_gpu_cannot_run_stops_the_engine_with_its_name(setting, message, monkeypatch):
    from extensions_built_in.inference_engine.request_memory import RequestMemory
    from toolkit.models.components import loading

    monkeypatch.setattr(loading, "best_qtype", lambda device: "int8")  # an Ampere card: no float8 units
    with pytest.raises(ValueError, match=message):
        RequestMemory("cuda", "auto", ComponentPool(), None, qtype=setting)
