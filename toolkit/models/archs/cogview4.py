"""CogView4-6B: DiT with a GLM-4 text encoder on a 16-channel VAE (scaling 1.0), BCHW latents."""

from toolkit.memory_plan import WorkingSet
from toolkit.models import tiny
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class CogView4Model(BaseModel):
    arch = "cogview4"
    modality = "image"
    description = "CogView4-6B"
    pipeline_class = "CogView4Pipeline"
    components = {
        "transformer": Component("diffusers.CogView4Transformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.GlmModel", "text_encoder"),
        "tokenizer": Component("transformers.AutoTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # No ComfyUI latent format has factors for CogView4's VAE (comfy/supported_models.py): clients fall back to
    # scaling the first three channels.
    latent = LatentSpec("BCHW", 16, spatial_factor=8, scale=1.0, factors_source=None)
    divisibility = 32  # the model card's rule (the pipeline itself checks 16)
    native_resolution = 1024
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=3.5, output_ext="png")
    tiny_sample = dict(width=64, height=64, output_ext="png")
    # Measured (H200, 1024x1024): decoding 4.8 GiB over the weights (4.4 KB per pixel); sampling 0.45 GiB.
    working_set = WorkingSet(per_pixel=5 * 1024)

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import CogView4Pipeline, CogView4Transformer2DModel, FlowMatchEulerDiscreteScheduler
        from transformers import GlmConfig, GlmModel

        tok = tiny.glm4_tokenizer()
        tiny.seeded()
        te = GlmModel(
            GlmConfig(
                vocab_size=len(tok),
                hidden_size=32,
                intermediate_size=64,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=2,
                head_dim=16,
                max_position_embeddings=1024,
                pad_token_id=tok.pad_token_id,
                eos_token_id=tok.eos_token_id,
            )
        ).eval()
        tiny.seeded(tiny.variant_seed(variant))
        tr = CogView4Transformer2DModel(
            patch_size=2,
            in_channels=16,
            out_channels=16,
            num_layers=1,
            attention_head_dim=8,
            num_attention_heads=4,
            text_embed_dim=32,  # == GLM hidden size (hidden_states[-2])
            time_embed_dim=8,
            condition_dim=4,
            pos_embed_max_size=32,
            sample_size=8,
            rope_axes_dim=(32, 32),
        ).eval()
        vae = tiny.vae_kl(latent_channels=16, use_quant_conv=False, use_post_quant_conv=False, scaling_factor=1.0)
        sched = FlowMatchEulerDiscreteScheduler(
            base_image_seq_len=256, base_shift=0.25, max_shift=0.75, use_dynamic_shifting=True, time_shift_type="linear"
        )
        return CogView4Pipeline(tokenizer=tok, text_encoder=te, vae=vae, transformer=tr, scheduler=sched)
