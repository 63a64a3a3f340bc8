"""LTX-Video 0.9.x: 128-channel latents, 32x spatial and 8x temporal compression, packed into tokens.

The pipeline samples packed tokens (B, F'*H'*W', 128) (patch size 1); ``unpack_latents`` undoes it with the
pipeline's own ``_unpack_latents`` into the declared BCFHW. Latents are normalised per channel with the VAE's
latents_mean/std (``(x - mean) * scaling_factor / std``), the space ComfyUI's LTXV factors apply to.
"""

from toolkit.memory_plan import WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec

# ComfyUI latent_formats.LTXV (comfy/latent_formats.py), numbers as written in source: LTX-Video 0.9.x only
# (LTX-2 has its own LTXAV table).
LTXV_RGB_FACTORS = (
    (1.1202e-02, -6.3815e-04, -1.0021e-02),
    (8.6031e-02, 6.5813e-02, 9.5409e-04),
    (-1.2576e-02, -7.5734e-03, -4.0528e-03),
    (9.4063e-03, -2.1688e-03, 2.6093e-03),
    (3.7636e-03, 1.2765e-02, 9.1548e-03),
    (2.1024e-02, -5.2973e-03, 3.4373e-03),
    (-8.8896e-03, -1.9703e-02, -1.8761e-02),
    (-1.3160e-02, -1.0523e-02, 1.9709e-03),
    (-1.5152e-03, -6.9891e-03, -7.5810e-03),
    (-1.7247e-03, 4.6560e-04, -3.3839e-03),
    (1.3617e-02, 4.7077e-03, -2.0045e-03),
    (1.0256e-02, 7.7318e-03, 1.3948e-02),
    (-1.6108e-02, -6.2151e-03, 1.1561e-03),
    (7.3407e-03, 1.5628e-02, 4.4865e-04),
    (9.5357e-04, -2.9518e-03, -1.4760e-02),
    (1.9143e-02, 1.0868e-02, 1.2264e-02),
    (4.4575e-03, 3.6682e-05, -6.8508e-03),
    (-4.5681e-04, 3.2570e-03, 7.7929e-03),
    (3.3902e-02, 3.3405e-02, 3.7454e-02),
    (-2.3001e-02, -2.4877e-03, -3.1033e-03),
    (5.0265e-02, 3.8841e-02, 3.3539e-02),
    (-4.1018e-03, -1.1095e-03, 1.5859e-03),
    (-1.2689e-01, -1.3107e-01, -2.1005e-01),
    (2.6276e-02, 1.4189e-02, -3.5963e-03),
    (-4.8679e-03, 8.8486e-03, 7.8029e-03),
    (-1.6610e-03, -4.8597e-03, -5.2060e-03),
    (-2.1010e-03, 2.3610e-03, 9.3796e-03),
    (-2.2482e-02, -2.1305e-02, -1.5087e-02),
    (-1.5753e-02, -1.0646e-02, -6.5083e-03),
    (-4.6975e-03, 5.0288e-03, -6.7390e-03),
    (1.1951e-02, 2.0712e-02, 1.6191e-02),
    (-6.3704e-03, -8.4827e-03, -9.5483e-03),
    (7.2610e-03, -9.9326e-03, -2.2978e-02),
    (-9.1904e-04, 6.2882e-03, 9.5720e-03),
    (-3.7178e-02, -3.7123e-02, -5.6713e-02),
    (-1.3373e-01, -1.0720e-01, -5.3801e-02),
    (-5.3702e-03, 8.1256e-03, 8.8397e-03),
    (-1.5247e-01, -2.1437e-01, -2.1843e-01),
    (3.1441e-02, 7.0335e-03, -9.7541e-03),
    (2.1528e-03, -8.9817e-03, -2.1023e-02),
    (3.8461e-03, -5.8957e-03, -1.5014e-02),
    (-4.3470e-03, -1.2940e-02, -1.5972e-02),
    (-5.4781e-03, -1.0842e-02, -3.0204e-03),
    (-6.5347e-03, 3.0806e-03, -1.0163e-02),
    (-5.0414e-03, -7.1503e-03, -8.9686e-04),
    (-8.5851e-03, -2.4351e-03, 1.0674e-03),
    (-9.0016e-03, -9.6493e-03, 1.5692e-03),
    (5.0914e-03, 1.2099e-02, 1.9968e-02),
    (1.3758e-02, 1.1669e-02, 8.1958e-03),
    (-1.0518e-02, -1.1575e-02, -4.1307e-03),
    (-2.8410e-02, -3.1266e-02, -2.2149e-02),
    (2.9336e-03, 3.6511e-02, 1.8717e-02),
    (-1.6703e-02, -1.6696e-02, -4.4529e-03),
    (4.8818e-02, 4.0063e-02, 8.7410e-03),
    (-1.5066e-02, -5.7328e-04, 2.9785e-03),
    (-1.7613e-02, -8.1034e-03, 1.3086e-02),
    (-9.2633e-03, 1.0803e-02, -6.3489e-03),
    (3.0851e-03, 4.7750e-04, 1.2347e-02),
    (-2.2785e-02, -2.3043e-02, -2.6005e-02),
    (-2.4787e-02, -1.5389e-02, -2.2104e-02),
    (-2.3572e-02, 1.0544e-03, 1.2361e-02),
    (-7.8915e-03, -1.2271e-03, -6.0968e-03),
    (-1.1478e-02, -1.2543e-03, 6.2679e-03),
    (-5.4229e-02, 2.6644e-02, 6.3394e-03),
    (4.4216e-03, -7.3338e-03, -1.0464e-02),
    (-4.5013e-03, 1.6082e-03, 1.4420e-02),
    (1.3673e-02, 8.8877e-03, 4.1253e-03),
    (-1.0145e-02, 9.0072e-03, 1.5695e-02),
    (-5.6234e-03, 1.1847e-03, 8.1261e-03),
    (-3.7171e-03, -5.3538e-03, 1.2590e-03),
    (2.9476e-02, 2.1424e-02, 3.0424e-02),
    (-3.4925e-02, -2.4340e-02, -2.5316e-02),
    (-3.4127e-02, -2.2406e-02, -1.0589e-02),
    (-1.7342e-02, -1.3249e-02, -1.0719e-02),
    (-2.1478e-03, -8.6051e-03, -2.9878e-03),
    (1.2089e-03, -4.2391e-03, -6.8569e-03),
    (9.0411e-04, -6.6886e-03, -6.7547e-05),
    (1.6048e-02, -1.0057e-02, -2.8929e-02),
    (1.2290e-03, 1.0163e-02, 1.8861e-02),
    (1.7264e-02, 2.7257e-04, 1.3785e-02),
    (-1.3482e-02, -3.6427e-03, 6.7481e-04),
    (4.6782e-03, -5.2423e-03, 2.4467e-03),
    (-5.9113e-03, -6.2244e-03, -1.8162e-03),
    (1.5496e-02, 1.4582e-02, 1.9514e-03),
    (7.4958e-03, 1.5886e-03, -8.2305e-03),
    (1.9086e-02, 1.6360e-03, -3.9674e-03),
    (-5.7021e-03, -2.7307e-03, -4.1066e-03),
    (1.7450e-03, 1.4602e-02, 2.5794e-02),
    (-8.2788e-04, 2.2902e-03, 4.5161e-03),
    (1.1632e-02, 8.9193e-03, -7.2813e-03),
    (7.5721e-03, 2.6784e-03, 1.1393e-02),
    (5.1939e-03, 3.6903e-03, 1.4049e-02),
    (-1.8383e-02, -2.2529e-02, -2.4477e-02),
    (5.8842e-04, -5.7874e-03, -1.4770e-02),
    (-1.6125e-02, -8.6101e-03, -1.4533e-02),
    (2.0540e-02, 2.0729e-02, 6.4338e-03),
    (3.3587e-03, -1.1226e-02, -1.6444e-02),
    (-1.4742e-03, -1.0489e-02, 1.7097e-03),
    (2.8130e-02, 2.3546e-02, 3.2791e-02),
    (-1.8532e-02, -1.2842e-02, -8.7756e-03),
    (-8.0533e-03, -1.0771e-02, -1.7536e-02),
    (-3.9009e-03, 1.6150e-02, 3.3359e-02),
    (-7.4554e-03, -1.4154e-02, -6.1910e-03),
    (3.4734e-03, -1.1370e-02, -1.0581e-02),
    (1.1476e-02, 3.9281e-03, 2.8231e-03),
    (7.1639e-03, -1.4741e-03, -3.8066e-03),
    (2.2250e-03, -8.7552e-03, -9.5719e-03),
    (2.4146e-02, 2.1696e-02, 2.8056e-02),
    (-5.4365e-03, -2.4291e-02, -1.7802e-02),
    (7.4263e-03, 1.0510e-02, 1.2705e-02),
    (6.2669e-03, 6.2658e-03, 1.9211e-02),
    (1.6378e-02, 9.4933e-03, 6.6971e-03),
    (1.7173e-02, 2.3601e-02, 2.3296e-02),
    (-1.4568e-02, -9.8279e-03, -1.1556e-02),
    (1.4431e-02, 1.4430e-02, 6.6362e-03),
    (-6.8230e-03, 1.8863e-02, 1.4555e-02),
    (6.1156e-03, 3.4700e-03, -2.6662e-03),
    (-2.6983e-03, -5.9402e-03, -9.2276e-03),
    (1.0235e-02, 7.4173e-03, -7.6243e-03),
    (-1.3255e-02, 1.9322e-02, -9.2153e-04),
    (2.4222e-03, -4.8039e-03, -1.5759e-02),
    (2.6244e-02, 2.5951e-02, 2.0249e-02),
    (1.5711e-02, 1.8498e-02, 2.7407e-03),
    (-2.1714e-03, 4.7214e-03, -2.2443e-02),
    (-7.4747e-03, 7.4166e-03, 1.4430e-02),
    (-8.3906e-03, -7.9776e-03, 9.7927e-03),
    (3.8321e-02, 9.6622e-03, -1.9268e-02),
    (-1.4605e-02, -6.7032e-03, 3.9675e-03),
)
LTXV_RGB_BIAS = (-0.0571, -0.1657, -0.2512)


