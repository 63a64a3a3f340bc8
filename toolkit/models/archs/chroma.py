"""Chroma: Flux.1-schnell-derived transformer without CLIP (T5 only, real CFG); latents packed like Flux."""

from toolkit.models import tiny
from toolkit.models.archs.flux import FLUX_RGB_BIAS, FLUX_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class ChromaModel(BaseModel):
    arch = "chroma"
    modality = "image"
    description = "Chroma (Chroma1-HD / Base)"
    pipeline_class = "ChromaPipeline"
    components = {
        "transformer": Component("diffusers.ChromaTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.T5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    pipeline_init_kwargs = dict(image_encoder=None, feature_extractor=None)
    # Flux.1's VAE and latent space (ComfyUI runs Chroma on latent_formats.Flux; comfy/supported_models.py).
    latent = LatentSpec(
        "BCHW",
        16,
        spatial_factor=8,
        rgb_factors=FLUX_RGB_FACTORS,
        rgb_bias=FLUX_RGB_BIAS,
        scale=0.3611,
        shift=0.1159,
        factors_source="ComfyUI Flux",
    )
    divisibility = 16
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=40, guidance_scale=3.0, output_ext="png")
    tiny_sample = dict(width=64, height=64, output_ext="png")

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            max_sequence_length=512,
            **gen.extra_kwargs,
        )

    def unpack_latents(self, latents, gen):
        from diffusers import ChromaPipeline

        return ChromaPipeline._unpack_latents(latents, gen.height, gen.width, self.latent.spatial_factor)

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import ChromaPipeline, ChromaTransformer2DModel, FlowMatchEulerDiscreteScheduler

        tok = tiny.t5_tokenizer()
        te = tiny.t5_text_encoder(tok, d_model=32)
        tiny.seeded(tiny.variant_seed(variant))
        tr = ChromaTransformer2DModel(
            patch_size=1,
            in_channels=64,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=16,
            num_attention_heads=2,
            joint_attention_dim=32,  # == T5 d_model; in_channels = 4 x 16 (2x2 packing)
            axes_dims_rope=(4, 6, 6),
            approximator_hidden_dim=32,
            approximator_layers=1,
            approximator_num_channels=16,
        ).eval()
        vae = tiny.vae_kl(
            latent_channels=16,
            use_quant_conv=False,
            use_post_quant_conv=False,
            scaling_factor=0.3611,
            shift_factor=0.1159,
        )
        sched = FlowMatchEulerDiscreteScheduler(
            shift=3.0,
            use_dynamic_shifting=True,
            base_shift=0.5,
            max_shift=1.15,
            base_image_seq_len=256,
            max_image_seq_len=4096,
        )
        return ChromaPipeline(
            scheduler=sched,
            vae=vae,
            text_encoder=te,
            tokenizer=tok,
            transformer=tr,
            image_encoder=None,
            feature_extractor=None,
        )
