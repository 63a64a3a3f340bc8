"""CPU-side regression tests for bugs the GPU run found (docs/BENCHMARKS.md)."""

import torch

from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.memory_plan import GIB
from toolkit.models.pinned import host_buffers
from toolkit.models.registry import get_model_class


def gib(x: float) -> int:
    return int(x * GIB)


def test_parking_after_a_lora_wrapped_the_module_reuses_and_renews_buffers(tiny_cache, tmp_path):
    """GPU run: a UNet parked, brought back, given a LoRA (PEFT renames to_q.weight -> to_q.base_layer.weight)
    and parked again raised KeyError. The buffers must follow the module's current tensors."""
    from diffusers import UNet2DConditionModel
    from peft import LoraConfig

    from toolkit.models.tiny import tiny_checkpoint

    unet = UNet2DConditionModel.from_pretrained(tiny_checkpoint("sd1"), subfolder="unet")
    allocations = []

    def allocate(tensors):
        allocations.extend(t.shape for t in tensors)
        return [torch.empty(t.shape, dtype=t.dtype) for t in tensors]

    first = host_buffers(dict(unet.named_parameters()), None, allocate)
    count = len(allocations)
    unet.add_adapter(LoraConfig(r=2, target_modules=["to_q"]))
    second = host_buffers(dict(unet.named_parameters()), first, allocate)
    assert set(second) == {n for n, _ in unet.named_parameters()}
    renamed = [n for n in second if "base_layer" in n]
    assert renamed and all(n not in first for n in renamed)
    reused = [n for n in second if n in first]
    assert reused and all(second[n] is first[n] for n in reused)  # to_q is a few % of the UNet: no re-pinning
    assert len(allocations) - count == len(second) - len(reused)


def test_the_step_hook_reads_no_tensor_values_back(tiny_cache, tmp_path):
    """GPU run: float(timestep) in the hook synced the GPU every step. A hooked run must make no more
    Tensor -> Python number conversions than a plain one."""
    model = get_model_class("flux")("cpu", ModelConfig(name_or_path="tiny:flux", arch="flux"))
    model.load_model()
    counts = {"n": 0}
    original = torch.Tensor.__float__

    def counting(self):
        counts["n"] += 1
        return original(self)

    def run(hook):
        model.sample_step_hook = hook
        gen = GenerateImageConfig(
            prompt="a cat", width=64, height=64, num_inference_steps=4, seed=1, output_folder=str(tmp_path)
        )
        counts["n"] = 0
        torch.Tensor.__float__ = counting
        try:
            model._sample(model.pipeline, gen)
        finally:
            torch.Tensor.__float__ = original
            model.sample_step_hook = None
        return counts["n"]

    plain = run(None)
    hooked = run(lambda step: step.latents())
    assert hooked == plain, f"the hook added {hooked - plain} float() reads"


def test_an_oom_halfway_through_a_video_decode_leaves_no_vae_features_allocated(engine_server):
    """GPU run: Wan 2.1 ran out of memory in the VAE decode and allocated VRAM stayed 5 GB above its baseline:
    AutoencoderKLWan keeps each chunk's features on the module until a decode finishes. The decode is tried again
    in smaller tiles (toolkit/models/vae_tiling.py); when the smallest fails too the engine answers with an oom
    frame, and nothing is left on the module."""
    from testing.stream_contract import body_for

    body = body_for("wan21", steps=2, seed=3)
    assert engine_server.client.generate_wait(body)["http_status"] == 200
    vae = engine_server.engine.holder.parts["vae"]
    calls = {"n": 0}
    original = vae.decoder.forward

    def failing_forward(*args, **kwargs):
        calls["n"] += 1
        if calls["n"] >= 2:  # the first latent frame's features are cached by now; each smaller tile fails too
            raise torch.cuda.OutOfMemoryError("CUDA out of memory. Tried to allocate 1.14 GiB (injected)")
        return original(*args, **kwargs)

    vae.decoder.forward = failing_forward
    try:
        frames = list(engine_server.client.generate(body))
    finally:
        del vae.decoder.forward
    errors = [f.header for f in frames if f.type == "error"]
    assert errors and errors[0]["code"] == "oom"
    # Heartbeats left out: one repeated the current status while a decode lasted over a second (CI, 2026-12-06).
    retried = [
        f.header["message"]
        for f in frames
        if f.type == "status" and "Out of memory decod" in f.header["message"] and not f.header.get("heartbeat")
    ]
    assert retried[-1].endswith("decoding in 128 px tiles") and calls["n"] == 2 + len(retried)
    cached = [t for t in vae._feat_map + vae._enc_feat_map if t is not None]
    assert not cached, f"{len(cached)} feature tensors left on the VAE"
    assert engine_server.client.generate_wait(body)["http_status"] == 200


