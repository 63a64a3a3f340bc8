"""CPU-side regression tests for bugs the GPU run found (docs/BENCHMARKS.md)."""
import torch


from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models.registry import get_model_class
from toolkit.models.v2.pool import host_buffers


def test_parking_after_a_lora_wrapped_the_module_reuses_and_renews_buffers(tiny_cache, tmp_path):
    """GPU run: a UNet parked, brought back, given a LoRA (PEFT renames to_q.weight -> to_q.base_layer.weight)
    and parked again raised KeyError. The buffers must follow the module's current tensors."""
    from diffusers import UNet2DConditionModel
    from peft import LoraConfig

    from toolkit.models.tiny import tiny_checkpoint

    unet = UNet2DConditionModel.from_pretrained(tiny_checkpoint("sd1"), subfolder="unet")
    allocations = []

    def allocate(t):
        allocations.append(t.shape)
        return torch.empty(t.shape, dtype=t.dtype)

    first = host_buffers(dict(unet.named_parameters()), None, allocate)
    count = len(allocations)
    unet.add_adapter(LoraConfig(r=2, target_modules=["to_q"]))
    second = host_buffers(dict(unet.named_parameters()), first, allocate)
    assert set(second) == {n for n, _ in unet.named_parameters()}
    renamed = [n for n in second if "base_layer" in n]
    assert renamed and all(n not in first for n in renamed)
    reused = [n for n in second if n in first]
    assert reused and all(second[n] is first[n] for n in reused)  # no re-pinning of what did not change
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
        gen = GenerateImageConfig(prompt="a cat", width=64, height=64, num_inference_steps=4, seed=1,
                                  output_folder=str(tmp_path))
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
