"""Real files in tmp_path, read back with PIL / PyAV / soundfile; no mocks."""

import os
import subprocess
import sys

import av  # hard dependencies (requirements.txt): a broken install fails here, it does not skip
import numpy as np
import pytest
import soundfile as sf
from PIL import Image

from toolkit import media, media_probe


def _image(w=64, h=48):
    """A gradient, so lossy codecs have something real to encode."""
    x = np.linspace(0, 255, w, dtype=np.uint8)[None, :, None]
    y = np.linspace(0, 255, h, dtype=np.uint8)[:, None, None]
    return np.concatenate(np.broadcast_arrays(x, y, (x // 2 + y // 2)), axis=2).copy()


def _frames(n=9, w=64, h=48):
    return np.stack([np.roll(_image(w, h), i * 3, axis=1) for i in range(n)])


def _tone(seconds, rate, channels=2):
    t = np.arange(int(seconds * rate)) / rate
    wave = (0.4 * np.sin(2 * np.pi * 440 * t)).astype(np.float32)
    return np.stack([wave] * channels) if channels else wave


def _listdir(path):
    return sorted(os.listdir(path)) if os.path.isdir(path) else []


# ----------------------------------------------------------------------------- import hygiene


def test_import_pulls_in_no_media_library():
    code = (
        "import sys, toolkit.media; "
        "bad = [m for m in ('PIL', 'av', 'soundfile', 'numpy', 'torch') if m in sys.modules]; "
        "print(bad); sys.exit(1 if bad else 0)"
    )
    res = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        cwd=os.path.dirname(os.path.dirname(os.path.abspath(__file__))),
    )
    assert res.returncode == 0, res.stdout + res.stderr


# ----------------------------------------------------------------------------- images


@pytest.mark.parametrize("ext,fmt", [("png", "PNG"), ("jpg", "JPEG"), ("jpeg", "JPEG"), ("webp", "WEBP")])
def test_image_round_trip(tmp_path, ext, fmt):
    path = tmp_path / f"a.{ext}"
    meta = media.save_image(_image(65, 33), path)
    assert meta["kind"] == "image" and meta["ext"] == ext
    assert (meta["width"], meta["height"], meta["frames"]) == (65, 33, 1)
    assert meta["bytes"] == os.path.getsize(path) > 0
    assert set(meta) == set(media.META_KEYS)
    with Image.open(path) as img:
        assert img.format == fmt and img.size == (65, 33)
    assert media_probe.probe(path) == meta


def test_png_is_lossless_and_pil_rgba_becomes_rgb_jpeg(tmp_path):
    arr = _image()
    media.save_image(arr, tmp_path / "a.png")
    assert np.array_equal(np.asarray(Image.open(tmp_path / "a.png")), arr)
    rgba = Image.fromarray(arr).convert("RGBA")
    media.save_image(rgba, tmp_path / "b.jpg")
    assert Image.open(tmp_path / "b.jpg").mode == "RGB"


@pytest.mark.parametrize(
    "bad,msg",
    [
        (np.zeros((8, 8, 3), np.float32), "uint8"),
        (np.zeros((8, 8, 5), np.uint8), "shape"),
        (np.zeros((2, 8, 8, 3, 1), np.uint8), "shape"),
    ],
)
def test_image_bad_arrays(tmp_path, bad, msg):
    with pytest.raises(ValueError, match=msg):
        media.save_image(bad, tmp_path / "a.png")


# ----------------------------------------------------------------------------- video


@pytest.mark.parametrize("w,h", [(64, 48), (65, 33)])
def test_mp4_decodes_with_pyav(tmp_path, w, h):
    path = tmp_path / "v.mp4"
    meta = media.save_video(_frames(9, w, h), path, fps=24)
    ew, eh = w + w % 2, h + h % 2  # odd sides are padded to even by edge replication
    assert (meta["width"], meta["height"], meta["frames"], meta["fps"]) == (ew, eh, 9, 24.0)
    assert meta["has_audio"] is False and meta["duration_s"] == pytest.approx(9 / 24)
    with av.open(str(path)) as c:
        v = c.streams.video[0]
        assert v.codec_context.name == "h264"
        assert v.codec_context.pix_fmt == "yuv420p"
        assert (v.codec_context.width, v.codec_context.height) == (ew, eh)
        decoded = [f.to_ndarray(format="rgb24") for f in c.decode(video=0)]
        assert not c.streams.audio
    assert len(decoded) == 9
    assert media_probe.audio_stream_duration(path) is None
    # content survives: the frame is close to the (padded) source, not garbage
    src = np.pad(_frames(9, w, h)[4], ((0, h % 2), (0, w % 2), (0, 0)), mode="edge")
    assert np.abs(decoded[4].astype(int) - src).mean() < 12
    probed = media_probe.probe(path)
    assert {k: probed[k] for k in ("kind", "width", "height", "frames", "has_audio")} == {
        "kind": "video",
        "width": ew,
        "height": eh,
        "frames": 9,
        "has_audio": False,
    }
    assert probed["fps"] == pytest.approx(24)


def test_mp4_from_pil_list_and_fractional_fps(tmp_path):
    frames = [Image.fromarray(f) for f in _frames(5)]
    meta = media.save_video(frames, tmp_path / "v.mp4", fps=30000 / 1001)
    assert meta["frames"] == 5 and meta["fps"] == pytest.approx(29.97, abs=0.01)
    assert media_probe.probe(tmp_path / "v.mp4")["fps"] == pytest.approx(29.97, abs=0.01)


def test_mp4_with_audio(tmp_path):
    path = tmp_path / "av.mp4"
    rate = 44100
    audio = _tone(9 / 24, rate)
    meta = media.save_video(_frames(9), path, fps=24, audio=audio, sample_rate=rate)
    assert meta["has_audio"] is True and meta["sample_rate"] == rate
    with av.open(str(path)) as c:
        assert [s.type for s in c.streams] == ["video", "audio"]
        a = c.streams.audio[0]
        assert a.codec_context.name == "aac" and a.codec_context.sample_rate == rate
        assert a.codec_context.channels == 2
        assert sum(1 for _ in c.decode(video=0)) == 9
    # AAC works in 1024-sample frames; the stream duration is still trimmed to the input
    assert media_probe.audio_stream_duration(path) == pytest.approx(9 / 24, abs=0.03)
    probed = media_probe.probe(path)
    assert probed["has_audio"] is True and probed["sample_rate"] == rate


def test_mp4_mono_audio_1d(tmp_path):
    meta = media.save_video(
        _frames(3), tmp_path / "m.mp4", fps=8, audio=_tone(0.375, 16000, channels=0), sample_rate=16000
    )
    assert meta["has_audio"]
    with av.open(str(tmp_path / "m.mp4")) as c:
        assert c.streams.audio[0].codec_context.channels == 1


def test_animated_webp(tmp_path):
    path = tmp_path / "v.webp"
    meta = media.save_video(_frames(7, 65, 33), path, fps=16)
    assert (meta["kind"], meta["width"], meta["height"], meta["frames"]) == ("video", 65, 33, 7)
    assert meta["fps"] == pytest.approx(1000 / (1000 // 16))  # whole-ms frame duration
    with Image.open(path) as img:
        assert img.format == "WEBP" and img.n_frames == 7 and img.size == (65, 33)
        assert img.info.get("loop") == 0
        durations = []
        for i in range(img.n_frames):  # PIL fills info["duration"] only once a frame is loaded
            img.seek(i)
            img.load()
            durations.append(img.info["duration"])
    assert durations == [1000 // 16] * 7 == media_probe._webp_frame_durations(path)
    probed = media_probe.probe(path)
    assert {k: probed[k] for k in ("kind", "frames", "width", "height")} == {
        "kind": "video",
        "frames": 7,
        "width": 65,
        "height": 33,
    }
    assert probed["fps"] == pytest.approx(meta["fps"])
    assert probed["duration_s"] == pytest.approx(meta["duration_s"])


def test_video_errors(tmp_path):
    with pytest.raises(ValueError, match="at least 1 frame"):
        media.save_video([], tmp_path / "v.mp4", fps=24)
    with pytest.raises(ValueError, match="at least 1 frame"):
        media.save_video(np.zeros((0, 8, 8, 3), np.uint8), tmp_path / "v.mp4", fps=24)
    with pytest.raises(ValueError, match="uint8"):
        media.save_video(np.zeros((2, 8, 8, 3), np.float32), tmp_path / "v.mp4", fps=24)
    with pytest.raises(ValueError, match="shape"):
        media.save_video(np.zeros((8, 8, 3), np.uint8), tmp_path / "v.mp4", fps=24)
    with pytest.raises(ValueError, match="fps"):
        media.save_video(_frames(2), tmp_path / "v.mp4", fps=0)
    with pytest.raises(ValueError, match="only be muxed into .mp4"):
        media.save_video(_frames(2), tmp_path / "v.webp", fps=8, audio=_tone(0.1, 8000), sample_rate=8000)
    with pytest.raises(ValueError, match="video"):
        media.save_video(_frames(2), tmp_path / "v.png", fps=8)


# ----------------------------------------------------------------------------- audio


@pytest.mark.parametrize("ext", ["wav", "flac"])
def test_lossless_audio_exact_duration(tmp_path, ext):
    rate = 48000
    tone = _tone(0.5, rate)
    meta = media.save_audio(tone, tmp_path / f"a.{ext}", rate)
    assert meta["kind"] == "audio" and meta["sample_rate"] == rate
    assert meta["duration_s"] == pytest.approx(0.5)
    data, sr = sf.read(str(tmp_path / f"a.{ext}"), dtype="float32", always_2d=True)
    assert sr == rate and data.shape == (24000, 2)
    assert np.abs(data.T - tone).max() < 1e-3  # PCM_16 quantisation only
    assert media_probe.probe(tmp_path / f"a.{ext}") == meta


@pytest.mark.parametrize("channels", [0, 1, 2])
def test_mp3_duration(tmp_path, channels):
    """Tolerance 30 ms: libmp3lame pads to 1152-sample frames plus ~529 samples of encoder
    delay (~36 ms at 44.1 kHz together); the LAME tag lets FFmpeg trim that back, which in
    practice gives the exact count, but we only promise "within one frame"."""
    rate = 44100
    tone = _tone(0.7, rate, channels)
    path = tmp_path / "a.mp3"
    meta = media.save_audio(tone, path, rate)
    expected = tone.shape[-1] / rate
    assert meta["duration_s"] == pytest.approx(expected)
    probed = media_probe.probe(path)
    assert probed["kind"] == "audio" and probed["sample_rate"] == rate
    assert probed["duration_s"] == pytest.approx(expected, abs=0.03)
    with av.open(str(path)) as c:
        assert c.streams.audio[0].codec_context.name in ("mp3", "mp3float")
        assert c.streams.audio[0].codec_context.channels == max(channels, 1)


@pytest.mark.parametrize(
    "bad,msg",
    [
        (np.zeros(100, np.int16), "float"),
        (np.zeros((2, 2, 10), np.float32), "shape"),
        (np.zeros((1000, 2), np.float32), "channels"),
        (np.zeros((2, 0), np.float32), "no samples"),
    ],
)
def test_audio_bad_arrays(tmp_path, bad, msg):
    with pytest.raises(ValueError, match=msg):
        media.save_audio(bad, tmp_path / "a.wav", 16000)


def test_audio_clipped_not_wrapped(tmp_path):
    loud = np.array([[2.0, -3.0, 0.5]], np.float32)
    media.save_audio(loud, tmp_path / "a.wav", 8000)
    data, _ = sf.read(str(tmp_path / "a.wav"), dtype="float32")
    assert data[0] > 0.99 and data[1] < -0.99 and abs(data[2] - 0.5) < 1e-3


# ----------------------------------------------------------------------------- extensions


@pytest.mark.parametrize(
    "call",
    [
        lambda p: media.save_image(_image(), p),
        lambda p: media.save_video(_frames(2), p, fps=8),
        lambda p: media.save_audio(_tone(0.1, 8000), p, 8000),
        lambda p: media.save_media(_image(), p),
        lambda p: media_probe.probe(p),
    ],
    ids=["save_image", "save_video", "save_audio", "save_media", "probe"],
)
def test_unknown_extension(tmp_path, call):
    path = tmp_path / "a.gif"
    with pytest.raises(ValueError, match=r"supported.*png.*mp4.*wav"):
        call(path)
    assert not path.exists()


# ----------------------------------------------------------------------------- save_media


def _check_thumb(folder, name):
    thumb = folder / ".thumbs" / f"{name}.jpg"
    with Image.open(thumb) as img:
        assert img.format == "JPEG" and img.size == (300, 300)
        return np.asarray(img.convert("RGB"))


@pytest.mark.parametrize(
    "name,make,kw,kind",
    [
        ("s.png", lambda: _image(120, 60), {}, "image"),
        ("s.jpg", lambda: Image.fromarray(_image(40, 90)), {}, "image"),
        ("v.mp4", lambda: _frames(9, 65, 33), {"fps": 24}, "video"),
        ("v.webp", lambda: list(_frames(4)), {"fps": 8}, "video"),
        ("a.wav", lambda: _tone(0.3, 16000), {"sample_rate": 16000}, "audio"),
        ("a.flac", lambda: _tone(0.3, 16000, 0), {"sample_rate": 16000}, "audio"),
        ("a.mp3", lambda: _tone(0.3, 22050), {"sample_rate": 22050}, "audio"),
    ],
)
def test_save_media_atomic(tmp_path, name, make, kw, kind):
    folder = tmp_path / "out" / "nested"  # created on demand
    meta = media.save_media(make(), folder / name, **kw)
    assert meta["kind"] == kind and meta["path"] == str(folder / name)
    assert meta["thumbnail"] == str(folder / ".thumbs" / f"{name}.jpg")
    assert (folder / name).is_file() and meta["bytes"] == os.path.getsize(folder / name)
    assert _listdir(folder / ".tmp") == []
    thumb = _check_thumb(folder, name)
    assert thumb.std() > 5  # not a blank tile
    assert media_probe.probe(folder / name)["kind"] == kind


def test_save_media_mp4_with_audio(tmp_path):
    meta = media.save_media(_frames(9), tmp_path / "av.mp4", fps=24, audio=_tone(9 / 24, 48000), sample_rate=48000)
    assert meta["has_audio"] and media_probe.probe(tmp_path / "av.mp4")["sample_rate"] == 48000
    _check_thumb(tmp_path, "av.mp4")


def test_save_media_thumbnail_is_centre_crop(tmp_path):
    arr = np.zeros((100, 300, 3), np.uint8)
    arr[:, 100:200] = 255  # white centre third, black sides
    media.save_media(arr, tmp_path / "c.png")
    thumb = _check_thumb(tmp_path, "c.png")
    assert thumb.mean() > 240  # only the white centre square survives the crop


def test_save_media_failure_mid_write_leaves_nothing(tmp_path):
    """The 5th frame has another size: the encoder has already written to .tmp by then."""
    frames = list(_frames(4)) + [_image(32, 32)]
    with pytest.raises(ValueError, match="frame"):
        media.save_media(frames, tmp_path / "v.mp4", fps=24)
    assert not (tmp_path / "v.mp4").exists()
    assert not (tmp_path / ".thumbs" / "v.mp4.jpg").exists()
    assert _listdir(tmp_path / ".tmp") == []


def test_save_media_failure_keeps_existing_file(tmp_path):
    path = tmp_path / "a.png"
    media.save_media(_image(), path)
    before = path.read_bytes()
    with pytest.raises(ValueError):
        media.save_media(np.zeros((4, 4, 7), np.uint8), path)
    assert path.read_bytes() == before
    assert _listdir(tmp_path / ".tmp") == []


def test_save_media_replaces_existing(tmp_path):
    path = tmp_path / "a.png"
    media.save_media(_image(64, 48), path)
    meta = media.save_media(_image(32, 16), path)
    assert (meta["width"], meta["height"]) == (32, 16)
    assert Image.open(path).size == (32, 16)
    assert _listdir(tmp_path) == [".thumbs", ".tmp", "a.png"]
    assert _listdir(tmp_path / ".thumbs") == ["a.png.jpg"]


def test_save_media_kind_mismatch(tmp_path):
    with pytest.raises(ValueError):
        media.save_media(_image(), tmp_path / "a.mp4")  # a still is not a video
    with pytest.raises(ValueError):
        media.save_media(_frames(3), tmp_path / "a.png", fps=8)
    with pytest.raises(ValueError):
        media.save_media(_tone(0.1, 8000), tmp_path / "a.jpg", sample_rate=8000)
    assert [p for p in _listdir(tmp_path) if not p.startswith(".")] == []
    assert _listdir(tmp_path / ".tmp") == []


def test_results_are_saved_by_the_kind_the_family_made_never_guessed(tmp_path, monkeypatch):
    from toolkit.config_modules import GenerateImageConfig
    from toolkit.media import GeneratedMedia, save_generated

    def no_guessing(_):
        raise AssertionError("the media kind was guessed")

    monkeypatch.setattr(media, "_media_kind", no_guessing)
    made = {
        "png": GeneratedMedia("image", image=_image()),
        "mp4": GeneratedMedia("video", frames=_frames(5), fps=8),
        "wav": GeneratedMedia("audio", audio=_tone(0.25, 16000), sample_rate=16000),
    }
    for ext, result in made.items():
        gen = GenerateImageConfig(prompt="p", output_folder=str(tmp_path), output_ext=ext, seed=1)
        meta = save_generated(result, gen)
        assert media_probe.probe(meta["path"])["kind"] == result.kind
    with pytest.raises(ValueError, match="not image, video or audio"):
        media.save_media(_image(), tmp_path / "x.png", kind="picture")
