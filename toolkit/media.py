"""Writing generated media (stills, video, audio) to disk and reading it back.

Mirrors what AI Toolkit does when it saves samples (its ``save_image``/thumbnail path): files land
atomically via ``<folder>/.tmp/`` and get a ``<folder>/.thumbs/<file>.jpg`` thumbnail
(300x300 centre crop, LANCZOS, JPEG q90) that exists *before* the media file appears, so
a UI watching the folder never sees a file without its thumbnail or a half-written file.

No media library (PIL, av, soundfile, numpy) is imported at module import time: the GPU
machine lacks some of them and callers that only need e.g. images must still import this
module. Torch is never used; callers hand over numpy arrays or PIL images.

Every save returns, and ``toolkit.media_probe.probe`` reads back, a dict with the keys in ``META_KEYS``; keys
that do not apply are None (``frames`` counts video frames only, ``has_audio`` is set for
video only, ``thumbnail`` only by ``save_media``). ``save_media`` tells the kind from the
data: float arrays are audio, uint8 (F,H,W,C) arrays / frame lists / animated PIL images
are video, PIL images and uint8 HxW[xC] arrays are stills.

Known limits: two ``save_media`` calls writing the same name at the same time share
``.tmp/<name>``; if the final ``os.replace`` itself fails, the new thumbnail stays.
"""

import os
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from typing import Any, Optional

from toolkit.media_info import container_comment, pil_save_kwargs
from toolkit.png_writer import fast_png

IMAGE_EXTS = ("png", "jpg", "jpeg", "webp")
VIDEO_EXTS = ("mp4", "webp")
AUDIO_EXTS = ("wav", "flac", "mp3")

META_KEYS = (
    "kind",
    "ext",
    "path",
    "bytes",
    "width",
    "height",
    "frames",
    "fps",
    "sample_rate",
    "duration_s",
    "has_audio",
    "thumbnail",
)

THUMB_SIZE = 300
THUMB_QUALITY = 90
WEBP_VIDEO_QUALITY = 80
MP4_CRF = 20

# RGB and RGBA stills go through fpng (toolkit/png_writer.py); what it cannot write, through Pillow at zlib
# level 1 instead of 6: a 1024² result in ~85 ms instead of ~215 ms for files ~15 % larger. The engine returns
# results while the user waits; smaller files are one `output_ext: webp` away.
PNG_COMPRESS_LEVEL = 1
_PIL_FORMATS = {"png": "PNG", "jpg": "JPEG", "jpeg": "JPEG", "webp": "WEBP"}
_LAYOUTS = {1: "mono", 2: "stereo"}
_MAX_AUDIO_CHANNELS = 16


# ----------------------------------------------------------------------------- helpers


def _ext(path):
    """Extension decides the format everywhere, so normalise it once."""
    ext = os.path.splitext(str(path))[1].lower().lstrip(".")
    if ext not in IMAGE_EXTS + VIDEO_EXTS + AUDIO_EXTS:
        raise ValueError(
            f"unsupported extension {ext!r} for {path!r}; supported: images {IMAGE_EXTS}, "
            f"video {VIDEO_EXTS}, audio {AUDIO_EXTS}"
        )
    return ext


def _require_ext(path, allowed, what):
    ext = _ext(path)
    if ext not in allowed:
        raise ValueError(f"{what} cannot be saved as .{ext} ({path!r}); use one of {allowed}")
    return ext


def _meta(kind, path, **values):
    """One dict shape for every save and probe, so callers never need key checks."""
    meta = dict.fromkeys(META_KEYS)
    meta.update(kind=kind, ext=_ext(path), path=str(path), bytes=os.path.getsize(path))
    meta.update(values)
    return meta


def _mkparent(path):
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, exist_ok=True)


def _is_pil(obj):
    """Duck-typed so PIL is not imported just to ask the question."""
    return hasattr(obj, "mode") and hasattr(obj, "size") and hasattr(obj, "convert")


