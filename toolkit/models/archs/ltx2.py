"""LTX-2 (19B): joint video + audio. Video latents are 128 channels at 32x spatial / 8x temporal compression,
packed into tokens; audio latents (8 channels x 16 mel bins, 25 per second) are sampled alongside by a deep copy
of the scheduler, decoded to a mel spectrogram and vocoded to 24 kHz stereo.

The step hook follows only the primary (video) scheduler (toolkit/sample_step_hook.py ignores the audio copy),
and ``unpack_latents`` turns the video tokens into BCFHW with the pipeline's own ``_unpack_latents``. The
result is an mp4 with an AAC audio stream.
"""

from toolkit.media import GeneratedMedia
from toolkit.memory_plan import GIB, WorkingSet
from toolkit.models.base_model import BaseModel, Component, LatentSpec
from toolkit.pixels import pipeline_pixels_to_uint8

# ComfyUI latent_formats.LTXAV (comfy/latent_formats.py): LTX-2's video stream (normalised with the VAE's
# latents_mean/std, as the pipeline's loop samples it). Not the LTX-Video 0.9 (LTXV) table.
LTXAV_RGB_FACTORS = (
    (0.001135, -0.010555, -0.004925),
    (-0.008019, -0.006231, -0.005564),
    (0.012637, 0.005605, 0.012713),
    (0.023454, 0.020771, 0.017844),
    (-0.011940, -0.000932, 0.009292),
    (0.018602, 0.011018, 0.013969),
    (-0.036369, -0.046631, -0.057898),
    (-0.031919, 0.000131, 0.015214),
    (0.014519, 0.021041, 0.015325),
    (0.018889, 0.016149, -0.002836),
    (-0.003784, -0.006057, -0.008195),
    (0.013262, 0.030259, 0.029775),
    (0.050465, 0.050366, 0.025255),
    (0.018628, 0.007691, 0.002893),
    (-0.015698, -0.008451, -0.000676),
    (-0.013600, -0.012587, -0.004437),
    (0.012482, 0.021469, 0.027913),
    (-0.018241, -0.013488, -0.010975),
    (0.013828, 0.012568, 0.021984),
    (0.017911, 0.006552, 0.005567),
    (0.026769, 0.006803, -0.009360),
    (-0.006794, -0.008447, -0.013921),
    (0.029708, 0.018671, 0.022811),
    (-0.014732, -0.019169, 0.000903),
    (0.019607, 0.032595, 0.053409),
    (-0.003721, 0.003976, 0.010364),
    (-0.020193, -0.026076, -0.036068),
    (-0.002328, 0.006527, 0.013052),
    (0.017171, 0.009224, 0.006548),
    (0.001104, -0.000591, 0.000147),
    (-0.000217, 0.011834, 0.017945),
    (-0.015329, -0.012463, -0.006178),
    (-0.009478, -0.008680, -0.004107),
    (-0.005565, -0.006006, -0.001493),
    (0.009451, 0.008794, 0.013207),
    (-0.009989, -0.008027, -0.009568),
    (-0.001505, -0.008805, -0.006828),
    (0.001105, 0.008999, 0.009079),
    (0.025935, 0.016426, 0.008036),
    (0.006313, 0.000694, -0.006039),
    (-0.001893, -0.006951, -0.009560),
    (-0.007082, -0.002566, -0.007152),
    (-0.005231, 0.004829, 0.008220),
    (-0.004333, 0.001251, -0.004852),
    (-0.017024, -0.012730, -0.007457),
    (0.024988, 0.032963, 0.036556),
    (0.013697, 0.012278, 0.009979),
    (-0.013751, -0.008369, -0.015446),
    (-0.009348, -0.001047, 0.007622),
    (-0.003135, -0.003350, -0.003766),
    (0.007436, 0.004957, 0.010480),
    (0.018315, 0.022066, 0.021104),
    (-0.005621, -0.006770, -0.008219),
    (-0.007427, 0.001911, -0.001231),
    (-0.007413, 0.000486, -0.006039),
    (-0.014698, -0.007160, 0.006509),
    (0.013775, 0.014185, 0.008203),
    (0.060246, 0.069787, 0.072833),
    (0.009861, 0.004870, 0.001194),
    (-0.003660, 0.003251, 0.008015),
    (0.003696, -0.003680, -0.008851),
    (0.014924, 0.006196, 0.005282),
    (-0.006740, -0.004319, -0.006729),
    (0.020635, 0.015163, 0.012385),
    (-0.032623, -0.006105, 0.010436),
    (-0.058988, -0.030162, -0.037961),
    (-0.035614, -0.021929, -0.011062),
    (-0.023412, -0.011305, -0.005054),
    (-0.002716, -0.005184, -0.004084),
    (0.014591, 0.015294, 0.014045),
    (0.008310, 0.002466, -0.003225),
    (0.005176, 0.001119, 0.000695),
    (-0.021569, -0.030886, -0.044732),
    (0.007517, 0.003891, 0.000551),
    (-0.006793, 0.004059, 0.010184),
    (-0.086481, -0.082033, -0.083414),
    (0.004192, 0.000762, -0.008658),
    (0.010970, 0.009002, 0.007384),
    (0.004042, -0.006732, -0.011031),
    (0.012164, 0.006401, 0.007483),
    (0.029252, 0.013990, 0.011128),
    (0.048452, 0.034648, 0.016269),
    (0.024104, 0.012647, 0.011754),
    (-0.013216, -0.020192, -0.019752),
    (-0.010799, -0.008535, -0.005467),
    (0.005823, 0.001403, 0.001890),
    (0.052393, 0.044771, 0.032777),
    (0.007576, -0.008080, -0.012453),
    (0.009830, 0.004244, 0.001213),
    (-0.025867, -0.013169, -0.010636),
    (0.008494, 0.003135, 0.000790),
    (0.003969, -0.002625, -0.010204),
    (0.006509, 0.008272, 0.020819),
    (-0.004943, -0.013424, -0.015351),
    (0.005541, 0.009136, -0.003666),
    (-0.014300, -0.015864, -0.016853),
    (0.002650, 0.028393, 0.014125),
    (-0.027661, -0.045422, -0.064995),
    (0.009220, 0.015522, 0.010574),
    (-0.002236, 0.002915, 0.004557),
    (-0.020269, -0.008212, -0.000532),
    (0.019294, 0.003655, -0.002809),
    (0.007116, -0.002784, 0.000017),
    (0.057277, 0.073270, 0.074401),
    (-0.002616, -0.001696, -0.000498),
    (0.007248, 0.009793, 0.022829),
    (-0.002590, -0.005601, -0.000436),
    (-0.007681, 0.003893, -0.004119),
    (-0.057392, -0.045545, -0.025290),
    (0.045188, 0.047985, 0.054059),
    (0.000937, -0.008861, -0.038406),
    (-0.010192, -0.008036, -0.005385),
    (-0.030222, -0.027498, -0.030765),
    (-0.008359, 0.013247, 0.010918),
    (0.004102, 0.002093, 0.006934),
    (0.039461, 0.027339, 0.008284),
    (-0.075747, -0.076340, -0.071625),
    (0.002692, 0.005096, -0.002247),
    (-0.002453, -0.002785, -0.010483),
    (0.012265, 0.005481, 0.001729),
    (0.017755, 0.008655, 0.003532),
    (0.055560, 0.049128, 0.044137),
    (-0.025861, -0.023798, -0.018815),
    (-0.014876, -0.010770, -0.010713),
    (-0.017315, -0.012599, -0.008661),
    (-0.008461, -0.006210, -0.007744),
    (-0.040175, -0.042255, -0.048119),
    (-0.019355, -0.021055, -0.021919),
)
LTXAV_RGB_BIAS = (-0.347892, -0.363814, -0.370287)


