"""Tiny LTX-2.3: ltx2's tiny tokenizer, Gemma 3, audio VAE and scheduler, with the components LTX-2.3 changes
built its way: the transformer with gated, prompt-modulated attention and no caption projection (the connectors
hand it text at its attention widths), connectors with per-modality projections and gated attention, the video
VAE's four-stage decoder (upsampling 2, 2, 1, 2 after a 4x patch: 32x spatial, 8x temporal) and the vocoder with
bandwidth extension (production hops: 160 samples a mel frame at 16 kHz, then x3 to 48 kHz)."""

from toolkit.models import tiny
from toolkit.models.tiny_recipes import _parts as tiny_parts

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="mp4")


def build_tiny(variant=None):
    from diffusers import AutoencoderKLLTX2Video, LTX2Pipeline, LTX2VideoTransformer3DModel
    from diffusers.pipelines.ltx2 import LTX2TextConnectors, LTX2VocoderWithBWE

    base = tiny.recipe_builder("ltx2")(None)
    gemma = base.text_encoder.config.text_config
    mel_bins = base.audio_vae.config.mel_bins
    video_width, audio_width = 2 * 8, 2 * 4  # the transformer's attention widths (heads x head dim)
    tiny_parts.seeded()
    connectors = LTX2TextConnectors(
        caption_channels=gemma.hidden_size,
        text_proj_in_factor=gemma.num_hidden_layers + 1,
        video_connector_num_attention_heads=2,
        video_connector_attention_head_dim=8,
        video_connector_num_layers=1,
        video_connector_num_learnable_registers=None,
        video_gated_attn=True,
        audio_connector_num_attention_heads=2,
        audio_connector_attention_head_dim=4,
        audio_connector_num_layers=1,
        audio_connector_num_learnable_registers=None,
        audio_gated_attn=True,
        connector_rope_base_seq_len=32,
        rope_theta=10000.0,
        rope_double_precision=False,
        causal_temporal_positioning=False,
        rope_type="split",
        per_modality_projections=True,
        video_hidden_dim=video_width,
        audio_hidden_dim=audio_width,
        proj_bias=True,
    ).eval()
    tiny_parts.seeded()
    vae = AutoencoderKLLTX2Video(
        latent_channels=128,
        block_out_channels=(8, 8, 8, 8),
        decoder_block_out_channels=(8, 16, 16, 32),  # the real (256, 512, 512, 1024) over 32
        layers_per_block=(0, 1, 1, 1, 1),
        decoder_layers_per_block=(1, 1, 1, 1, 1),
        spatio_temporal_scaling=(True, True, True, True),
        decoder_spatio_temporal_scaling=(True, True, True, True),
        decoder_inject_noise=(False, False, False, False, False),
        downsample_type=("spatial", "temporal", "spatiotemporal", "spatiotemporal"),
        upsample_type=("spatiotemporal", "spatiotemporal", "temporal", "spatial"),
        upsample_residual=(False, False, False, False),
        upsample_factor=(2, 2, 1, 2),
        timestep_conditioning=False,
        decoder_spatial_padding_mode="zeros",
        spatial_compression_ratio=32,
        temporal_compression_ratio=8,
    ).eval()
    vae.use_framewise_encoding = False
    vae.use_framewise_decoding = False
    tiny_parts.seeded()
    # The main vocoder's 5*2^5 = 160 samples per mel frame give 16 kHz; the extension's 6*5*2^3 = 240 samples per
    # frame of its own 80-sample-hop mel give 48 kHz.
    vocoder = LTX2VocoderWithBWE(
        in_channels=2 * mel_bins,
        hidden_channels=64,  # halved at each of the 6 upsamplers
        out_channels=2,
        upsample_kernel_sizes=[11, 4, 4, 4, 4, 4],
        upsample_factors=[5, 2, 2, 2, 2, 2],
        resnet_kernel_sizes=[3],
        resnet_dilations=[[1, 3, 5]],
        bwe_in_channels=2 * mel_bins,
        bwe_hidden_channels=32,  # halved at each of the 5 upsamplers
        bwe_out_channels=2,
        bwe_upsample_kernel_sizes=[12, 11, 4, 4, 4],
        bwe_upsample_factors=[6, 5, 2, 2, 2],
        bwe_resnet_kernel_sizes=[3],
        bwe_resnet_dilations=[[1, 3, 5]],
        num_mel_channels=mel_bins,
        input_sampling_rate=16000,
        output_sampling_rate=48000,
    ).eval()
    tiny_parts.seeded(tiny_parts.variant_seed(variant))
    transformer = LTX2VideoTransformer3DModel(
        in_channels=128,
        out_channels=128,
        patch_size=1,
        patch_size_t=1,
        num_attention_heads=2,
        attention_head_dim=8,
        cross_attention_dim=video_width,
        gated_attn=True,
        cross_attn_mod=True,
        audio_in_channels=2 * mel_bins,
        audio_out_channels=2 * mel_bins,
        audio_num_attention_heads=2,
        audio_attention_head_dim=4,
        audio_cross_attention_dim=audio_width,
        audio_gated_attn=True,
        audio_cross_attn_mod=True,
        num_layers=2,
        qk_norm="rms_norm_across_heads",
        caption_channels=gemma.hidden_size,
        rope_double_precision=False,
        rope_type="split",
        use_prompt_embeddings=False,
        perturbed_attn=True,
    ).eval()
    return LTX2Pipeline(
        **dict(base.components, connectors=connectors, vae=vae, vocoder=vocoder, transformer=transformer)
    )
