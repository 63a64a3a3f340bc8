"""A LoRA switch on a compiled denoiser recompiles nothing (issue #14): LoRAs live in fixed slots that diffusers'
hot-swap refills in place. Real dynamo tracing of tiny Flux's blocks (its ``eager`` backend, as in
test_compile.py), counted through ``/health``'s ``compile.graphs``; images are compared with an uncompiled
engine's, whose LoRAs load the way they always did."""

import os

import numpy as np
import pytest
from PIL import Image

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for

TARGETS = ["to_q", "to_k", "to_v", "to_out.0"]
MODULATIONS = ["norm1.linear", "norm1_context.linear", "norm.linear", "norm_out.linear"]  # the adaLN projections


def flux_lora(seed: int, rank: int = 4, targets=TARGETS) -> dict:
    """A random LoRA for the tiny Flux transformer, in diffusers' layout (PEFT keys under ``transformer.``)."""
    from diffusers import FluxTransformer2DModel
    from peft import LoraConfig, get_peft_model_state_dict

    from testing.lora_files import randomize_adapters
    from toolkit.models.tiny import tiny_checkpoint

    model = FluxTransformer2DModel.from_pretrained(tiny_checkpoint("flux"), subfolder="transformer")
    model.add_adapter(LoraConfig(r=rank, lora_alpha=rank, init_lora_weights=False, target_modules=targets))
    randomize_adapters(model, seed)
    return {f"transformer.{k}": v.contiguous() for k, v in get_peft_model_state_dict(model).items()}


@pytest.fixture(scope="module")
def loras(tmp_path_factory, tiny_cache):
    from safetensors.torch import save_file

    from testing.test_lora_formats import peft_lora

    folder = tmp_path_factory.mktemp("hotswap_loras")
    states = {
        "a": flux_lora(1),
        "b": flux_lora(2),
        "wide": flux_lora(3, rank=8),  # another rank: padded slots take it in place too
        "ff": flux_lora(4, targets=["ff.net.0.proj", "ff.net.2"]),  # other layers: no hot-swap
        "mod": flux_lora(5, targets=MODULATIONS),
        "mod2": flux_lora(6, targets=MODULATIONS),
        "sd1": {f"unet.{k}": v for k, v in peft_lora(1).items()},  # another family: refused
    }
    files = {name: str(folder / f"{name}.safetensors") for name in states}
    for name, state in states.items():
        save_file(state, files[name])
    return files


@pytest.fixture()
def eager_compile(monkeypatch):
    """torch.compile with dynamo's ``eager`` backend (no inductor on this CPU), from empty dynamo caches."""
    import torch._dynamo

    from toolkit.models import compile as compile_module

    torch._dynamo.reset()
    original = torch.nn.Module.compile
    monkeypatch.setattr(torch.nn.Module, "compile", lambda self, **kw: original(self, backend="eager", **kw))
    monkeypatch.setattr(compile_module, "torch_compile", lambda fn, **kw: torch.compile(fn, backend="eager", **kw))


def engine(tmp_path, loras, name: str, compile: str = "max") -> EngineHarness:
    return EngineHarness(tmp_path / name, compile=compile, lora_roots=[os.path.dirname(loras["a"])])


def body(*files, multipliers=None):
    out = body_for("flux", steps=2, seed=3)
    out["model"]["loras"] = [{"path": f, "multiplier": m} for f, m in zip(files, multipliers or [1.0] * len(files))]
    return out


def run(h, b) -> tuple[np.ndarray, list]:
    """The image, and the status lines the request streamed."""
    headers = [f.header for f in h.client.generate(b)]
    result = next((x for x in headers if x.get("type") == "result"), None)
    assert result is not None, headers
    return np.asarray(Image.open(result["path"]), dtype=np.int16), [x.get("message", "") for x in headers]


def graphs(h) -> int:
    return h.client.health()["compile"]["graphs"]


def uncompiled(tmp_path, loras, bodies: dict, compile: str = "off") -> dict:
    """Images from an engine with compile off, whose LoRAs load under per-file adapter names as before (or, with
    ``compile``, from a fresh compiled engine)."""
    h = engine(tmp_path, loras, f"reference_{compile}", compile=compile)
    try:
        return {name: run(h, b)[0] for name, b in bodies.items()}
    finally:
        h.close()