def test_a_cancelled_request_does_not_wait_for_its_latent_copies():
    """GPU run: Flux's cancel answered 0.24 s after the request for a 0.17 s step: the engine waited for the
    latent copies still queued behind the steps the CPU had run ahead. A failed request drops them."""
    from extensions_built_in.inference_engine.latent_preview import LatentSender

    class PendingEvent:  # a copy the GPU has not reached yet
        waited = False

        def query(self):
            return False

        def synchronize(self):
            PendingEvent.waited = True

    sender = LatentSender()
    host = torch.zeros(1, 4, 8, 8, dtype=torch.float16)
    sender._pending.append((None, 3, host, PendingEvent(), "BCHW"))
    sender.discard()
    assert not sender._pending and not PendingEvent.waited
    assert sender._free[((1, 4, 8, 8), torch.float16)] == [host]  # reused by the next request, not re-pinned


def test_the_engine_discards_previews_on_cancel_and_flushes_them_on_success(engine_server):
    from testing.stream_contract import body_for

    engine = engine_server.engine
    calls = []
    original_flush, original_discard = engine.latents.flush, engine.latents.discard
    engine.latents.flush = lambda: (calls.append("flush"), original_flush())[1]
    engine.latents.discard = lambda: (calls.append("discard"), original_discard())[1]
    try:
        assert engine_server.client.generate_wait(body_for("sd1", steps=3))["http_status"] == 200
        assert calls == ["flush"]
        calls.clear()
        stream = engine_server.client.generate(body_for("sd1", steps=200, seed=5))
        for frame in stream:
            if frame.type == "progress" and frame.header["step"] == 2:
                engine_server.client.cancel(frame.request_id)
            if frame.type == "error":
                assert frame.header["code"] == "cancelled"
        assert calls == ["discard"]
    finally:
        del engine.latents.flush, engine.latents.discard


def test_nan_latents_are_reported_before_a_blank_file_is_saved(engine_server):
    """H200, HunyuanVideo 1.5 with a float8 transformer at 24 GiB: 121 identical frames came back (blank video,
    saved as a success). Non-finite final latents now bring a warning status that names the usual causes; the
    request still ends with its file, and a healthy request brings no warning."""
    from testing.stream_contract import body_for
    from toolkit.models.base_model import NOT_FINITE_WARNING

    body = body_for("sd1", steps=2, seed=3)
    healthy = [f.header for f in engine_server.client.generate(body)]
    assert not any(h.get("message") == NOT_FINITE_WARNING for h in healthy)
    unet = engine_server.engine.holder.parts["unet"]
    handle = unet.register_forward_hook(
        lambda module, args, out: (
            (out[0] * float("nan"),) if isinstance(out, tuple) else type(out)(sample=out.sample * float("nan"))
        )
    )
    try:
        headers = [f.header for f in engine_server.client.generate(body)]
    finally:
        handle.remove()
    [warning] = [h for h in headers if h.get("message") == NOT_FINITE_WARNING and not h.get("heartbeat")]
    assert warning["type"] == "status" and warning["stage"] == "sampling"
    assert headers[-1]["ok"] is True


