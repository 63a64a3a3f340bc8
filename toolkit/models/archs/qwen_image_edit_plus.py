"""Qwen-Image-Edit-2509/2511 ("Plus"): Qwen-Image-Edit with one to three reference images."""

from toolkit.models.archs.qwen_image_edit import QwenImageEditModel


class QwenImageEditPlusModel(QwenImageEditModel):
    arch = "qwen_image_edit_plus"
    description = "Qwen-Image-Edit Plus (2509 / 2511: editing with up to three reference images)"
    # AI Toolkit's UI offers it as qwen_image_edit_plus, and Edit-2511 as qwen_image_edit_plus:2511 (ostris/ai-toolkit
    # ui/src/app/jobs/new/options.tsx).
    hub_id = "Qwen/Qwen-Image-Edit-2509"
    group = "instruction"
    tags = {"2511": {"hub_id": "Qwen/Qwen-Image-Edit-2511", "description": "Qwen-Image-Edit-2511"}}
    pipeline_class = "QwenImageEditPlusPipeline"
    control_images = 1  # required; ctrl_img_2 and ctrl_img_3 are used when given
    max_control_images = 3
    defaults = dict(width=1024, height=1024, num_inference_steps=40, guidance_scale=4.0, output_ext="png")

    def control_inputs(self, gen):
        # Every reference goes in at the output size; the pipeline makes a 384^2-area copy for the VL encoder
        # ("Picture 1: ...") and a 1024^2-area copy for the VAE of each.
        count = max(1, min(len(gen.control_images), self.max_control_images))
        return [self.control_image(gen, i, (gen.width, gen.height)) for i in range(count)]
