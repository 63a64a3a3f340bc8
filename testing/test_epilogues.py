"""toolkit/models/epilogues.py: Flux's blocks with the GEMM epilogues compute what diffusers' own forwards compute
(the tiny Flux checkpoint, fp32 on the CPU), through the fused ops, and a LoRA or a quantized weight keeps
diffusers' path. Their speed is the GPU bench's question (testing/bench/compile_bench.py ``--variants
auto,epilogues``)."""

import torch

from toolkit.models import compile as compile_module
from toolkit.models.epilogues import (
    BLOCK_FORWARDS,
    bind_epilogues,
    linear_gelu_tanh,
    linear_of_concat,
    plain,
    use_gelu_epilogues,
)


def tiny_flux():
    from diffusers import FluxTransformer2DModel

    from toolkit.models.tiny import tiny_checkpoint

    return FluxTransformer2DModel.from_pretrained(tiny_checkpoint("flux"), subfolder="transformer").eval()


def flux_inputs(model, seed=0):
    """One denoiser call's arguments at 4×4 latent patches and 5 text tokens."""
    config = model.config
    g = torch.Generator().manual_seed(seed)
    image = torch.randn(1, 16, config.in_channels, generator=g)
    text = torch.randn(1, 5, config.joint_attention_dim, generator=g)
    ids = torch.stack(torch.meshgrid(torch.arange(4), torch.arange(4), indexing="ij"), -1).reshape(16, 2)
    return dict(
        hidden_states=image,
        encoder_hidden_states=text,
        pooled_projections=torch.randn(1, config.pooled_projection_dim, generator=g),
        timestep=torch.tensor([0.5]),
        img_ids=torch.cat([torch.zeros(16, 1), ids.float()], 1),
        txt_ids=torch.zeros(5, 3),
        guidance=torch.tensor([3.5]) if config.guidance_embeds else None,
        return_dict=False,
    )


def ops_called(fn) -> list:
    """The aitk:: custom ops ``fn`` ran, by the profiler's names."""
    with torch.profiler.profile(activities=[torch.profiler.ProfilerActivity.CPU]) as prof:
        fn()
    return sorted({e.name for e in prof.events() if e.name.startswith("aitk::")})


def test_the_fused_ops_compute_the_ops_they_replace():
    x, w, b = torch.randn(2, 7, 12), torch.randn(20, 12), torch.randn(20)
    assert torch.allclose(
        linear_gelu_tanh(x, w, b), torch.nn.functional.gelu(x @ w.T + b, approximate="tanh"), atol=1e-5
    )
    a, m, w2, b2 = torch.randn(2, 7, 6), torch.randn(2, 7, 10), torch.randn(5, 16), torch.randn(5)
    assert torch.allclose(linear_of_concat(a, m, w2, b2), torch.cat([a, m], -1) @ w2.T + b2, atol=1e-5)


def test_flux_with_the_epilogues_draws_what_diffusers_draws():
    model = tiny_flux()
    inputs = flux_inputs(model)
    with torch.no_grad():
        expected = model(**inputs)[0]
        assert bind_epilogues(model) > 0
        got = model(**inputs)[0]
        ran = ops_called(lambda: model(**inputs))
    assert ran == ["aitk::linear_gelu_tanh", "aitk::linear_of_concat"]
    assert torch.allclose(got, expected, atol=1e-5), (got - expected).abs().max()


def test_a_lora_on_the_projections_keeps_diffusers_path_and_its_delta():
    """A PEFT layer around ``proj_mlp``/``proj_out``/``ff.net.0.proj``: the fused ops would read the base weight
    alone and drop the LoRA's delta."""
    from peft import LoraConfig

    model = tiny_flux()
    model.add_adapter(
        LoraConfig(r=4, lora_alpha=4, init_lora_weights=False, target_modules=["proj_mlp", "proj_out", "ff.net.0.proj"])
    )
    inputs = flux_inputs(model, seed=1)
    with torch.no_grad():
        expected = model(**inputs)[0]
        bind_epilogues(model)
        ran = ops_called(lambda: model(**inputs))
        got = model(**inputs)[0]
    assert "aitk::linear_of_concat" not in ran  # every single block's projections carry the LoRA
    assert torch.allclose(got, expected, atol=1e-5)


def test_only_a_plain_linear_with_plain_weights_is_fused():
    linear = torch.nn.Linear(4, 4)
    assert plain(linear)
    assert not plain(torch.nn.Linear(4, 4, bias=False))
    with torch.no_grad():
        linear.weight = torch.nn.Parameter(linear.weight.to(torch.int8), requires_grad=False)
    assert not plain(linear)  # an integer (quantized) weight


