"""HiDream-I1: sparse (MoE) DiT with four text encoders (two CLIPs, T5, Llama 3.1) on Flux.1's VAE, BCHW latents."""

import math

from toolkit.memory_plan import WorkingSet
from toolkit.models import tiny
from toolkit.models.archs.flux import FLUX_RGB_BIAS, FLUX_RGB_FACTORS
from toolkit.models.base_model import BaseModel, Component, LatentSpec


class HiDreamModel(BaseModel):
    arch = "hidream"
    modality = "image"
    description = "HiDream-I1 (Full / Dev / Fast)"
    pipeline_class = "HiDreamImagePipeline"
    components = {
        "transformer": Component("diffusers.HiDreamImageTransformer2DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.CLIPTextModelWithProjection", "text_encoder"),
        "tokenizer": Component("transformers.CLIPTokenizer", "tokenizer", has_weights=False),
        "text_encoder_2": Component("transformers.CLIPTextModelWithProjection", "text_encoder_2"),
        "tokenizer_2": Component("transformers.CLIPTokenizer", "tokenizer_2", has_weights=False),
        "text_encoder_3": Component("transformers.T5EncoderModel", "text_encoder_3"),
        "tokenizer_3": Component("transformers.T5Tokenizer", "tokenizer_3", has_weights=False),
        # Llama 3.1 8B Instruct. HiDream's repos do not ship it: the extras folder must hold these two roles
        # (diffusers' examples load them from meta-llama/Llama-3.1-8B-Instruct and pass them in).
        "text_encoder_4": Component("transformers.LlamaForCausalLM", "text_encoder_4"),
        "tokenizer_4": Component("transformers.AutoTokenizer", "tokenizer_4", has_weights=False),
        "vae": Component("diffusers.AutoencoderKL", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # Flux.1's VAE; ComfyUI previews HiDream with latent_formats.Flux (comfy/supported_models.py). The pipeline keeps
    # B,16,H/8,W/8 latents (patchified inside the transformer) in the (x - 0.1159) * 0.3611 space.
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
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=5.0, output_ext="png")
    tiny_sample = dict(width=64, height=64, output_ext="png")
    # Measured (H200, 1024x1024): sampling 1.07 GiB over the weights (the MoE's routing buffers): 52 KB per latent
    # position beyond the base.
    working_set = WorkingSet(per_position=60 * 1024)
    # At 24 GiB on the H200 (1024², 8 steps; full card 0.355 s/step): float8 weights and activations 0.577 s/step,
    # float8 weights only 0.496 (2026-12-01). Its MoE routes a different token count to each expert at every
    # layer and step, so the activation path quantizes many small, ragged matrices.
    float8_activations = False

    def pipeline_kwargs(self, gen):
        return dict(
            prompt=gen.prompt,
            prompt_2=gen.prompt_2,
            negative_prompt=gen.negative_prompt or None,
            negative_prompt_2=gen.negative_prompt_2 or None,
            width=gen.width,
            height=gen.height,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            **gen.extra_kwargs,
        )

    def sample_media(self, pipeline, gen, generator):
        # HiDreamImagePipeline rescales every request to the area default_sample_size^2 (1 MP) at the requested
        # aspect; the engine honours the requested (snapped) size instead, so the streamed latents and the saved
        # image have the shape the client was told. A hair above 1.0 keeps the pipeline's floor-to-16 exact.
        saved = pipeline.default_sample_size
        pipeline.default_sample_size = math.sqrt(gen.width * gen.height) / pipeline.vae_scale_factor * (1 + 1e-9)
        try:
            return super().sample_media(pipeline, gen, generator)
        finally:
            pipeline.default_sample_size = saved

    @staticmethod
    def build_tiny(variant=None):
        from diffusers import FlowMatchEulerDiscreteScheduler, HiDreamImagePipeline, HiDreamImageTransformer2DModel
        from transformers import CLIPTextConfig, CLIPTextModelWithProjection, LlamaConfig, LlamaForCausalLM

        tok, tok2 = tiny.clip_tokenizer(model_max_length=248), tiny.clip_tokenizer(model_max_length=248)
        tok3, tok4 = tiny.t5_tokenizer(model_max_length=128), tiny.llama3_bos_tokenizer(model_max_length=128)

        def long_clip(t):  # HiDream's CLIPs are Long-CLIPs: 248 positions (the pipeline pads them to 128)
            tiny.seeded()
            return CLIPTextModelWithProjection(
                CLIPTextConfig(
                    vocab_size=len(t),
                    hidden_size=32,
                    intermediate_size=64,
                    num_hidden_layers=2,
                    num_attention_heads=2,
                    max_position_embeddings=248,
                    bos_token_id=t.bos_token_id,
                    eos_token_id=t.eos_token_id,
                    pad_token_id=t.pad_token_id,
                    projection_dim=32,
                    hidden_act="quick_gelu",
                )
            ).eval()

        te, te2 = long_clip(tok), long_clip(tok2)
        te3 = tiny.t5_text_encoder(tok3, d_model=32)
        tiny.seeded()
        te4 = LlamaForCausalLM(
            LlamaConfig(
                vocab_size=len(tok4),
                hidden_size=16,
                intermediate_size=32,
                num_hidden_layers=2,
                num_attention_heads=2,
                num_key_value_heads=1,
                head_dim=8,
                max_position_embeddings=256,
                bos_token_id=tok4.bos_token_id,
                eos_token_id=tok4.eos_token_id,
                pad_token_id=tok4.eos_token_id,
            )
        ).eval()
        tiny.seeded(tiny.variant_seed(variant))
        tr = HiDreamImageTransformer2DModel(
            patch_size=2,
            in_channels=16,
            out_channels=16,
            num_layers=1,
            num_single_layers=1,
            attention_head_dim=8,
            num_attention_heads=4,
            caption_channels=[32, 16],  # [T5 d_model, Llama hidden]
            text_emb_dim=64,  # the two CLIP projections (32 + 32), concatenated into the pooled embedding
            num_routed_experts=4,
            num_activated_experts=2,
            axes_dims_rope=(4, 2, 2),
            max_resolution=(32, 32),
            llama_layers=(0, 1),  # which Llama hidden states (after the embeddings) the blocks read
        ).eval()
        vae = tiny.vae_kl(
            latent_channels=16,
            use_quant_conv=False,
            use_post_quant_conv=False,
            scaling_factor=0.3611,
            shift_factor=0.1159,
        )
        sched = FlowMatchEulerDiscreteScheduler(num_train_timesteps=1000, shift=3.0)
        return HiDreamImagePipeline(
            scheduler=sched,
            vae=vae,
            text_encoder=te,
            tokenizer=tok,
            text_encoder_2=te2,
            tokenizer_2=tok2,
            text_encoder_3=te3,
            tokenizer_3=tok3,
            text_encoder_4=te4,
            tokenizer_4=tok4,
            transformer=tr,
        )
