"""Tiny LTX-2 (video with synchronised audio): the fixture of toolkit/models/archs/ltx2.py, random weights in the
real model's shapes."""

from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="mp4")


def build_tiny(variant=None):
    from diffusers import (
        AutoencoderKLLTX2Audio,
        AutoencoderKLLTX2Video,
        FlowMatchEulerDiscreteScheduler,
        LTX2Pipeline,
        LTX2VideoTransformer3DModel,
    )
    from diffusers.pipelines.ltx2 import LTX2TextConnectors, LTX2Vocoder
    from transformers import Gemma3Config, Gemma3ForConditionalGeneration

    tok = tiny_parts.gemma_tokenizer()
    hidden, layers = 32, 2  # Gemma text width and depth; all layers + embeddings are stacked (factor 3)
    tiny_parts.seeded()
    te = Gemma3ForConditionalGeneration(
        Gemma3Config(
            text_config=dict(
                vocab_size=len(tok),
                hidden_size=hidden,
                intermediate_size=64,
                num_hidden_layers=layers,
                num_attention_heads=2,
                num_key_value_heads=1,
                head_dim=8,
                max_position_embeddings=1024,
                sliding_window=64,
            ),
            vision_config=dict(
                hidden_size=16,
                intermediate_size=32,
                num_hidden_layers=1,
                num_attention_heads=2,
                image_size=28,
                patch_size=14,
            ),
            mm_tokens_per_image=4,
            boi_token_index=tok.convert_tokens_to_ids("<start_of_image>"),
            eoi_token_index=tok.convert_tokens_to_ids("<end_of_image>"),
            image_token_index=tok.convert_tokens_to_ids("<image_soft_token>"),
        )
    ).eval()
    tiny_parts.seeded()
    # connector heads x head_dim == caption_channels == Gemma hidden
    conn = LTX2TextConnectors(
        caption_channels=hidden,
        text_proj_in_factor=layers + 1,
        video_connector_num_attention_heads=4,
        video_connector_attention_head_dim=8,
        video_connector_num_layers=1,
        video_connector_num_learnable_registers=None,
        audio_connector_num_attention_heads=4,
        audio_connector_attention_head_dim=8,
        audio_connector_num_layers=1,
        audio_connector_num_learnable_registers=None,
        connector_rope_base_seq_len=32,
        rope_theta=10000.0,
        rope_double_precision=False,
        causal_temporal_positioning=False,
        rope_type="split",
    ).eval()
    tiny_parts.seeded()
    # Production video VAE layout with tiny widths: patch 4 x 2^3 spatial = 32x, 2^3 temporal = 8x, 128 ch.
    # The ratios are config values the real checkpoint states (the default formula would say 64 / 16).
    vae = AutoencoderKLLTX2Video(
        latent_channels=128,
        block_out_channels=(8, 8, 8, 8),
        decoder_block_out_channels=(8, 16, 32),
        layers_per_block=(0, 1, 1, 1, 1),
        decoder_layers_per_block=(1, 1, 1, 1),
        timestep_conditioning=False,
        spatial_compression_ratio=32,
        temporal_compression_ratio=8,
    ).eval()
    vae.use_framewise_encoding = False
    vae.use_framewise_decoding = False
    tiny_parts.seeded()
    # Production audio timing: 16 kHz, hop 160, 4x mel and 4x time compression (25 latents/s), 8 latent
    # channels. Only 8 mel bins instead of 64: the VAE's latents_mean/std buffers are base_channels long and
    # must match the packed width (8 ch x mel_bins / 4), and base_channels 128 would make the VAE 18 MB. The
    # audio stream is not streamed to clients, so its packed width (16 here, 128 real) is not a contract.
    avae = AutoencoderKLLTX2Audio(
        base_channels=16,
        output_channels=2,
        ch_mult=(1, 1, 1),
        num_res_blocks=1,
        attn_resolutions=None,
        in_channels=2,
        latent_channels=8,
        norm_type="pixel",
        causality_axis="height",
        mid_block_add_attention=False,
        sample_rate=16000,
        mel_hop_length=160,
        is_causal=True,
        mel_bins=8,
    ).eval()
    tiny_parts.seeded()
    # in_channels = output channels x mel bins; 6*5*2*2*2 = 240 samples per mel frame -> 24 kHz.
    voc = LTX2Vocoder(
        in_channels=2 * 8,
        hidden_channels=32,
        out_channels=2,
        upsample_kernel_sizes=[16, 15, 8, 4, 4],
        upsample_factors=[6, 5, 2, 2, 2],
        resnet_kernel_sizes=[3],
        resnet_dilations=[[1, 3, 5]],
        output_sampling_rate=24000,
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    # Video tokens 128 wide as in production; audio tokens 8 ch x 2 latent mel bins = 16 wide (real: 128).
    tr = LTX2VideoTransformer3DModel(
        in_channels=128,
        out_channels=128,
        patch_size=1,
        patch_size_t=1,
        num_attention_heads=2,
        attention_head_dim=8,
        cross_attention_dim=16,
        audio_in_channels=16,
        audio_out_channels=16,
        audio_num_attention_heads=2,
        audio_attention_head_dim=4,
        audio_cross_attention_dim=8,
        num_layers=2,
        qk_norm="rms_norm_across_heads",
        caption_channels=hidden,
        rope_double_precision=False,
        rope_type="split",
    ).eval()
    sched = FlowMatchEulerDiscreteScheduler(
        use_dynamic_shifting=True,
        base_shift=0.95,
        max_shift=2.05,
        base_image_seq_len=1024,
        max_image_seq_len=4096,
        shift_terminal=0.1,
    )
    return LTX2Pipeline(
        scheduler=sched,
        vae=vae,
        audio_vae=avae,
        text_encoder=te,
        tokenizer=tok,
        connectors=conn,
        transformer=tr,
        vocoder=voc,
        processor=None,
        prompt_enhancer=None,
        duration_head=None,
    )
