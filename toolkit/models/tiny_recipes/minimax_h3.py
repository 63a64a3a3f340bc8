"""Tiny MiniMax-H3: the modular pipeline's components with random weights in the real model's shapes where they
are contracts: 24 video latent channels at 16x spatial compression, the VAE's 17-frame chunks of 5 latent frames,
the transformer's (1, 2, 2) patches, 32 audio latent channels at 32 kHz with an 800-sample hop (40 a second), and
a Qwen3-VL conditioner deep enough for the pipeline's ``hidden_states[50]``. Saved as the release is, with
``modular_model_index.json`` (the pipeline is modular only: there is no ``model_index.json``)."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

# MiniMax-H3 generates 5 to 15 seconds at a fixed 24 fps: 124 frames (17 * 7 + 5) is the shortest request.
SAMPLE = dict(width=64, height=64, num_frames=124, fps=24, output_ext="mp4")


def qwen3_vl_text_encoder(tok, hidden: int, layers: int):
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration

    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|image_pad|>", "<|video_pad|>", "<|vision_start|>")}
    config = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=2 * hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=16,
            max_position_embeddings=1024,
            # mrope sections sum to head_dim / 2
            rope_scaling={"rope_type": "default", "mrope_section": [2, 3, 3], "mrope_interleaved": True},
        ),
        vision_config=dict(
            depth=1,
            hidden_size=16,
            intermediate_size=32,
            num_heads=2,
            out_hidden_size=hidden,
            deepstack_visual_indexes=[0],
            patch_size=16,
            temporal_patch_size=2,
            spatial_merge_size=2,
        ),
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=tok.convert_tokens_to_ids("<|vision_end|>"),
    )
    tiny_parts.seeded()
    return Qwen3VLForConditionalGeneration(config).eval()


def build_tiny(variant=None):
    from diffusers import (
        AutoencoderKLMiniMaxH3,
        AutoencoderKLMiniMaxH3Audio,
        MiniMaxH3Scheduler,
        MiniMaxH3Transformer3DModel,
    )
    from diffusers.modular_pipelines import MiniMaxH3Blocks, MiniMaxH3ModularPipeline
    from transformers import Qwen2VLImageProcessorPil

    from toolkit.models.processors import Qwen3VLNoVideoProcessor

    tok = tiny_parts.qwen2_tokenizer()
    hidden = 32  # the conditioner's width, which the transformer's text_dim reads (5120 real)
    text_encoder = qwen3_vl_text_encoder(tok, hidden, layers=51)  # the pipeline reads hidden_states[50]
    # Qwen3-VL's 16 px patches merged 2x2; few pixels, so a keyframe is a handful of vision tokens.
    image_processor = Qwen2VLImageProcessorPil(patch_size=16, merge_size=2, min_pixels=32 * 32, max_pixels=64 * 64)
    processor = Qwen3VLNoVideoProcessor(image_processor=image_processor, tokenizer=tok)
    tiny_parts.seeded()
    # Production geometry with tiny widths: 2^4 spatial (16x), 2 x 2 temporal over 17-frame chunks, 24 channels.
    vae = AutoencoderKLMiniMaxH3(
        block_out_channels=(8, 8, 8, 8, 8, 8),
        layers_per_block=1,
        norm_num_groups=4,
        decoder_num_layers=1,
        decoder_num_attention_heads=2,
        decoder_attention_head_dim=8,
    ).eval()
    tiny_parts.seeded()
    # Production audio timing: 2*4*4*5*5 = 800 samples a latent at 32 kHz, 32 latent channels. The decoder halves
    # its width at each of its 7 upsamplers, so it starts at 128.
    audio_vae = AutoencoderKLMiniMaxH3Audio(
        encoder_dim=4,
        latent_dim=32,
        num_attention_heads=2,
        decoder_dim=128,
        resblock_kernel_sizes=(3,),
        resblock_dilation_sizes=((1, 3, 5),),
        latents_mean=[0.0] * 32,
        latents_std=[1.0] * 32,
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    transformer = MiniMaxH3Transformer3DModel(
        num_attention_heads=2,
        attention_head_dim=16,
        hidden_size=32,
        num_layers=2,
        num_refiner_layers=1,
        ffn_dim=64,
        text_dim=hidden,
        freq_dim=32,
        time_embed_hidden_dim=32,
        time_embed_dim=16,
        rope_freq_dim=2,  # 2 x 3 axes x 2 = 12 of the 16 head channels rotate (real: 96 of 128)
    ).eval()
    pipe = MiniMaxH3ModularPipeline(blocks=MiniMaxH3Blocks())
    pipe.update_components(
        text_encoder=text_encoder,
        tokenizer=tok,
        processor=processor,
        vae=vae,
        audio_vae=audio_vae,
        transformer=transformer,
        scheduler=MiniMaxH3Scheduler(shift=12.0),  # the release's video and audio shifts
        audio_scheduler=MiniMaxH3Scheduler(shift=3.0),
    )
    return pipe
