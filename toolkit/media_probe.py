"""Reading a written file back (``probe``): kind, size, frames, fps, duration and audio, from the file itself and
never from the request. Tests, the bench and the result checks read results through this."""

from __future__ import annotations

import os

from toolkit.media import AUDIO_EXTS, _ext, _meta


def probe(path):
    """Read a written file back; the numbers come from the file, not from the request."""
    ext = _ext(path)
    if ext == "mp4":
        return _probe_mp4(path)
    if ext in AUDIO_EXTS:
        return _probe_audio(path, ext)
    return _probe_pil(path)


def _probe_pil(path):
    """Animated WebP counts as video; its fps is derived from the per-frame duration."""
    from PIL import Image

    with Image.open(path) as img:
        width, height = img.size
        n = getattr(img, "n_frames", 1)
    if n <= 1:
        return _meta("image", path, width=width, height=height, frames=1)
    total_ms = sum(_webp_frame_durations(path))
    fps = n * 1000 / total_ms if total_ms else None
    return _meta(
        "video", path, width=width, height=height, frames=n, fps=fps, duration_s=total_ms / 1000, has_audio=False
    )


def _webp_frame_durations(path):
    """Frame durations (ms) from the ANMF chunks.

    PIL only fills ``info['duration']`` after decoding each frame; reading the 24-bit
    duration field of the RIFF chunks is exact and costs no decoding.
    """
    import struct

    durations = []
    with open(path, "rb") as f:
        f.seek(12)  # "RIFF" <size> "WEBP"
        while True:
            head = f.read(8)
            if len(head) < 8:
                return durations
            fourcc, size = head[:4], struct.unpack("<I", head[4:])[0]
            if fourcc == b"ANMF":
                payload = f.read(16)
                durations.append(int.from_bytes(payload[12:15], "little"))
                f.seek(size + (size & 1) - 16, os.SEEK_CUR)
            else:
                f.seek(size + (size & 1), os.SEEK_CUR)


def _probe_mp4(path):
    import av

    with av.open(str(path)) as container:
        if not container.streams.video:
            raise ValueError(f"{path!r} has no video stream")
        v = container.streams.video[0]
        width, height = v.codec_context.width, v.codec_context.height
        fps = float(v.average_rate) if v.average_rate else None
        frames = v.frames or sum(1 for _ in container.decode(video=0))
        audio = container.streams.audio[0] if container.streams.audio else None
        sample_rate = audio.codec_context.sample_rate if audio else None
    return _meta(
        "video",
        path,
        width=width,
        height=height,
        frames=frames,
        fps=fps,
        sample_rate=sample_rate,
        duration_s=frames / fps if fps else None,
        has_audio=audio is not None,
    )


def _probe_audio(path, ext):
    if ext == "mp3":
        rate, samples = _probe_mp3(path)
    else:
        import soundfile as sf

        info = sf.info(str(path))
        rate, samples = info.samplerate, info.frames
    return _meta("audio", path, sample_rate=rate, duration_s=samples / rate)


def _probe_mp3(path):
    """Decode to count samples: exact, and FFmpeg honours the LAME gapless tag."""
    import av

    with av.open(str(path)) as container:
        rate = container.streams.audio[0].codec_context.sample_rate
        samples = sum(f.samples for f in container.decode(audio=0))
    return rate, samples


def audio_stream_duration(path):
    """Seconds of the first audio track of a container (None if it has none).

    Kept apart from ``probe`` because the video's duration and its audio's may differ.
    """
    import av

    with av.open(str(path)) as container:
        if not container.streams.audio:
            return None
        a = container.streams.audio[0]
        if a.duration is not None:
            return float(a.duration * a.time_base)
        return sum(f.samples for f in container.decode(audio=0)) / a.codec_context.sample_rate
