"""Ideogram 4: a 9.3B single-stream DiT over Qwen3-VL-8B's hidden states (13 layers side by side), with a second,
unconditional DiT for its asymmetric CFG, on a FLUX.2-style KL VAE (32 channels, 8x, 2x2 patches).

The loop samples packed tokens (B, H/16 * W/16, 128) normalised with the VAE's BatchNorm statistics in the packed
(row, column, channel) order; streamed latents are put back as the pipeline does before decoding: B, 32, H/8, W/8.
ComfyUI has no Ideogram 4 format. Its VAE is FLUX.2's autoencoder (AI Toolkit's ideogram4/src/vae.py is the
"Flux2 KL autoencoder" at FLUX.2's sizes; mflux decodes Ideogram 4 with its Flux2VAE), so the preview uses
ComfyUI's Flux2 table, which assumes FLUX.2's weights as well: the release does not say so, and no fit from its
gated weights was possible here.

The model is trained on structured JSON captions (Ideogram's "magic prompt"); a plain prompt runs, less well.
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.archs.flux2_klein import FLUX2_LATENT
from toolkit.models.base_model import BaseModel, Component

# The official sampler presets (ideogram4.sampler_configs.PRESETS, as ideogram-oss/ComfyUI-Ideogram4 lists them):
# steps -> (mu, std, polish steps at guidance 3 after the main ones). Other step counts run AI Toolkit's way: a
# constant guidance, mu 0, std 1.75.
PRESETS = {48: (0.0, 1.5, 3), 20: (0.0, 1.75, 2), 12: (0.5, 1.75, 1)}
POLISH_GUIDANCE = 3.0


class Ideogram4Model(BaseModel):
    arch = "ideogram4"
    modality = "image"
    group = "experimental"  # AI Toolkit's options.tsx
    hub_id = "ideogram-ai/ideogram-4-fp8"
    description = "Ideogram 4 (9.3B DiT + unconditional DiT, Qwen3-VL-8B; non-commercial license)"
    pipeline_class = "Ideogram4Pipeline"
    starts_from_latents = True  # image-to-image on its own pipeline (toolkit/models/latent_start.py)
    # Its guidance schedule has one entry a step: Heun's second evaluation per step runs past its end.
    sampler_names = ("Euler", "DPM++ 2M", "UniPC")
    components = {
        "transformer": Component("diffusers.Ideogram4Transformer2DModel", "transformer", source="main"),
        # The asymmetric-CFG branch: a network of its own, run on the image tokens with zeroed text features.
        "unconditional_transformer": Component(
            "diffusers.Ideogram4Transformer2DModel", "unconditional_transformer", source="main"
        ),
        "text_encoder": Component("transformers.Qwen3VLModel", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLFlux2", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = FLUX2_LATENT
    divisibility = 16  # 8x VAE x 2x2 patches (the pipeline checks both sides against 16)
    native_resolution = 1024
    # The official "4.0 Default 20" preset (ComfyUI-Ideogram4's default; diffusers' pipeline defaults to "Quality
    # 48"): 20 steps, guidance 7 then 2 polish steps at 3. 1024^2 as AI Toolkit samples it (the release goes to 2048).
    defaults = dict(width=1024, height=1024, num_inference_steps=20, guidance_scale=7.0, output_ext="png")
    # Not measured yet. Sampling: the conditional pass carries up to 2048 text tokens (left-padded to the maximum)
    # beside H/16 x W/16 image tokens at 4608 wide, so at 1024^2 its sequence is 1.5x the image's; FLUX.2 [dev]'s
    # 68 KiB per position (flux2.py, 6144 wide) scaled by width and that length: ~78 KiB. The unconditional pass
    # runs after it on the image tokens alone.
    working_set = WorkingSet(per_position=80 * 1024)

    def pipeline_kwargs(self, gen):
        steps, guidance = gen.num_inference_steps, gen.guidance_scale
        mu, std, polish = PRESETS.get(steps, (0.0, 1.75, 0))
        schedule = [guidance] * (steps - polish) + [min(guidance, POLISH_GUIDANCE)] * polish
        return dict(
            prompt=gen.prompt,
            width=gen.width,
            height=gen.height,
            num_inference_steps=steps,
            guidance_scale=None,
            guidance_schedule=schedule,
            mu=mu,
            std=std,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        import torch

        vae, patch = self.parts["vae"], 2
        mean = vae.bn.running_mean.view(1, 1, -1).to(latents.device, latents.dtype)
        std = torch.sqrt(vae.bn.running_var + vae.config.batch_norm_eps).view(1, 1, -1)
        z = latents * std.to(latents.device, latents.dtype) + mean
        gh, gw = gen.height // (self.latent.spatial_factor * patch), gen.width // (self.latent.spatial_factor * patch)
        channels = z.shape[-1] // (patch * patch)
        z = z.view(z.shape[0], gh, gw, patch, patch, channels).permute(0, 5, 1, 3, 2, 4)
        return z.reshape(z.shape[0], channels, gh * patch, gw * patch)