class LTX2Model(BaseModel):
    arch = "ltx2"
    modality = "video"
    description = "LTX-2 (video with synchronised audio)"
    hub_id = "Lightricks/LTX-2"  # AI Toolkit's UI offers it (ostris/ai-toolkit ui/src/app/jobs/new/options.tsx)
    pipeline_class = "LTX2Pipeline"
    cannot_start_video = "LTX2ConditionPipeline (video conditions beside the sound track) is not wired here yet"
    components = {
        "transformer": Component("diffusers.LTX2VideoTransformer3DModel", "transformer", source="main"),
        "connectors": Component("diffusers.pipelines.ltx2.LTX2TextConnectors", "connectors"),
        "text_encoder": Component("transformers.Gemma3ForConditionalGeneration", "text_encoder"),
        "tokenizer": Component("transformers.GemmaTokenizer", "tokenizer", has_weights=False),
        "vae": Component("diffusers.AutoencoderKLLTX2Video", "vae"),
        "audio_vae": Component("diffusers.AutoencoderKLLTX2Audio", "audio_vae"),
        "vocoder": Component("diffusers.pipelines.ltx2.LTX2Vocoder", "vocoder"),
        "scheduler": Component("auto", "scheduler", has_weights=False),
    }
    # LTX-2.0 checkpoints have no prompt enhancer, processor or duration head (LTX-2.5 additions).
    pipeline_init_kwargs = dict(processor=None, prompt_enhancer=None, duration_head=None)
    latent = LatentSpec(
        "BCFHW",
        128,
        spatial_factor=32,
        temporal_factor=8,
        rgb_factors=LTXAV_RGB_FACTORS,
        rgb_bias=LTXAV_RGB_BIAS,
        factors_source="ComfyUI LTXAV",
    )
    divisibility = 32
    native_resolution = 768
    output_exts = ("mp4",)  # the audio stream needs a container that carries one
    defaults = dict(
        width=768, height=512, num_inference_steps=40, guidance_scale=4.0, num_frames=121, fps=24, output_ext="mp4"
    )
    # Sampling measured at real size: the full card at 768x512x121 with CFG peaked 2.9 GiB above the loaded weights
    # (docs/MEASURED.md "LTX-2's working sets"; 6.5 GiB if the encoder's peak is counted as sampling's, which the stage
    # timers keep apart). Under 24 GiB sampling ran out with 5.5 GiB (the same heading) beside a float8 transformer,
    # 16-bit transients of its layers included, which plans now count apart; until a float8 LTX-2 stream is measured the
    # estimate keeps 1.6x the measured peak (~4.7 GiB over 6144 latent positions) instead of the usual 15 %. Decoding
    # fits in LTX's doubled per-pixel rate (measured 6.4 GiB).
    # Encoding: Gemma 3 12B returns all 49 hidden states (1024 tokens x 3840, stacked into a second copy) and the
    # logits over its 262k vocabulary, per prompt; the full card's encoding peaked 5.1 GiB above the weights (the
    # 3 GiB estimate before it was hidden behind the sampling one, which covers both). At 24 GiB, the 22.7 GiB encoder
    # visiting beside the default 0.5 GiB reserve ran out of memory (23.9 GiB allocated: docs/MEASURED.md
    # "LTX-2's working sets"), and so did a float8 denoiser beside the streamed encoder.
    # Its VAE tiles at 512 px (diffusers' AutoencoderKLLTX*Video), not the 256 of the other video VAEs.
    working_set = WorkingSet(
        per_position=800 * 1024, per_pixel=224, frames_at_once=0, encode=6 * GIB, patch=1, tile=512
    )
    float8_activations = False  # a video step: float8 weights only (base_model.py says why)
    # LTX-2.0's own guidance: plain CFG on both modalities. The pipeline's call defaults (STG on block 28,
    # modality isolation, rescale 0.7, cross timesteps) track LTX-2.3; extra_kwargs can still set them.
    call_defaults = dict(
        stg_scale=0.0,
        modality_scale=1.0,
        guidance_rescale=0.0,
        audio_stg_scale=0.0,
        audio_modality_scale=1.0,
        audio_guidance_rescale=0.0,
        spatio_temporal_guidance_blocks=None,
        use_cross_timestep=False,
    )

    def pipeline_kwargs(self, gen):
        kw = dict(image=self.control_image(gen, 0, (gen.width, gen.height))) if gen.control_images else {}
        kw.update(
            prompt=gen.prompt,
            negative_prompt=gen.negative_prompt or None,
            width=gen.width,
            height=gen.height,
            num_frames=gen.num_frames,
            frame_rate=float(gen.fps),
            num_inference_steps=gen.num_inference_steps,
            guidance_scale=gen.guidance_scale,
            audio_guidance_scale=gen.guidance_scale,
            **self.call_defaults,
        )
        kw.update(gen.extra_kwargs)
        return kw

    def sample_media(self, pipeline, gen, generator):
        if gen.control_images:  # optional first frame, as AI Toolkit does with ctrl_img
            pipeline = self.image_to_video_pipeline(pipeline)
        output = pipeline(**self.pipeline_kwargs(gen), generator=generator, output_type=self.pixel_output)
        return self.to_media(output, gen)

    def image_to_video_pipeline(self, pipeline):
        """LTX2ImageToVideoPipeline over the same modules and the same (hooked) scheduler object."""
        from diffusers import LTX2ImageToVideoPipeline

        cached = getattr(self, "_i2v", None)
        if cached is None or cached[0] is not pipeline:
            i2v = LTX2ImageToVideoPipeline(**pipeline.components)
            i2v.set_progress_bar_config(disable=True)
            self._i2v = cached = (pipeline, i2v)
        return cached[1]

    def to_media(self, output, gen):
        frames = pipeline_pixels_to_uint8(output.frames[0])
        audio = output.audio[0]
        audio = audio.float().cpu().numpy() if hasattr(audio, "cpu") else audio
        rate = int(self.pipeline.vocoder.config.output_sampling_rate)
        # The vocoder's length follows the audio latents (25/s, rounded): never let the track outlast the video.
        audio = audio[:, : int(len(frames) * rate / gen.fps)]
        return GeneratedMedia("video", frames=frames, fps=gen.fps, audio=audio, sample_rate=rate)

    def unpack_latents(self, latents, gen):
        from diffusers import LTX2Pipeline

        _, _, frames, height, width = self.latent_shape(gen)
        pipe = self.pipeline
        return LTX2Pipeline._unpack_latents(
            latents, frames, height, width, pipe.transformer_spatial_patch_size, pipe.transformer_temporal_patch_size
        )
