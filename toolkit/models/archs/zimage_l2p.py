"""Z-Image L2P: Z-Image moved to pixel space (zhen-nan/L2P). The trunk, Qwen3 text encoder, tokenizer, scheduler
and ZImagePipeline are Z-Image's; the transformer takes RGB in 16x16 patches and decodes pixels through its own
U-Net head instead of a final layer (toolkit/models/l2p.py), and there is no VAE: the pipeline runs with an
identity decoder, so the sampled "latents" are the image in [-1, 1] (toolkit/models/pixel_space.py for what the
live preview streams).

AI Toolkit's ZImageL2PModel (extensions_built_in/diffusion_models/z_image/z_image_l2p_model.py) loads the published
single file (model-1k-merge.safetensors) as the transformer and takes the rest from Tongyi-MAI/Z-Image-Turbo: so
here, name_or_path is that file (under engine.model_roots) and extras_name_or_path Z-Image-Turbo, whose transformer
config gives the trunk's shape. No diffusers folder of L2P is published, so the picker offers no hub id.
"""

from toolkit.models.archs.zimage import ZImageModel
from toolkit.models.base_model import Component
from toolkit.models.pixel_space import PIXEL_LATENT, preview_pixels


class ZImageL2PModel(ZImageModel):
    arch = "zimage_l2p"
    # Z-Image's task classes encode with a VAE, which pixel space has none of: the tasks run on the text-to-image
    # pipeline instead (toolkit/models/latent_start.py), starting from the image itself at -1..1.
    img2img_pipeline = inpaint_pipeline = None
    starts_from_latents = True
    description = "Z-Image L2P (pixel space)"
    group = "image"
    # Z-Image's 8-bit measurements were taken on its latent-space transformer; this one is not measured.
    quality_8bit_db = {}
    components = {
        "transformer": Component("toolkit.models.l2p.ZImageL2PTransformer2DModel", "transformer", source="main"),
        "text_encoder": ZImageModel.components["text_encoder"],
        "tokenizer": ZImageModel.components["tokenizer"],
        "scheduler": ZImageModel.components["scheduler"],
    }
    latent = PIXEL_LATENT
    divisibility = 16  # 16x16 pixel patches; the head's four 2x pools need the same
    native_resolution = 1024
    # The L2P release's reference call (TencentYoutuResearch/T2I-L2P README): 1024x1024, 30 steps, cfg_scale 2.0
    # in DiffSynth's convention (uncond + 2 (cond - uncond)), which is guidance 1.0 in ZImagePipeline's
    # (cond + g (cond - uncond)).
    defaults = dict(width=1024, height=1024, num_inference_steps=30, guidance_scale=1.0, output_ext="png")

    def build_pipeline(self):
        from diffusers import ZImagePipeline

        from toolkit.models.pixel_decoder import PixelDecoder

        pipe = ZImagePipeline(**self.parts, vae=PixelDecoder(1))
        pipe.set_progress_bar_config(disable=True)
        return pipe

    def unpack_latents(self, latents, gen):
        return preview_pixels(latents)

    def start_layout(self, latents, gen):
        return latents  # the picture itself, B x 3 x H x W
