"""Flex.2 (ostris/Flex.2-preview): a FLUX.1 transformer whose input carries 132 conditioning channels beside the
noisy latents (in_channels 196 = 64 + 68 + 64, out_channels 64).

AI Toolkit's sampler (ostris/ai-toolkit extensions_built_in/flex2/pipeline.py) concatenates, before every
transformer call, after the 16-channel latents packed 2x2 into 64: an inpainting slot (the source image's latents
with the area to repaint zeroed, then the mask, 1 where it repaints: 16 + 1 channels packed into 68) and a control
slot (a control image's latents: depth, lines, pose; packed into 64). An empty slot is zeros, with an inpaint mask
of ones (repaint everything).

diffusers' FluxPipeline runs it unchanged: the noise is drawn here, as FluxPipeline draws it for FLUX.1 (it would
size it from in_channels), and a forward pre-hook on the transformer appends the conditioning to hidden_states.
The hook lives for one request and is removed in a ``finally``: the transformer is pooled, and a request that
fails or is cancelled must not leave it conditioned for the next holder. The step hook, the streamed latents
(64 channels, unpacked as Flux's) and LoRAs (FluxPipeline's loader) are Flux's.
"""

from toolkit.memory_plan import GIB, WorkingSet
from toolkit.models.archs.flux import FluxModel

LATENT_CHANNELS = 16
CONDITIONING_CHANNELS = 2 * LATENT_CHANNELS + 1  # unpacked: inpaint latents + mask, control latents (x4 packed: 132)


