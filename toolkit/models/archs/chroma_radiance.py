"""Chroma Radiance: Chroma in pixel space (lodestones/Chroma1-Radiance). Chroma's trunk, T5-XXL text and
ChromaPipeline, no VAE: the image enters in 16x16 RGB patches and each patch's token drives a small per-pixel MLP
head (toolkit/models/chroma_radiance.py). The pipeline samples the image folded into its packed tokens
(toolkit/models/pixel_decoder.py), so the streamed latents are unpacked to the picture and shown at 1/8 of its
size, as for the other pixel-space families (toolkit/models/pixel_space.py).

AI Toolkit's ChromaRadianceModel (extensions_built_in/diffusion_models/chroma/chroma_radiance_model.py) loads the
published single file (Chroma1-Radiance.safetensors) as the transformer and takes T5 from a Flux-style repo: here,
name_or_path is that file (under engine.model_roots) and extras_name_or_path a Chroma diffusers folder
(lodestones/Chroma1-HD: T5, tokenizer, scheduler, and the trunk's config). No diffusers folder of Radiance is
published, so the picker offers no hub id.
"""

from toolkit.models.archs.chroma import ChromaModel
from toolkit.models.base_model import Component
from toolkit.models.pixel_space import PIXEL_LATENT


class ChromaRadianceModel(ChromaModel):
    arch = "chroma_radiance"
    # Chroma's task classes encode with a VAE, which pixel space has none of: the tasks run on the text-to-image
    # pipeline instead (toolkit/models/latent_start.py), starting from the image itself at -1..1.
    img2img_pipeline = inpaint_pipeline = None
    starts_from_latents = True
    description = "Chroma Radiance (pixel space)"
    components = {
        "transformer": Component(
            "toolkit.models.chroma_radiance.ChromaRadianceTransformer2DModel", "transformer", source="main"
        ),
        "text_encoder": ChromaModel.components["text_encoder"],
        "tokenizer": ChromaModel.components["tokenizer"],
        "scheduler": ChromaModel.components["scheduler"],
    }
    latent = PIXEL_LATENT
    divisibility = 16  # 16x16 pixel patches
    # Chroma's sampling (T5 512 tokens with its mask, true CFG) and defaults; AI Toolkit's Radiance scheduler is
    # Chroma1-HD's (flow matching, shift from the token count: base 0.5 at 256 tokens to 1.15 at 4096).

    def build_pipeline(self):
        from diffusers import ChromaPipeline

        from toolkit.models.pixel_decoder import PixelDecoder

        pipe = ChromaPipeline(**self.parts, vae=PixelDecoder(8), **self.pipeline_init_kwargs)
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def unpack_latents(self, latents, gen):
        """Packed tokens -> the image folded 8x8 (192 channels, ChromaPipeline's own unpacking); each 64-channel
        group holds one colour of an 8x8 block, so its mean is the block's (toolkit/models/pixel_space.py)."""
        from diffusers import ChromaPipeline

        folded = ChromaPipeline._unpack_latents(latents, gen.height, gen.width, 8)
        return folded.unflatten(1, (3, folded.shape[1] // 3)).mean(dim=2)

    def start_layout(self, latents, gen):
        """Packed tokens -> the full-resolution image (the PixelDecoder's own unfolding of ChromaPipeline's
        unpacking): a permutation, which latent_start.py runs backwards to pack the start image."""
        import torch
        from diffusers import ChromaPipeline

        return torch.nn.functional.pixel_shuffle(ChromaPipeline._unpack_latents(latents, gen.height, gen.width, 8), 8)
