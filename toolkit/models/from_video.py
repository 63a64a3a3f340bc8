"""Video-to-video: a request that starts from a video (``sample.init_video``) at a strength.

The input's frames are fitted to the request: its first ``num_frames`` frames (the last one held where the clip is
shorter), each resized to the request's width and height (Lanczos), as a start image is. The family's pipeline for
the task re-noises their encoding to the strength's point of the schedule and runs the remaining steps: diffusers'
``WanVideoToVideoPipeline`` built with ``from_pipe`` for Wan 2.1, ``LTXConditionPipeline`` (its ``latents`` with
``denoise_strength``) for LTX-Video. Strength 1 keeps nothing of the input: text-to-video, as for images.

A video is read with PyAV (mp4, which ``POST /assets`` takes and the engine writes) or Pillow (an animated WebP,
which ``POST /assets`` takes as an image; a still image is a clip of one frame).
"""

from __future__ import annotations

from typing import Optional

VID2VID = "vid2vid"
PIL_VIDEO = (".webp", ".gif", ".png", ".jpg", ".jpeg", ".bmp")  # a still is a clip of one frame, held
MAX_FRAMES = 1025  # SampleBody's num_frames bound: no request reads more


def read_frames(path: str, limit: int = MAX_FRAMES) -> list:
    """Up to ``limit`` frames of the video at ``path``, RGB PIL images. ``ValueError`` says why it cannot be read."""
    from PIL import Image, ImageSequence

    frames = []
    if str(path).lower().endswith(PIL_VIDEO):
        try:
            with Image.open(path) as img:
                for frame in ImageSequence.Iterator(img):
                    frames.append(frame.convert("RGB"))
                    if len(frames) >= limit:
                        break
        except (OSError, ValueError) as e:
            raise ValueError(f"not a readable animated image ({type(e).__name__}: {e})") from None
    else:
        import av

        try:
            with av.open(str(path)) as container:
                for frame in container.decode(video=0):
                    frames.append(frame.to_image().convert("RGB"))
                    if len(frames) >= limit:
                        break
        except (av.error.FFmpegError, IndexError, ValueError) as e:
            raise ValueError(f"not a readable video ({type(e).__name__}: {e})") from None
    if not frames:
        raise ValueError("the video has no frames")
    return frames


def fitted_frames(path: str, count: int, size: tuple) -> list:
    """The first ``count`` frames at ``size`` (width, height); the last frame repeats where the clip is shorter."""
    from PIL import Image

    frames = [f if f.size == tuple(size) else f.resize(tuple(size), Image.LANCZOS) for f in read_frames(path, count)]
    return frames + [frames[-1]] * (count - len(frames))


def check(path: str) -> Optional[str]:
    """Why the file cannot start a video-to-video request, or None: it must hold at least one readable frame."""
    try:
        read_frames(path, 1)
    except ValueError as e:
        return str(e)
    return None