def _to_pil(image):
    """Accept PIL images or uint8 arrays (HxW, HxWx3, HxWx4) with one clear error."""
    if _is_pil(image):
        return image
    import numpy as np
    from PIL import Image

    arr = np.asarray(image)
    if arr.dtype != np.uint8:
        raise ValueError(f"image array must be uint8, got dtype {arr.dtype}")
    if arr.ndim == 3 and arr.shape[2] == 1:
        arr = arr[:, :, 0]
    if not (arr.ndim == 2 or (arr.ndim == 3 and arr.shape[2] in (3, 4))):
        raise ValueError(f"image array must be HxW, HxWx3 or HxWx4, got shape {arr.shape}")
    if arr.shape[0] < 1 or arr.shape[1] < 1:
        raise ValueError(f"image array is empty: shape {arr.shape}")
    return Image.fromarray(np.ascontiguousarray(arr))


def _rgb(image):
    """JPEG and the video encoders only take RGB; drop alpha/palette here once."""
    return image if image.mode == "RGB" else image.convert("RGB")


def _frame_list(frames):
    """Frames as a sequence of per-frame items, validated but not yet converted.

    Converting lazily keeps peak memory at one frame for long PIL lists, and means a bad
    frame halfway through fails mid-write (which the atomic path must survive).
    """
    if _is_pil(frames):
        raise ValueError("video frames must be a list of images or an (F,H,W,3) array, got a single image")
    if isinstance(frames, (list, tuple)):
        items = list(frames)
    else:
        import numpy as np

        arr = np.asarray(frames)
        if arr.dtype != np.uint8 or arr.ndim != 4 or arr.shape[3] not in (3, 4):
            raise ValueError(f"video array must be uint8 with shape (F,H,W,3), got dtype {arr.dtype} shape {arr.shape}")
        items = list(arr)
    if len(items) < 1:
        raise ValueError("video needs at least 1 frame, got 0")
    return items


def _check_fps(fps):
    if fps is None or not fps > 0:
        raise ValueError(f"video needs fps > 0, got {fps!r}")
    return fps


def _audio_array(samples):
    """Normalise audio to float32 (channels, samples) in [-1, 1]."""
    import numpy as np

    arr = np.asarray(samples)
    if not np.issubdtype(arr.dtype, np.floating):
        raise ValueError(f"audio must be a float array in [-1, 1], got dtype {arr.dtype}")
    if arr.ndim == 1:
        arr = arr[None, :]
    if arr.ndim != 2:
        raise ValueError(f"audio must have shape (samples,) or (channels, samples), got {arr.shape}")
    if arr.shape[0] > _MAX_AUDIO_CHANNELS:
        raise ValueError(
            f"audio shape {arr.shape} has {arr.shape[0]} channels; expected "
            "(channels, samples) - did you pass (samples, channels)?"
        )
    if arr.shape[1] < 1:
        raise ValueError(f"audio has no samples: shape {arr.shape}")
    return np.ascontiguousarray(np.clip(arr, -1.0, 1.0), dtype=np.float32)


def _check_rate(sample_rate):
    if not sample_rate or int(sample_rate) != sample_rate or sample_rate <= 0:
        raise ValueError(f"audio needs a positive integer sample_rate, got {sample_rate!r}")
    return int(sample_rate)


def _layout(channels, ext):
    if channels not in _LAYOUTS:
        raise ValueError(f".{ext} audio supports 1 or 2 channels, got {channels}")
    return _LAYOUTS[channels]


# ----------------------------------------------------------------------------- images


def save_image(image, path, quality=None, info=None):
    """Save a still; quality (0-100, default 95) applies to jpg/webp (png is lossless and ignores it). ``info``:
    the generation settings to embed (toolkit/media_info.py)."""
    ext = _require_ext(path, IMAGE_EXTS, "an image")
    img = _to_pil(image)
    if ext in ("jpg", "jpeg"):
        img = _rgb(img)
    _mkparent(path)
    fast = fast_png(img, info) if ext == "png" else None  # toolkit/png_writer.py; None: Pillow writes it
    if fast is not None:
        with open(path, "wb") as f:
            f.write(fast)
    else:
        kwargs = (
            {"compress_level": PNG_COMPRESS_LEVEL} if ext == "png" else {"quality": 95 if quality is None else quality}
        )
        img.save(path, format=_PIL_FORMATS[ext], **kwargs, **pil_save_kwargs(ext, info))
    return _meta("image", path, width=img.width, height=img.height, frames=1)


