"""Tiny HiDream-I1 (Full / Dev / Fast): the fixture of toolkit/models/archs/hidream.py, random weights in the real
model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, output_ext="png")


def build_tiny(variant=None):
    from diffusers import FlowMatchEulerDiscreteScheduler, HiDreamImagePipeline, HiDreamImageTransformer2DModel
    from transformers import CLIPTextConfig, CLIPTextModelWithProjection, LlamaConfig, LlamaForCausalLM

    tok, tok2 = tiny_parts.clip_tokenizer(model_max_length=248), tiny_parts.clip_tokenizer(model_max_length=248)
    tok3, tok4 = tiny_parts.t5_tokenizer(model_max_length=128), tiny_parts.llama3_bos_tokenizer(model_max_length=128)

    def long_clip(t):  # HiDream's CLIPs are Long-CLIPs: 248 positions (the pipeline pads them to 128)
        tiny_parts.seeded()
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
    te3 = tiny_parts.t5_text_encoder(tok3, d_model=32)
    tiny_parts.seeded()
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
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
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
    vae = tiny_parts.vae_kl(
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