def test_an_image_to_video_encode_counts_the_vae_encoding_its_clip_tiled_where_it_must():
    """Wan 2.2 14B I2V at 1280x720x81 on 16 GiB (H200, 2026-12-04): planned with 0.5 GiB for its encoding, the
    VAE's encode of the conditioning clip ran out of memory, and the re-plan refused the request. Its encoding now
    counts the clip's pixels, tiled with the decode (a tiling VAE tiles its encode too): the 16 GiB plan tiles and
    fits, and the 24 GiB plan covers the 18.69 GiB its encoding peaked at there (2026-12-01)."""
    from testing.bench.plan_table import predicted

    def work(arch):
        model = get_model_class(arch)("cuda", ModelConfig(name_or_path="x", arch=arch))
        return model.workload(GenerateImageConfig(prompt="p", width=1280, height=720, num_frames=81))

    i2v, t2v = work("wan22_14b_i2v"), work("wan22_14b")
    assert i2v.encode >= gib(7.6) and i2v.encode_tiled <= gib(1.5)
    assert (t2v.encode, t2v.encode_tiled) == (GIB // 2, None)  # text to video: the prompt alone
    on_16 = predicted("wan22_14b_i2v", 16, 128)
    assert on_16["fits"] and "VAE tiled" in on_16["summary"]
    assert predicted("wan22_14b_i2v", 24, 128)["peak_gib"] >= 18.69


def test_the_loaded_placements_are_kept_while_they_fit_without_the_host_reserve(monkeypatch):
    """FLUX.2-dev on 16 GiB (H200, 2026-12-04): the second request re-planned its encoder from bf16 to float8 for
    want of the last GiB of host RAM, and reloaded it. Loaded copies are held already: no reserve for them."""
    from extensions_built_in.inference_engine import request_memory as mp
    from testing.bench.plan_table import real_parts
    from toolkit.models.components.pool import ComponentPool, plannable_share

    model_class, cfg = get_model_class("flux2"), ModelConfig(name_or_path="unused", arch="flux2")
    planner = mp.RequestMemory("cpu", "auto", ComponentPool(), 16 * GIB)
    planner.active, planner.qtype = True, "float8dq"
    planner._sizes[("flux2", "unused", cfg.extras_name_or_path, model_class("cpu", cfg).dtype)] = real_parts("flux2")
    monkeypatch.setattr(mp, "host_reserve_bytes", lambda: 4 * GIB)
    gen, snapshots = GenerateImageConfig(prompt="p", width=1024, height=1024), []
    monkeypatch.setattr(planner, "refresh", lambda: setattr(planner, "snapshot", snapshots.pop(0)) or planner.snapshot)
    snapshots += [(plannable_share(16 * GIB), gib(host)) for host in (80, 75, 75, 60)]
    loaded = planner.plan(model_class, cfg, gen)
    encoders = [
        planner.plan(model_class, cfg, gen, resident).placements["text_encoder"] for resident in (None, loaded, loaded)
    ]
    assert [loaded.placements["text_encoder"], *encoders] == [
        "stream",
        "quantized_stream",
        "stream",
        "quantized_stream",
    ]


def test_the_loaded_plan_is_offered_to_the_planner_only_for_the_model_it_holds():
    from types import SimpleNamespace

    from extensions_built_in.inference_engine.resident import ResidentModel, holder_identity
    from toolkit.models.components.pool import ComponentPool

    resident = ResidentModel("cpu", ComponentPool(), lambda *a: None)
    held, other = ModelConfig(name_or_path="x", arch="flux2"), ModelConfig(name_or_path="y", arch="flux2")
    plan = SimpleNamespace(placements={"transformer": "stream"}, vae_tiling=False, vae_tile=None, qtype=None)
    resident._keep(SimpleNamespace(plan=plan, parts={}), holder_identity(held, plan))
    assert resident.plan_of(held) is plan and resident.plan_of(other) is None
    resident.drop()
    assert resident.plan_of(held) is None