class Flex2Model(FluxModel):
    arch = "flex2"
    # Its transformer takes control and inpaint channels of its own: Flux's task pipelines do not feed them, so it
    # starts from an image on its own pipeline (toolkit/models/latent_start.py).
    img2img_pipeline = inpaint_pipeline = None
    starts_from_latents = True
    fill_channels = fill_pipeline = None
    description = "Flex.2 preview (FLUX.1-based; optional control image, or an RGBA image to inpaint its clear area)"
    hub_id = "ostris/Flex.2-preview"  # AI Toolkit's UI default for flex2 (ui/src/app/jobs/new/options.tsx)
    # Optional: an RGB image goes to the control slot; an image with transparent pixels is an inpainting source
    # (AI Toolkit's ``ctrl_idx`` 1 and 0: its inpaint images are the ones that keep an alpha channel).
    max_control_images = 1
    # AI Toolkit's example config (config/examples/train_lora_flex2_24gb.yaml, its sample block): 1024x1024, 25
    # steps, guidance 4 (the guidance embedding; "neg" is not used).
    defaults = dict(width=1024, height=1024, num_inference_steps=25, guidance_scale=4.0, output_ext="png")
    step_cache = None  # diffusers' MagCache ratios are FLUX.1-dev's, not measured for Flex.2
    # Each request's conditioning rides a forward pre-hook on the shared transformer: two requests' hooks would
    # both append to every call (toolkit/models/step_batching.py).
    batchable = False
    quality_8bit_db = {}  # Flux's figures are FLUX.1-dev's; Flex.2's are not measured
    # Not measured: Flux's sampling rate (the 132 extra input channels are 1.6 MB at 1024²) and FLUX.1 Kontext's
    # measured encoding figure, whose VAE also encodes a control image of the output's size beside the prompt.
    working_set = WorkingSet(per_position=20 * 1024, encode=2 * GIB)

    def sample_media(self, pipeline, gen, generator):
        # AI Toolkit's order of draws from the request's generator: the control image's latents, then the noise.
        conditioning = self.conditioning(pipeline, gen, generator)
        noise = self.noise(pipeline, gen, generator)
        hook = pipeline.transformer.register_forward_pre_hook(_appending(conditioning), with_kwargs=True)
        try:
            output = pipeline(
                **self.pipeline_kwargs(gen), latents=noise, generator=generator, output_type=self.pixel_output
            )
        finally:
            hook.remove()
        return self.to_media(output, gen)

    def noise(self, pipeline, gen, generator):
        """FluxPipeline.prepare_latents' draw for a 16-channel latent: the same numbers a FLUX.1 gets for a seed."""
        from diffusers.utils.torch_utils import randn_tensor

        h, w = _latent_size(pipeline, gen)
        shape = (1, LATENT_CHANNELS, h, w)
        dtype = pipeline.text_encoder_2.dtype  # FluxPipeline's: the prompt embeddings' dtype
        noise = randn_tensor(shape, generator=generator, device=pipeline._execution_device, dtype=dtype)
        return pipeline._pack_latents(noise, 1, LATENT_CHANNELS, h, w)

    def conditioning(self, pipeline, gen, generator):
        """The 132 channels, packed as the latents are: (1, tokens, 132). The inpaint slot first, as AI Toolkit
        orders them; packing per channel makes packing the 33 unpacked channels at once the same as packing each
        slot and concatenating."""
        import torch

        h, w = _latent_size(pipeline, gen)
        device, dtype = pipeline._execution_device, pipeline.vae.dtype
        inpaint = torch.cat([torch.zeros(1, LATENT_CHANNELS, h, w), torch.ones(1, 1, h, w)], dim=1)
        inpaint, control = inpaint.to(device, dtype), torch.zeros(1, LATENT_CHANNELS, h, w, device=device, dtype=dtype)
        if gen.control_images:
            rgb, keep = self._control_and_mask(gen)
            latents = self._encode(pipeline, rgb, gen, generator)
            if keep is None:
                control = latents
            else:  # AI Toolkit: the keep-mask bilinear to the latents' size, the latents masked, the mask inverted
                keep = torch.nn.functional.interpolate(keep, size=(h, w), mode="bilinear", align_corners=False)
                keep = keep.to(device, dtype)
                inpaint = torch.cat([latents * keep, 1 - keep], dim=1)
        return pipeline._pack_latents(torch.cat([inpaint, control], dim=1), 1, CONDITIONING_CHANNELS, h, w)

    def _control_and_mask(self, gen):
        """The request's image as RGB, and its alpha as a (1, 1, H, W) keep-mask where any pixel is transparent
        (an inpainting source), else None (a control image)."""
        import numpy as np
        import torch
        from PIL import Image

        with Image.open(gen.control_images[0]) as img:
            rgba = img.convert("RGBA")
        alpha = rgba.getchannel("A")
        if alpha.getextrema()[0] == 255:
            return rgba.convert("RGB"), None
        keep = torch.from_numpy(np.asarray(alpha, dtype=np.float32) / 255.0)[None, None]
        return rgba.convert("RGB"), keep

    def _encode(self, pipeline, image, gen, generator):
        """As FluxControlPipeline.prepare_image and AI Toolkit's Flex2Pipeline: resized to the output, a sample of
        the VAE's latent distribution from the request's generator, shifted and scaled into the transformer's space."""
        vae = pipeline.vae
        pixels = pipeline.image_processor.preprocess(image, height=gen.height, width=gen.width)
        pixels = pixels.to(pipeline._execution_device, vae.dtype)
        latents = vae.encode(pixels).latent_dist.sample(generator=generator)
        return (latents - vae.config.shift_factor) * vae.config.scaling_factor


def _latent_size(pipeline, gen) -> tuple:
    """FluxPipeline.prepare_latents' latent height and width (even, for the 2x2 packing)."""
    f = pipeline.vae_scale_factor * 2
    return 2 * (gen.height // f), 2 * (gen.width // f)


def _appending(conditioning):
    """A transformer forward pre-hook: ``hidden_states`` (B, tokens, 64) gets the conditioning channels after its
    own, moved once to wherever the transformer runs (a visiting or streamed one may run elsewhere than the VAE)."""
    import torch

    placed = {}

    def hook(module, args, kwargs):
        hidden = kwargs["hidden_states"]
        key = (hidden.device, hidden.dtype)
        if key not in placed:
            placed[key] = conditioning.to(*key)
        extra = placed[key].expand(hidden.shape[0], -1, -1)
        return args, {**kwargs, "hidden_states": torch.cat([hidden, extra], dim=2)}

    return hook