@pytest.mark.parametrize("how", ["whole", "regional"])
def test_switching_and_dropping_loras_recompiles_nothing(how, tmp_path, loras, eager_compile, monkeypatch):
    """``max`` compiles a resident Flux whole (the other tests here); ``auto``, the GPU's default, its blocks."""
    from toolkit.models import compile as compile_module

    if how == "regional":
        monkeypatch.setattr(compile_module, "WHOLE_DITS", ())
    h = engine(tmp_path, loras, "compiled")
    try:
        before = graphs(h)
        on_a, _ = run(h, body(loras["a"]))
        first = graphs(h)
        assert first > before  # dynamo traced the blocks, with slot_0 in them
        assert h.client.health()["compile"]["compiled"] == {"transformer": how}
        on_b, said = run(h, body(loras["b"]))
        assert any("hot-swapped into slot_0" in m for m in said), said
        none, _ = run(h, body())
        wide, _ = run(h, body(loras["wide"]))  # rank 8 into the slot padded to the ceiling
        half_a, _ = run(h, body(loras["a"], multipliers=[0.5]))
        assert graphs(h) == first  # B, no LoRA, another rank, another multiplier: nothing recompiled
    finally:
        h.close()
    ref = uncompiled(
        tmp_path,
        loras,
        {"base": body(), "a": body(loras["a"]), "b": body(loras["b"]), "wide": body(loras["wide"])}
        | {"half_a": body(loras["a"], multipliers=[0.5])},
    )
    assert np.abs(on_a - on_b).max() > 10 and np.abs(on_a - none).max() > 10 and np.abs(on_b - none).max() > 10
    # Spare slots at scale 0 add exactly 0 (x + 0·lora(x)): bit for bit the compiled model with no LoRA ever
    # loaded. (Compiled Flux computes its single blocks' projections through toolkit/models/epilogues.py, whose
    # split GEMM rounds apart from the eager one: within 2 of the uncompiled image, as the LoRAs below.)
    assert np.array_equal(none, uncompiled(tmp_path, loras, {"base": body()}, compile="max")["base"])
    assert np.abs(none - ref["base"]).max() <= 2
    # A slot padded to rank 128 also sums zero rows, so rounding may differ from the unpadded adapter (here on the
    # CPU they matched exactly; inductor on a GPU may reorder the sums).
    for name, image in (("a", on_a), ("b", on_b), ("wide", wide), ("half_a", half_a)):
        assert np.abs(image - ref[name]).max() <= 2, name


def test_several_loras_share_slots_and_a_shorter_list_leaves_the_rest_at_zero(tmp_path, loras, eager_compile):
    h = engine(tmp_path, loras, "compiled")
    try:
        alone, _ = run(h, body(loras["a"]))
        both, _ = run(h, body(loras["a"], loras["b"], multipliers=[1.0, 0.7]))
        two = graphs(h)  # slot_1 is new: one recompile
        again, said = run(h, body(loras["a"]))
        swapped, said_swapped = run(h, body(loras["b"], loras["a"], multipliers=[0.7, 1.0]))
        assert graphs(h) == two
    finally:
        h.close()
    assert np.array_equal(again, alone)  # slot_1 at scale 0 changes nothing
    assert np.abs(both - alone).max() > 10
    assert np.abs(swapped - both).max() <= 2  # the same two files at the same multipliers, already in their slots
    assert not any("Loading flux: LoRA" in m for m in said + said_swapped), said + said_swapped
    ref = uncompiled(tmp_path, loras, {"both": body(loras["a"], loras["b"], multipliers=[1.0, 0.7])})
    assert np.abs(both - ref["both"]).max() <= 2


def test_a_mismatching_lora_is_refused_and_the_slot_keeps_its_lora(tmp_path, loras, eager_compile):
    h = engine(tmp_path, loras, "compiled")
    try:
        on_a, _ = run(h, body(loras["a"]))
        first = graphs(h)
        out = h.client.generate_wait(body(loras["sd1"]))
        assert out["http_status"] == 422 and "none of its" in out["error"]["message"], out
        assert "sd1.safetensors" in out["error"]["message"]
        again, said = run(h, body(loras["a"]))
        assert np.array_equal(again, on_a)  # slot_0 still holds A: nothing loaded, nothing recompiled
        assert not any("Loading flux: LoRA" in m for m in said), said
        assert graphs(h) == first
        assert h.client.generate_wait(body(loras["b"]))["http_status"] == 200
        assert graphs(h) == first
    finally:
        h.close()


def test_a_lora_on_other_layers_loads_anew_and_says_it_recompiles(tmp_path, loras, eager_compile):
    h = engine(tmp_path, loras, "compiled")
    try:
        run(h, body(loras["a"], loras["b"]))
        first = graphs(h)
        ff, said = run(h, body(loras["ff"]))
        assert any("cannot be hot-swapped into slot_0" in m and "recompiles" in m for m in said), said
        assert graphs(h) > first  # honest: this switch did recompile
        after_ff = graphs(h)
        on_a, said = run(h, body(loras["a"]))  # FF replaced A in slot_0; A goes into slot_1, which has its layers
        assert any("hot-swapped into slot_1" in m for m in said), said
        assert graphs(h) == after_ff
    finally:
        h.close()
    ref = uncompiled(tmp_path, loras, {"ff": body(loras["ff"]), "a": body(loras["a"])})
    assert np.abs(ff - ref["ff"]).max() <= 2 and np.abs(on_a - ref["a"]).max() <= 2


