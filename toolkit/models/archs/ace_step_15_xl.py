"""ACE-Step 1.5 XL text-to-music: the 1.5 pipeline, latents (64 channels, 25 per second) and components, with a
wider DiT (hidden 2560, 32 layers, 32 heads) fed by the same 2048-wide condition encoder. The transformer's
``encoder_hidden_size`` (2048) differs from its ``hidden_size`` there, so its ``condition_embedder`` projects the
encoder's states up (diffusers AceStepTransformer1DModel; scripts/convert_ace_step_to_diffusers.py writes the
condition encoder, audio tokenizer and detokenizer at the encoder's width).

AI Toolkit's AceStep15XLModel (extensions_built_in/audio_models/ace_step/ace_step_15_model.py) is the 1.5 class
under another arch name: its loader reads every width from the checkpoint. Its UI offers the XL base weights,
whose official diffusers folder is ``ACE-Step/acestep-v15-xl-base-diffusers``.
"""

from toolkit.models.archs.ace_step_15 import AceStep15Model


class AceStep15XLModel(AceStep15Model):
    arch = "ace_step_15_xl"
    description = "ACE-Step 1.5 XL (music with lyrics, 4B DiT)"
    hub_id = "ACE-Step/acestep-v15-xl-base-diffusers"
    group = "audio"
    # The base/SFT call (classifier-free guidance 7.0 through the learned null condition, shift 3.0) as for the
    # 1.5 base: the diffusers pipeline's defaults for a checkpoint whose transformer says is_turbo false. Sampling
    # and decoding allocate as for ace_step_15 (the same VAE, and the DiT's activations per latent are a few
    # kilobytes at 25 latents a second), so the working set is its.
    defaults = dict(AceStep15Model.defaults)
