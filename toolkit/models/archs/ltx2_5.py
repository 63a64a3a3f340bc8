"""LTX-2.5 (22B): LTX-2.3's pipeline, latent space, VAEs and vocoder, prompted through LTX's fine-tune of Gemma 4
12B (``Gemma4UnifiedForConditionalGeneration``, all 49 hidden states stacked as with Gemma 3) and with a
transformer whose video feed-forward drops its bias and which carries a keyframe position embedding.

diffusers runs LTX-2.5 on LTX2Pipeline (its LTX-2 docs: "there is no separate pipeline class for it"); the
modular LTX25AutoBlocks is another way to run the same checkpoint, not a requirement.

Which DiT: Lightricks/LTX-2.5-Diffusers ships the distilled DiT in ``transformer/`` (what its model_index
names, with a scheduler configured for explicit distilled sigmas) and the full DiT in ``transformer_full/``.
AI Toolkit's LTX25Model loads the dev (full) transformer and samples it with its flow-match scheduler (dynamic
shifting, terminal shift 0.1) and LTX-2.3's guidance, so this family loads ``transformer_full/`` and turns the
shipped scheduler's dynamic shifting and terminal shift back on, as diffusers' docs do for that DiT. LoRAs
trained in AI Toolkit then apply to the DiT they were trained on.
"""

from toolkit.models.archs.ltx2_3 import LTX23Model
from toolkit.models.base_model import Component


class LTX25Model(LTX23Model):
    arch = "ltx2.5"
    description = "LTX-2.5 (video with synchronised audio, 22B, Gemma 4 prompts)"
    # AI Toolkit's UI offers Lightricks/LTX-2.5 (ComfyUI split files, gated); its diffusers folders are here.
    hub_id = "Lightricks/LTX-2.5-Diffusers"
    group = "video"
    components = dict(
        LTX23Model.components,
        transformer=Component("diffusers.LTX2VideoTransformer3DModel", "transformer_full", source="main"),
        text_encoder=Component("transformers.Gemma4UnifiedForConditionalGeneration", "text_encoder"),
    )
    # diffusers' LTX-2 docs for the full DiT: 30 steps with LTX-2.3's guidance stack (CFG 3, STG 1 on block 28,
    # modality isolation 3, rescale 0.7; audio CFG 7), 768x512x121 at 24 fps. The call defaults are ltx2.3's.
    defaults = dict(LTX23Model.defaults)
    # What the shipped (distilled) scheduler config turns off for the full DiT (diffusers' LTX-2 docs).
    full_dit_scheduler = dict(use_dynamic_shifting=True, shift_terminal=0.1)

    def load_component(self, role, comp):
        module = super().load_component(role, comp)
        if role == "scheduler":  # schedulers are built per holder, never pooled: this copy is this holder's own
            module = type(module).from_config(module.config, **self.full_dit_scheduler)
        return module
