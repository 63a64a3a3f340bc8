"""Qwen-Image-Edit: Qwen-Image conditioned on one control image (through the VL encoder and the VAE)."""

from toolkit.memory_plan import GIB, WorkingSet
from toolkit.models.archs.qwen_image import QwenImageModel
from toolkit.models.base_model import Component


class QwenImageEditModel(QwenImageModel):
    arch = "qwen_image_edit"
    img2img_pipeline = inpaint_pipeline = None
    cannot_start = "an edit model: its input image is the instruction's subject (ctrl_img), not a start to re-noise"
    description = "Qwen-Image-Edit (instruction editing, one control image)"
    hub_id = "Qwen/Qwen-Image-Edit"  # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx)
    group = "instruction"  # AI Toolkit's group for editing models
    pipeline_class = "QwenImageEditPipeline"
    components = {
        **QwenImageModel.components,
        # Image-only Qwen2-VL processor: transformers' own also requires a video processor, i.e. torchvision.
        "processor": Component("toolkit.models.processors.QwenVLImageProcessor", "processor", has_weights=False),
    }
    control_images = 1
    defaults = dict(width=1024, height=1024, num_inference_steps=50, guidance_scale=4.0, output_ext="png")
    # Measured at 1024x1024 (testing/test_working_sets.py): encoding 2.1 GiB over the weights (Qwen2.5-VL reading the
    # control image, and its VAE encode), sampling 0.77 GiB, decoding 4.2 GiB.
    working_set = WorkingSet(per_pixel=4608, encode=int(2.5 * GIB))
    native_resolution = 1024

    def control_inputs(self, gen):
        return self.control_image(gen, 0, (gen.width, gen.height))

    def pipeline_kwargs(self, gen):
        # The pipeline re-sizes the control image to ~1 MP (same aspect) for the VAE and feeds it to the VL
        # encoder; the output size is the request's.
        return dict(super().pipeline_kwargs(gen), image=self.control_inputs(gen))
