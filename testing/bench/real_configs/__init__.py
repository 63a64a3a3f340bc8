"""Real architecture configs per family: the values of each model's published ``config.json`` that differ from
its tiny checkpoint. Every entry names its source (the model card repository and file).

``PARAMS`` holds each component's published parameter count (billions), which ``testing/test_real_configs.py``
checks the configs against on meta tensors, so a wrong width or depth fails on a CPU, not after GPU time.
"""
from testing.bench.real_configs import audio_hunyuan, image, image_large, video

REAL = {**image.REAL, **image_large.REAL, **video.REAL, **audio_hunyuan.REAL}
PARAMS = {**image.PARAMS, **image_large.PARAMS, **video.PARAMS, **audio_hunyuan.PARAMS}

# What a one-layer CPU build (``build_real(..., depth=1)``) needs beyond capping layer counts: values that count
# layers under another name, and decoders narrowed where their real width would make the CPU check take minutes
# without checking anything the GPU run does not (a VAE's latent channels stay real).
SHALLOW = {
    "ltx2": {"connectors": {"text_proj_in_factor": 2}},  # Gemma's layers + 1, stacked
    "hunyuan_video": {"text_encoder": {"num_hidden_layers": 3}},  # the pipeline reads hidden_states[-3]
    "hunyuan_video15": {"text_encoder": {"num_hidden_layers": 3}},
    "hidream": {"transformer": {"llama_layers": [0, 0]}},  # one Llama hidden state per (capped) block
    "stable_audio": {"transformer": {"sample_size": 64}},  # the window it decodes whatever the duration asked
    "qwen_image_edit": {"vae": {"base_dim": 16}},  # encodes the control image at ~1024^2 whatever the output size
    "qwen_image_edit_plus": {"vae": {"base_dim": 16}},
}
# Sample settings a one-layer build needs: the FLUX.2 pipelines stack text-encoder hidden states by index.
SHALLOW_SAMPLE = {
    "flux2": {"text_encoder_out_layers": (1, 1, 1)},
    "flux2_klein_4b": {"text_encoder_out_layers": (1, 1, 1)},
    "flux2_klein_9b": {"text_encoder_out_layers": (1, 1, 1)},
}
