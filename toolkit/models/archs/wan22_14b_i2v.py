"""Wan 2.2 A14B image-to-video: the two-expert layout of wan22_14b with 36-channel transformer inputs (noise +
first-frame mask + encoded control image). Unlike Wan 2.1 I2V there is no CLIP image encoder."""

from toolkit.models.archs.wan21_i2v import Wan21I2VModel, ensure_wan_i2v_text_cleaning, wan_i2v_kwargs
from toolkit.models.archs.wan22_14b import WAN_COMPONENTS, Wan2214bModel


class Wan2214bI2VModel(Wan2214bModel):
    arch = "wan22_14b_i2v"
    description = "Wan 2.2 A14B image-to-video (high/low-noise experts)"
    # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx): a bf16 copy of Wan-AI's.
    hub_id = "ai-toolkit/Wan2.2-I2V-A14B-Diffusers-bf16"
    pipeline_class = "WanImageToVideoPipeline"
    vid2vid_own = False
    cannot_start_video = "its transformers need an image's embedding and latents beside the video's"
    components = WAN_COMPONENTS
    # Wan2.2-I2V-A14B's model_index.json: boundary_ratio 0.9, no image encoder / processor.
    pipeline_init_kwargs = dict(boundary_ratio=0.9, expand_timesteps=False, image_encoder=None, image_processor=None)
    control_images = 1
    working_set = Wan21I2VModel.working_set  # the same VAE encodes the conditioning clip (wan21_i2v.py)
    defaults = dict(
        width=1280, height=720, num_inference_steps=40, guidance_scale=3.5, num_frames=81, fps=16, output_ext="mp4"
    )

    def build_pipeline(self):
        ensure_wan_i2v_text_cleaning()
        return super().build_pipeline()

    def pipeline_kwargs(self, gen):
        return dict(wan_i2v_kwargs(self, gen), **gen.extra_kwargs)
