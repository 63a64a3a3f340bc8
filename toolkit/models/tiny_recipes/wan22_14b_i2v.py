"""Tiny Wan 2.2 A14B image-to-video: the fixture of toolkit/models/archs/wan22_14b_i2v.py, the wan22_14b recipe's
parts with 36-channel experts (noise + first-frame mask + encoded control image)."""

from toolkit.models.tiny_recipes.wan22_14b import wan21_shared, wan_expert

SAMPLE = dict(width=64, height=64, num_frames=9, fps=8, output_ext="webp")


def build_tiny(variant=None):
    from diffusers import UniPCMultistepScheduler, WanImageToVideoPipeline

    tok, te, vae = wan21_shared()
    sched = UniPCMultistepScheduler(prediction_type="flow_prediction", use_flow_sigmas=True, flow_shift=5.0)
    return WanImageToVideoPipeline(
        tokenizer=tok,
        text_encoder=te,
        vae=vae,
        scheduler=sched,
        image_processor=None,
        image_encoder=None,
        transformer=wan_expert(variant, 0, in_channels=36),
        transformer_2=wan_expert(variant, 1, in_channels=36),
        boundary_ratio=0.9,
        expand_timesteps=False,
    )