# ----------------------------------------------------------------------------- video


def save_video(frames, path, fps, audio=None, sample_rate=None, info=None):
    """Save frames as animated WebP or H.264 mp4 (optionally with an AAC track).

    Audio is only possible in mp4; asking for it with webp is an error rather than a
    silent drop, because a video+audio model would otherwise lose its sound unnoticed.
    """
    ext = _require_ext(path, VIDEO_EXTS, "a video")
    items = _frame_list(frames)
    _check_fps(fps)
    if audio is not None and ext != "mp4":
        raise ValueError(f"audio can only be muxed into .mp4, not .{ext}")
    _mkparent(path)
    if ext == "webp":
        return _save_webp_video(items, path, fps, info)
    return _save_mp4(items, path, fps, audio, sample_rate, info)


def _save_webp_video(items, path, fps, info=None):
    """Same settings as AI Toolkit; duration is whole ms so the real fps is 1000/ms."""
    pil = [_rgb(_to_pil(f)) for f in items]
    size = pil[0].size
    for i, f in enumerate(pil):
        if f.size != size:
            raise ValueError(f"frame {i} is {f.size[0]}x{f.size[1]}, frame 0 is {size[0]}x{size[1]}")
    ms = max(1, int(1000 // fps))
    pil[0].save(
        path,
        format="WEBP",
        save_all=True,
        append_images=pil[1:],
        duration=ms,
        loop=0,
        quality=WEBP_VIDEO_QUALITY,
        lossless=False,
        **pil_save_kwargs("webp", info),
    )
    return _meta(
        "video",
        path,
        width=size[0],
        height=size[1],
        frames=len(pil),
        fps=1000 / ms,
        duration_s=len(pil) * ms / 1000,
        has_audio=False,
    )


def _even_rgb(frame, size):
    """yuv420p needs even sides: pad odd ones by repeating the last row/column."""
    import numpy as np

    arr = np.asarray(_rgb(_to_pil(frame)))
    h, w = arr.shape[:2]
    if (w, h) != size:
        raise ValueError(f"frame is {w}x{h}, frame 0 is {size[0]}x{size[1]}")
    if h % 2 or w % 2:
        arr = np.pad(arr, ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    return np.ascontiguousarray(arr)


def _save_mp4(items, path, fps, audio, sample_rate, info=None):
    from fractions import Fraction

    import av

    first = _to_pil(items[0])
    size = first.size
    out_w, out_h = size[0] + size[0] % 2, size[1] + size[1] % 2
    rate = Fraction(fps).limit_denominator(1001)
    pcm = None
    if audio is not None:
        pcm = _audio_array(audio)
        sample_rate = _check_rate(sample_rate)
        _layout(pcm.shape[0], "mp4")
    with av.open(str(path), mode="w", format="mp4") as container:
        container.metadata.update(container_comment(info))
        stream = container.add_stream("libx264", rate=rate)
        stream.width, stream.height, stream.pix_fmt = out_w, out_h, "yuv420p"
        # mbtree=0: with macroblock-tree rate control libx264 gave a different stream for identical frames in
        # about one run of three; without it, a seed replays to the same bytes (a small cost in quality).
        stream.options = {"crf": str(MP4_CRF), "x264-params": "mbtree=0"}
        astream = _add_audio_stream(container, "aac", pcm, sample_rate) if pcm is not None else None
        for frame in items:
            vf = av.VideoFrame.from_ndarray(_even_rgb(frame, size), format="rgb24")
            container.mux(stream.encode(vf))
        container.mux(stream.encode())
        if astream is not None:
            _encode_audio(container, astream, pcm, sample_rate)
    return _meta(
        "video",
        path,
        width=out_w,
        height=out_h,
        frames=len(items),
        fps=float(rate),
        sample_rate=sample_rate if pcm is not None else None,
        duration_s=len(items) / float(rate),
        has_audio=pcm is not None,
    )


def _add_audio_stream(container, codec, pcm, sample_rate):
    stream = container.add_stream(codec, rate=sample_rate)
    stream.layout = _layout(pcm.shape[0], codec)
    return stream


def _encode_audio(container, stream, pcm, sample_rate):
    """One big planar frame; PyAV re-frames and converts to the codec's sample format."""
    import av

    frame = av.AudioFrame.from_ndarray(pcm, format="fltp", layout=stream.layout.name)
    frame.sample_rate = sample_rate
    frame.pts = 0
    container.mux(stream.encode(frame))
    container.mux(stream.encode())


# ----------------------------------------------------------------------------- audio


def save_audio(samples, path, sample_rate, info=None):
    """wav (PCM_16) / flac (PCM_16) via soundfile, mp3 via PyAV's libmp3lame.

    mp3 goes through PyAV so that writing and probing use the same library (soundfile may
    be missing on the GPU box). The encoder adds priming/padding frames but also writes a
    LAME/Xing tag, so FFmpeg and libsndfile trim back to the exact sample count when
    reading; players that ignore the tag see up to ~50 ms more.
    """
    ext = _require_ext(path, AUDIO_EXTS, "audio")
    pcm = _audio_array(samples)
    sample_rate = _check_rate(sample_rate)
    _mkparent(path)
    if ext == "mp3":
        _save_mp3(pcm, path, sample_rate, info)
    else:
        import soundfile as sf

        with sf.SoundFile(
            str(path), "w", samplerate=sample_rate, channels=pcm.shape[0], subtype="PCM_16", format=ext.upper()
        ) as f:
            if info:
                f.comment = info["parameters"]
            f.write(pcm.T)
    return _meta("audio", path, sample_rate=sample_rate, duration_s=pcm.shape[1] / sample_rate)


def _save_mp3(pcm, path, sample_rate, info=None):
    import av

    with av.open(str(path), mode="w", format="mp3") as container:
        container.metadata.update(container_comment(info))
        stream = _add_audio_stream(container, "libmp3lame", pcm, sample_rate)
        _encode_audio(container, stream, pcm, sample_rate)


# ----------------------------------------------------------------------------- thumbnails


def _thumb_from_image(image):
    from PIL import Image, ImageOps

    return ImageOps.fit(_rgb(_to_pil(image)), (THUMB_SIZE, THUMB_SIZE), Image.LANCZOS)


def _thumb_from_audio(samples):
    """A peak-envelope bar chart, so audio files get a recognisable tile in the UI."""
    import numpy as np
    from PIL import Image, ImageDraw

    mono = np.abs(_audio_array(samples)).max(axis=0)
    bars, gap = 60, 1
    width = THUMB_SIZE / bars
    chunks = np.array_split(mono, bars) if mono.size >= bars else [mono] * bars
    peaks = np.array([c.max() if c.size else 0.0 for c in chunks])
    peaks = peaks / peaks.max() if peaks.max() > 0 else peaks
    img = Image.new("RGB", (THUMB_SIZE, THUMB_SIZE), (24, 24, 32))
    draw = ImageDraw.Draw(img)
    mid = THUMB_SIZE / 2
    for i, p in enumerate(peaks):
        half = max(1.0, p * (THUMB_SIZE * 0.45))
        x0 = i * width
        draw.rectangle([x0, mid - half, x0 + width - 1 - gap, mid + half], fill=(200, 220, 255))
    return img


def _write_thumbnail(kind, media, path):
    _make_thumbnail(kind, media).save(path, format="JPEG", quality=THUMB_QUALITY)


def _make_thumbnail(kind, media):
    if kind == "audio":
        return _thumb_from_audio(media)
    if kind == "video":
        return _thumb_from_image(_frame_list(media)[0])
    return _thumb_from_image(media)


# ----------------------------------------------------------------------------- atomic entry


def _media_kind(media):
    """Decide image/video/audio from the data alone; a mismatching extension then errors."""
    if _is_pil(media):
        return "video" if getattr(media, "n_frames", 1) > 1 else "image"
    if isinstance(media, (list, tuple)):
        return "video"
    import numpy as np

    arr = np.asarray(media)
    if np.issubdtype(arr.dtype, np.floating) and arr.ndim in (1, 2):
        return "audio"
    if arr.ndim == 4:
        return "video"
    if arr.ndim in (2, 3):
        return "image"
    raise ValueError(f"cannot tell what kind of media dtype {arr.dtype} shape {arr.shape} is")


def _pil_frames(image):
    """An animated PIL image (e.g. a loaded GIF/WebP) becomes a plain frame list."""
    from PIL import ImageSequence

    return [f.convert("RGB") for f in ImageSequence.Iterator(image)]


def _save_by_kind(kind, media, path, fps, sample_rate, audio, info=None, quality=None):
    if kind == "audio":
        return save_audio(media, path, sample_rate, info=info)
    if kind == "video":
        return save_video(media, path, fps, audio=audio, sample_rate=sample_rate, info=info)
    if audio is not None:
        raise ValueError("audio was given for a still image")
    return save_image(media, path, quality, info=info)


def _remove(path):
    try:
        os.remove(path)
    except FileNotFoundError:
        pass


def save_media(media, path, *, kind=None, fps=None, sample_rate=None, audio=None, info=None, quality=None):
    """Atomically save any media plus its thumbnail; the generator's single entry point.

    ``kind`` (image | video | audio) is what the caller knows it made; without it the kind is inferred from the
    data, for callers holding a plain array (a float 2-D array then counts as audio, not as a grey image).
    Order matters for the UI: the thumbnail is in place before the media file, and the
    media file only appears (or replaces an old one) once fully written. On failure the
    temp files are removed and any existing file at ``path`` is untouched.
    """
    _ext(path)  # fail on a bad extension before any folder is created
    if kind not in (None, "image", "video", "audio"):
        raise ValueError(f"media kind {kind!r} is not image, video or audio")
    kind = kind or _media_kind(media)
    if kind == "video" and _is_pil(media):
        media = _pil_frames(media)
    folder, name = os.path.split(os.path.abspath(path))
    tmp_dir = os.path.join(folder, ".tmp")
    thumb_dir = os.path.join(folder, ".thumbs")
    os.makedirs(tmp_dir, exist_ok=True)
    os.makedirs(thumb_dir, exist_ok=True)
    tmp_media = os.path.join(tmp_dir, name)
    tmp_thumb = os.path.join(tmp_dir, name + ".thumb.jpg")
    final_thumb = os.path.join(thumb_dir, name + ".jpg")
    if _is_pil(media):
        media.load()  # two threads read it at once below: loaded here, not lazily by both
    try:
        with ThreadPoolExecutor(max_workers=1) as pool:  # the thumbnail beside the encode (PIL drops the GIL):
            thumb = pool.submit(_write_thumbnail, kind, media, tmp_thumb)  # 25 ms of a 1024² image's end to end
            meta = _save_by_kind(kind, media, tmp_media, fps, sample_rate, audio, info, quality)
            thumb.result()
        os.replace(tmp_thumb, final_thumb)
        os.replace(tmp_media, path)
    except BaseException:
        _remove(tmp_media)
        _remove(tmp_thumb)
        raise
    meta.update(path=str(path), thumbnail=final_thumb)
    return meta


# ----------------------------------------------------------------------------- a family's result


@dataclass
class GeneratedMedia:
    """What a family hands back for saving: numpy arrays, never tensors, so media writing stays torch-free."""

    kind: str  # image | video | audio
    image: Any = None  # H x W x 3 uint8
    frames: Any = None  # F x H x W x 3 uint8
    audio: Any = None  # channels x samples float32
    sample_rate: Optional[int] = None
    fps: Optional[int] = None


def save_generated(media: GeneratedMedia, gen, count: int = 0, max_count: int = 0, info=None) -> dict:
    """One family result written where its ``GenerateImageConfig`` (``gen``) says, atomically (``save_media``),
    with ``info`` (the settings, toolkit/media_info.py) embedded."""
    path = gen.get_image_path(count, max_count)
    if media.kind == "image":
        quality = getattr(gen, "output_quality", None)
        return save_media(media.image, path, kind="image", info=info, quality=quality)
    if media.kind == "video":
        fps, rate = media.fps or gen.fps, media.sample_rate
        return save_media(media.frames, path, kind="video", fps=fps, audio=media.audio, sample_rate=rate, info=info)
    return save_media(media.audio, path, kind="audio", sample_rate=media.sample_rate, info=info)