def test_a_lora_over_the_rank_ceiling_loads_unpadded_and_says_it_recompiles(
    tmp_path, loras, eager_compile, monkeypatch
):
    monkeypatch.setattr("toolkit.models.lora_hotswap.HOTSWAP_RANK", 4)
    h = engine(tmp_path, loras, "compiled")
    try:
        run(h, body(loras["a"]))
        first = graphs(h)
        wide, said = run(h, body(loras["wide"]))
        assert any("rank 8 is over the hot-swap ceiling 4" in m and "recompiles" in m for m in said), said
        assert graphs(h) > first
        on_b, said = run(h, body(loras["b"]))  # the unpadded slot cannot take B in place: it goes, B loads anew
        assert any("wide.safetensors left slot_0" in m and "recompiles" in m for m in said), said
        # (no count here: dynamo may find A's graphs from the first request still cached for this structure)
        padded = graphs(h)
        run(h, body(loras["a"]))  # B's slot is padded again: A swaps in
        assert graphs(h) == padded
    finally:
        h.close()
    ref = uncompiled(tmp_path, loras, {"wide": body(loras["wide"]), "b": body(loras["b"])})
    assert np.abs(wide - ref["wide"]).max() <= 2 and np.abs(on_b - ref["b"]).max() <= 2


@pytest.mark.parametrize("mode", ["max", "auto"])
def test_a_lora_on_the_modulation_projections_reaches_the_tables_rows(
    mode, tmp_path, loras, eager_compile, monkeypatch
):
    """AI Toolkit's Flux LoRAs train the adaLN projections too (``norm1.linear``, ``norm.linear``, ...). Compiled
    (whole under ``max``, regionally under ``auto``, which is ``off`` on a CPU engine unless forced as here), a
    resident Flux.1 reads those projections' outputs from rows computed once a request
    (toolkit/models/modulation.py) by the projections as they are then: a LoRA loaded anew, one hot-swapped in
    after it, and none."""
    from extensions_built_in.inference_engine import denoiser_compile

    monkeypatch.setattr(denoiser_compile, "resolve_mode", lambda mode, device: mode)
    h = engine(tmp_path, loras, "compiled", compile=mode)
    try:
        mod, _ = run(h, body(loras["mod"]))
        mod2, said = run(h, body(loras["mod2"]))
        assert any("hot-swapped into slot_0" in m for m in said), said
        none, _ = run(h, body())
        how = {"max": "whole", "auto": "regional"}[mode]
        assert h.client.health()["compile"]["compiled"] == {"transformer": how}
        assert h.engine.holder.parts["transformer"]._aitk_modulation.builds == 3  # the table, once a request
    finally:
        h.close()
    ref = uncompiled(tmp_path, loras, {"mod": body(loras["mod"]), "mod2": body(loras["mod2"]), "base": body()})
    assert np.abs(mod - mod2).max() > 10 and np.abs(mod - none).max() > 10
    for name, image in (("mod", mod), ("mod2", mod2), ("base", none)):
        assert np.abs(image - ref[name]).max() <= 2, name


def test_a_slot_is_padded_only_as_far_as_its_file_needs_and_made_again_for_a_higher_rank(
    tmp_path, loras, eager_compile, monkeypatch
):
    """Padding costs LoRA matmul time every step in proportion to the slot's rank, so a slot is made for its first
    file's rank (rounded up to a power of two, at least ``HOTSWAP_MIN_RANK``, here 4): a rank-8 file makes it again
    at 8 (one recompile, said in the status), and a rank-4 file then swaps into it in place."""
    monkeypatch.setattr("toolkit.models.lora_hotswap.HOTSWAP_MIN_RANK", 4)
    h = engine(tmp_path, loras, "compiled")
    try:
        _, said = run(h, body(loras["a"]))
        assert any("later LoRAs of rank up to 4 on these layers hot-swap into it" in m for m in said), said
        first = graphs(h)
        wide, said = run(h, body(loras["wide"]))
        assert any("its rank 8 is over the rank 4 slot_0 was made for" in m and "recompiles" in m for m in said)
        assert any("rank up to 8" in m for m in said) and graphs(h) > first, said
        grown = graphs(h)
        on_b, said = run(h, body(loras["b"]))
        assert any("hot-swapped into slot_0" in m for m in said) and graphs(h) == grown, said
    finally:
        h.close()
    ref = uncompiled(tmp_path, loras, {"wide": body(loras["wide"]), "b": body(loras["b"])})
    assert np.abs(wide - ref["wide"]).max() <= 2 and np.abs(on_b - ref["b"]).max() <= 2
