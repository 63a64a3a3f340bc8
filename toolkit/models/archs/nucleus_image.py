"""Nucleus-Image: a 17B sparse mixture-of-experts DiT (about 2B active per token) with cross-attention to a
Qwen3-VL-8B text encoder's hidden state -8, on the Qwen-Image VAE.

The loop samples packed tokens (B, H/16 * W/16, 64) of the VAE latent normalised with its per-channel mean and
std; streamed latents are unpacked as the pipeline does before decoding, without the frame axis: B, 16, H/8, W/8,
previewed with ComfyUI's Wan21 format (the Qwen-Image VAE's; ComfyUI has no Nucleus entry).

Memory: every expert of every MoE block is resident whichever a token routes to, and the weight files hold them
as two fused 3-D tensors per block (``experts.gate_up_proj``, ``experts.down_proj``: 64 x 2048 x 2688 and
64 x 1344 x 2048), so the plan's sizes (read from those files) count all of them and its largest tensor is a
fused expert stack. torchao's 8-bit weights replace ``nn.Linear`` weights only: the expert stacks stay 16-bit
under an 8-bit placement, which ``Part.unquantized`` tells the plan (``memory_parts``).
"""

from toolkit.memory_plan import Part, WorkingSet
from toolkit.models.archs.wan21 import WAN21_RGB_BIAS, WAN21_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec

EXPERT_TENSORS = (".experts.gate_up_proj", ".experts.down_proj")


def expert_bytes(name_or_path: str, subfolder: str, dtype: str, config_source=None, variant=None, report=None) -> int:
    """Bytes of the fused expert stacks among a transformer's weights once loaded in ``dtype`` (from the
    safetensors headers; nothing is loaded)."""
    from toolkit.models.components.loading import (
        _TARGET_BYTES,
        DTYPES,
        _weight_files,
        resolve_source,
        safetensors_header,
    )

    target = _TARGET_BYTES.get(DTYPES.get(dtype or "", ""), 2)
    total = 0
    for path in _weight_files(resolve_source(name_or_path, subfolder, config_source, variant, report)):
        if not path.endswith(".safetensors"):
            continue
        for name, info in safetensors_header(path).items():
            if name != "__metadata__" and name.endswith(EXPERT_TENSORS):
                count = 1
                for n in info["shape"]:
                    count *= n
                total += count * target
    return total


class NucleusImageModel(BaseModel):
    arch = "nucleus_image"
    modality = "image"
    group = "image"
    hub_id = "NucleusAI/Nucleus-Image"
    description = "Nucleus-Image (17B MoE DiT, ~2B active; Qwen3-VL-8B text encoder)"
    pipeline_class = "NucleusMoEImagePipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    components = {
        "transformer": Component("diffusers.NucleusMoEImageTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.Qwen3VLForConditionalGeneration", "text_encoder"),
        # The release's processor folder is a Qwen3VLProcessor, which transformers only builds with torchvision;
        # the pipeline uses its chat template and tokenizer alone.
        "processor": Component("toolkit.models.processors.QwenVLTextProcessor", "processor", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLQwenImage", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=WAN21_RGB_FACTORS,
        rgb_bias=WAN21_RGB_BIAS,
        factors_source="ComfyUI Wan21",
    )
    divisibility = 16  # 8x VAE x 2x2 packing (the pipeline checks height and width against 16)
    native_resolution = 1024
    # diffusers' example and the pipeline's defaults: 50 steps, CFG 4 (CFG from guidance > 1; the release's own
    # MLX port samples at 4 too; hosted APIs default to 8), 1024^2 (default_sample_size 128 x 8).
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
    # Not measured yet. Sampling: the image stream is 2048 wide (text tokens stay out of the backbone: their K/V
    # join each block's attention) and expert-choice routing copies each token to at most cf = 4 experts' inputs
    # (capacity factors 4 and 2 in the release), ~4 x 2048 x 2 B and their 2688-wide SwiGLU input per token:
    # within the default 40 KiB per position (each token is 4 positions). CFG runs its two passes one after the
    # other. Decoding: the Qwen-Image VAE's measured rate (qwen_image.py).
    working_set = WorkingSet(per_pixel=4608)

    def memory_parts(self) -> list[Part]:
        """The base sizes (every expert counted), with the transformer's expert stacks marked as what an 8-bit
        placement leaves at 16 bits."""
        cfg, parts = self.model_config, super().memory_parts()
        comp = self.components["transformer"]
        experts = expert_bytes(
            cfg.name_or_path, comp.subfolder, self.dtype, cfg.extras_name_or_path, cfg.variant, self._report_download
        )
        return [Part(p.role, p.kind, p.bytes, p.largest, experts) if p.role == "transformer" else p for p in parts]

    def load_component(self, role: str, comp: Component):
        module = super().load_component(role, comp)
        if role == "transformer":
            import torch.nn.functional as F

            # The release sets use_grouped_mm; a torch without grouped GEMM runs the experts one by one (AI Toolkit's
            # NucleusImageModel does the same).
            if not hasattr(F, "grouped_mm"):
                for m in module.modules():
                    if hasattr(m, "use_grouped_mm"):
                        m.use_grouped_mm = False
        return module

    def pipeline_kwargs(self, gen):
        cfg = gen.guidance_scale > 1
        return dict(
            prompt=gen.prompt,
            negative_prompt=(gen.negative_prompt or "") if cfg else None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import NucleusMoEImagePipeline

        patch = self.parts["transformer"].config.patch_size
        return NucleusMoEImagePipeline._unpack_latents(
            latents, gen.height, gen.width, patch, self.latent.spatial_factor
        )[:, :, 0]