class LTXModel(BaseModel):
    arch = "ltx"
    modality = "video"
    description = "LTX-Video 0.9.x (real-time text-to-video)"
    hub_id = "Lightricks/LTX-Video"  # not in AI Toolkit's UI: diffusers' LTXPipeline example (the 0.9.0 2B)
    pipeline_class = "LTXPipeline"
    # sample.init_video on its own pipeline (toolkit/models/latent_start.py: the schedule cut at the strength, the
    # encoded video mixed into the noise). diffusers' LTXConditionPipeline is for 0.9.5+ checkpoints: it sets
    # explicit timesteps, which a 0.9.0/0.9.1 scheduler with dynamic shifting refuses.
    vid2vid_own = True
    components = {
        "transformer": Component("diffusers.LTXVideoTransformer3DModel", "transformer", source="main"),
        "text_encoder": Component("transformers.T5EncoderModel", "text_encoder"),
        "tokenizer": Component("transformers.T5Tokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLLTXVideo", "vae"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    latent = LatentSpec(
        "BCFHW",
        128,
        spatial_factor=32,
        temporal_factor=8,
        rgb_factors=LTXV_RGB_FACTORS,
        rgb_bias=LTXV_RGB_BIAS,
        factors_source="ComfyUI LTXV",
    )
    divisibility = 32
    native_resolution = 704
    output_exts = ("mp4", "webp")
    defaults = dict(
        width=704, height=480, num_inference_steps=50, guidance_scale=3.0, num_frames=161, fps=25, output_ext="mp4"
    )
    # Measured at 704x480x161 (testing/test_working_sets.py): sampling 0.9 GiB over the weights (6,643 latent positions
    # of 32x32x8 pixels: 103 KB each); decoding the whole clip at once, 5.15 GiB (91 B per pixel and frame). Its VAE
    # tiles at 512 px (diffusers' AutoencoderKLLTX*Video), not the 256 of the other video VAEs.
    working_set = WorkingSet(per_position=120 * 1024, per_pixel=112, frames_at_once=0, patch=1, tile=512)
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)

    def pipeline_kwargs(self, gen):
        kw = dict(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_frames=gen.num_frames,
            frame_rate=gen.fps,
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
        )
        if self.pipeline is not None and self.pipeline.vae.config.timestep_conditioning:
            # 0.9.1+ VAEs decode with a little noise at a small timestep (the values diffusers documents).
            kw.update(decode_timestep=0.05, decode_noise_scale=0.025)
        kw.update(gen.extra_kwargs)
        return kw

    def unpack_latents(self, latents, gen):
        from diffusers import LTXPipeline

        _, _, frames, height, width = self.latent_shape(gen)
        pipe = self.pipeline
        return LTXPipeline._unpack_latents(
            latents, frames, height, width, pipe.transformer_spatial_patch_size, pipe.transformer_temporal_patch_size
        )

    def video_start_latents(self, frames, raw: bool):
        """The start video in the pipeline's normalised latent space (``LTXPipeline._normalize_latents``, as its
        decode undoes), B x C x F x H x W: what ``unpack_latents`` gives of the pipeline's packed latents."""
        from diffusers import LTXPipeline

        vae = self.pipeline.vae
        pixels = self.pipeline.video_processor.preprocess_video(frames)
        first = next(vae.parameters())
        z = vae.encode(pixels.to(first.device, first.dtype)).latent_dist.mode().float()
        if raw:
            return z
        mean, std = vae.latents_mean.to(z.device), vae.latents_std.to(z.device)
        return LTXPipeline._normalize_latents(z, mean, std, vae.config.scaling_factor)