def test_compiled_blocks_with_epilogues_trace_the_fused_ops_into_their_graphs(monkeypatch):
    """Real dynamo tracing (``eager`` backend, no inductor on this CPU): the engine's compile of Flux traces the
    epilogue forwards, they give diffusers' output, and the bench's ``plain`` variant keeps diffusers' own."""
    import torch._dynamo

    graphs = []

    def recording(gm, example_inputs):
        graphs.append(str(gm.graph))
        return gm.forward

    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend=recording, **kw))
    torch._dynamo.reset()
    model = tiny_flux()
    inputs = flux_inputs(model, seed=2)
    with torch.no_grad():
        expected = model(**inputs)[0]
        assert compile_module.compile_denoiser(model, "auto") == "regional"
        got = model(**inputs)[0]
    assert torch.allclose(got, expected, atol=1e-5)
    assert any("aitk.linear_of_concat" in g for g in graphs) and any("aitk.linear_gelu_tanh" in g for g in graphs)
    torch._dynamo.reset()
    graphs.clear()
    plain_model = tiny_flux()
    with torch.no_grad():
        compile_module._compile_blocks(plain_model, epilogues=False)
        plain_model(**inputs)
    assert graphs and not any("aitk." in g for g in graphs)


def test_half_precision_single_blocks_still_clip_as_diffusers_does():
    """fp16 Flux clips the single blocks' output to fp16's range; the epilogue forward keeps that."""
    model = tiny_flux().to(torch.float16)
    block = next(b for b in model.modules() if type(b).__name__ == "FluxSingleTransformerBlock")
    dim = block.proj_out.out_features
    g = torch.Generator().manual_seed(3)
    text, image = torch.randn(1, 3, dim, generator=g).half(), torch.randn(1, 5, dim, generator=g).half()
    temb = torch.randn(1, dim, generator=g).half() * 100
    with torch.no_grad():
        block.proj_out.bias.fill_(60000)
        expected = type(block).forward(block, image, text, temb)[1]
        got = BLOCK_FORWARDS["FluxSingleTransformerBlock"](block, image, text, temb)[1]
    assert expected.abs().max() == 65504  # the clip was reached
    assert torch.isfinite(got).all() and torch.allclose(got.float(), expected.float(), rtol=1e-2, atol=1)


def test_only_the_measured_families_blocks_take_the_gelu_epilogue():
    """Flux's and Wan's blocks take it (each measured faster). SD3's joint blocks have tanh GELU feed-forwards
    too, but their speed with the epilogue was never measured: they keep diffusers' forward until a GPU run says
    otherwise."""
    from diffusers import SD3Transformer2DModel, WanTransformer3DModel
    from diffusers.models.activations import GELU

    from toolkit.models.tiny import tiny_checkpoint

    sd3 = SD3Transformer2DModel.from_pretrained(tiny_checkpoint("sd3"), subfolder="transformer")
    assert any(type(m) is GELU and m.approximate == "tanh" for m in sd3.modules())
    assert use_gelu_epilogues(list(sd3.modules())) == 0
    flux = tiny_flux()
    assert use_gelu_epilogues(list(flux.modules())) == 2 * len(flux.transformer_blocks)  # ff and ff_context
    wan = WanTransformer3DModel.from_pretrained(tiny_checkpoint("wan21"), subfolder="transformer")
    assert use_gelu_epilogues(list(wan.modules())) == len(wan.blocks)  # measured: 2.2 % off its step


def test_the_epilogue_graphs_are_kept_by_inductors_caches_for_a_restart(tmp_path, monkeypatch):
    """Real inductor on this CPU: graphs holding the custom ops are saved by the FX-graph and AOTAutograd caches
    (a graph either cache refuses is compiled again after every restart: the restart line of issue #14), and
    inductor's code computes what diffusers' forwards compute."""
    import torch._dynamo
    from torch._dynamo.utils import counters

    monkeypatch.setenv("TORCHINDUCTOR_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.setattr(compile_module, "_COMPILED_FORWARDS", {})
    torch._dynamo.reset()
    counters.clear()
    model = tiny_flux()
    inputs = flux_inputs(model, seed=4)
    with torch.no_grad():
        expected = model(**inputs)[0]
        compile_module.compile_denoiser(model, "auto")
        got = model(**inputs)[0]
    assert torch.allclose(got, expected, atol=1e-4)
    assert counters["aot_autograd"]["autograd_cache_saved"] == 2  # the double and the single block
    assert counters["aot_autograd"]["autograd_cache_bypass"] == 0
    assert counters["inductor"]["fxgraph_cache_bypass"] == 0
