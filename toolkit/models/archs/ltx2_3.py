"""LTX-2.3 (22B): LTX-2's joint video + audio model, on the same pipeline (LTX2Pipeline), latent space and
packing, with what the 2.3 checkpoints change in their configs: gated attention and prompt-modulated cross
attention in the transformer, per-modality text projections in deeper connectors (8 layers each), a video VAE
with a fourth decoder stage, and a vocoder with bandwidth extension (LTX2VocoderWithBWE) that writes 48 kHz.

AI Toolkit's LTX23Model (extensions_built_in/diffusion_models/ltx2/ltx2.py) samples it with LTX-2.3's
multimodal guidance: audio CFG 7.0, spatio-temporal guidance 1.0 on block 28, modality isolation 3.0, guidance
rescale 0.7 on both modalities and the cross-modality timestep. Those are this family's call defaults (and
LTX2Pipeline's own); ``extra_kwargs`` can still set each of them.
"""

from toolkit.models.archs.ltx2 import LTX2Model
from toolkit.models.base_model import Component


class LTX23Model(LTX2Model):
    arch = "ltx2.3"
    description = "LTX-2.3 (video with synchronised audio, 22B)"
    # AI Toolkit's UI offers the dev weights as one file of Lightricks/LTX-2.3 (ltx-2.3-22b-dev.safetensors);
    # this is the same dev checkpoint as diffusers folders (diffusers' LTX-2 docs load it for LTX-2.3).
    hub_id = "diffusers/LTX-2.3-Diffusers"
    group = "video"
    components = dict(LTX2Model.components, vocoder=Component("diffusers.pipelines.ltx2.LTX2VocoderWithBWE", "vocoder"))
    # diffusers' LTX-2 docs for LTX-2.3 dev: 30 steps, CFG 3.0 on video, 768x512x121 at 24 fps.
    defaults = dict(
        width=768, height=512, num_inference_steps=30, guidance_scale=3.0, num_frames=121, fps=24, output_ext="mp4"
    )
    audio_guidance_scale = 7.0  # LTX-2.3's audio CFG whatever the video's (AI Toolkit sets it so too)
    # The extra guidance passes (STG, modality isolation) run one at a time beside the batched CFG pass, so
    # sampling peaks where LTX-2's does: the working set is ltx2's (measured there; 2.3 is not measured).
    call_defaults = dict(
        stg_scale=1.0,
        modality_scale=3.0,
        guidance_rescale=0.7,
        audio_stg_scale=1.0,
        audio_modality_scale=3.0,
        audio_guidance_rescale=0.7,
        spatio_temporal_guidance_blocks=[28],
        use_cross_timestep=True,
    )

    def pipeline_kwargs(self, gen):
        kw = super().pipeline_kwargs(gen)
        if "audio_guidance_scale" not in gen.extra_kwargs:
            kw["audio_guidance_scale"] = self.audio_guidance_scale
        return kw
