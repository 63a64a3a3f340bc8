"""Upscaler models (toolkit/models/upscalers.py): files in the two published RRDBNet layouts load unchanged, at
scale 4 and 2; tiles give the untiled image; the engine runs the upscaler before the refine, as a pool
component, and refuses files outside its model folders, files of another kind, and pickles that want more than
tensors. The files are written here from the layouts' key lists and shapes, random weights."""

import os
import pickle

import numpy as np
import pytest
import torch
from PIL import Image
from safetensors.torch import save_file

from testing.stream_contract import body_for
from toolkit.models import upscalers

FEAT, GROW, BLOCKS = 8, 4, 2


def basicsr_layout(in_ch: int = 3) -> dict:
    """BasicSR's RRDBNet keys and shapes (Real-ESRGAN's released files), written out, not taken from the code."""
    shapes = {"conv_first": (FEAT, in_ch)}
    for b in range(BLOCKS):
        for r in (1, 2, 3):
            for c in range(1, 6):
                shapes[f"body.{b}.rdb{r}.conv{c}"] = (FEAT if c == 5 else GROW, FEAT + (c - 1) * GROW)
    for name in ("conv_body", "conv_up1", "conv_up2", "conv_hr"):
        shapes[name] = (FEAT, FEAT)
    shapes["conv_last"] = (3, FEAT)
    g = torch.Generator().manual_seed(0)
    state = {}
    for name, (out_ch, in_ch_) in shapes.items():
        state[f"{name}.weight"] = torch.randn(out_ch, in_ch_, 3, 3, generator=g) * 0.05
        state[f"{name}.bias"] = torch.randn(out_ch, generator=g) * 0.01
    return state


def original_layout(state: dict) -> dict:
    """The same weights under the original ESRGAN repository's names."""
    top = {"conv_first": "model.0", "conv_up1": "model.3", "conv_up2": "model.6", "conv_hr": "model.8"}
    top |= {"conv_last": "model.10", "conv_body": f"model.1.sub.{BLOCKS}"}
    out = {}
    for key, value in state.items():
        name, _, kind = key.rpartition(".")
        if name in top:
            out[f"{top[name]}.{kind}"] = value
        else:
            _, b, rdb, conv = name.split(".")
            out[f"model.1.sub.{b}.RDB{rdb[-1]}.{conv}.0.{kind}"] = value
    return out


@pytest.fixture(scope="module")
def files(suite_model_root):

    folder = os.path.join(suite_model_root, "upscalers")
    os.makedirs(folder, exist_ok=True)
    state = basicsr_layout()
    paths = {
        "x4": os.path.join(folder, "tiny_x4.safetensors"),
        "x4_pth": os.path.join(folder, "tiny_x4.pth"),
        "x4_original": os.path.join(folder, "tiny_x4_esrgan.pth"),
        "x2": os.path.join(folder, "tiny_x2.safetensors"),
    }
    save_file(state, paths["x4"])
    torch.save({"params_ema": state}, paths["x4_pth"])
    torch.save(original_layout(state), paths["x4_original"])
    save_file(basicsr_layout(in_ch=12), paths["x2"])
    return paths


def image(size=(24, 20), seed=1) -> Image.Image:
    return Image.fromarray(np.random.default_rng(seed).integers(0, 256, (size[1], size[0], 3), dtype=np.uint8))


def test_both_layouts_and_both_containers_load_the_same_network(files):
    nets = [upscalers.build(upscalers.read_state_dict(files[k])) for k in ("x4", "x4_pth", "x4_original")]
    outs = [np.asarray(upscalers.upscaled(n, image(), (96, 80), tile=0)) for n in nets]
    assert nets[0].scale == 4 and outs[0].shape == (80, 96, 3)
    assert np.array_equal(outs[0], outs[1]) and np.array_equal(outs[0], outs[2])
    x2 = upscalers.build(upscalers.read_state_dict(files["x2"]))
    assert x2.scale == 2 and upscalers.upscaled(x2, image(), (48, 40), tile=0).size == (48, 40)


def test_a_network_of_another_scale_is_resized_to_the_asked_size(files):
    net = upscalers.build(upscalers.read_state_dict(files["x4"]))
    assert upscalers.upscaled(net, image(), (48, 40), tile=0).size == (48, 40)  # x4 network, x2 upscale


def test_tiles_give_the_untiled_image_when_the_overlap_covers_what_a_pixel_sees(files, monkeypatch):
    net = upscalers.build(upscalers.read_state_dict(files["x4"]))
    whole = np.asarray(upscalers.upscaled(net, image((40, 36)), (160, 144), tile=0)).astype(int)
    monkeypatch.setattr(upscalers, "OVERLAP", 40)  # more than the network's receptive field
    tiled = np.asarray(upscalers.upscaled(net, image((40, 36)), (160, 144), tile=16)).astype(int)
    assert np.abs(whole - tiled).max() <= 1  # float sums in another order, rounded to 8 bits


def test_files_that_are_not_an_rrdbnet_or_run_code_are_refused(files, tmp_path):
    lora = tmp_path / "lora.safetensors"
    save_file({"lora_unet_down.lora_up.weight": torch.zeros(4, 4)}, str(lora))
    with pytest.raises(upscalers.UpscalerMismatch, match="not an RRDBNet"):
        upscalers.build(upscalers.read_state_dict(str(lora)))

    class Runs:
        def __reduce__(self):
            return (print, ("a pickle ran code",))

    evil = tmp_path / "evil.pth"
    evil.write_bytes(pickle.dumps(Runs()))
    with pytest.raises(upscalers.UpscalerMismatch, match="not a weights file"):
        upscalers.read_state_dict(str(evil))


def test_the_engine_upscales_with_the_model_then_refines_and_names_it_in_the_file(engine_server, files, tmp_path):
    from toolkit.media_info import read_info

    client = engine_server.client
    image((32, 32)).save(tmp_path / "start.png")
    start = client.upload_asset(str(tmp_path / "start.png"))
    upscale = {"factor": 2, "model": files["x4_original"], "tile": 16}
    answer = client.generate_wait(body_for("sd1", steps=3, init_image=start["id"], upscale=upscale))
    assert answer["http_status"] == 200, answer
    with Image.open(answer["result"]["path"]) as result:
        assert result.size == (64, 64)
    text = read_info(answer["result"]["path"])["parameters"]
    assert "Hires upscale: 2" in text and "Hires upscaler: tiny_x4_esrgan.pth" in text
    assert any(e["key"].startswith("upscaler.RRDBNet") for e in client.health()["pool"]), client.health()["pool"]
    again = client.generate_wait(body_for("sd1", steps=3, init_image=start["id"], upscale=upscale))
    assert np.array_equal(
        np.asarray(Image.open(again["result"]["path"])), np.asarray(Image.open(answer["result"]["path"]))
    )


def test_the_upscalers_under_the_model_folders_are_listed_and_nothing_else(engine_server, files, tmp_path):
    import shutil

    root = os.path.dirname(os.path.dirname(files["x4"]))
    for folder, name in (("ESRGAN", "in_its_place.pth"), ("elsewhere", "out_of_place.pth")):
        os.makedirs(os.path.join(root, folder), exist_ok=True)
        shutil.copy(files["x4_pth"], os.path.join(root, folder, name))
    listed = {e["name"] for e in engine_server.client.http.get("/upscalers").json()["upscalers"]}
    assert {"tiny_x4.safetensors", "tiny_x2.safetensors", "tiny_x4.pth", "in_its_place.pth"} <= listed
    assert "out_of_place.pth" not in listed, "a .pth outside an upscaler folder is not opened to list it"
    assert not any(name.endswith(".safetensors") and "lora" in name for name in listed)


@pytest.mark.parametrize(
    "model, status, says",
    [
        ("/etc/hostname", 422, "outside the engine's model folders"),
        ("upscalers/missing.safetensors", 422, None),
    ],
)
def test_upscaler_paths_outside_the_model_folders_or_missing_are_422s(
    engine_server, files, tmp_path, model, status, says
):
    client = engine_server.client
    image((32, 32)).save(tmp_path / "start.png")
    start = client.upload_asset(str(tmp_path / "start.png"))
    answer = client.generate_wait(body_for("sd1", steps=2, init_image=start["id"], upscale={"model": model}))
    assert answer["http_status"] == status, answer
    detail = answer["detail"][0]
    assert detail["loc"] == ["body", "sample", "upscale", "model"]
    assert says is None or says in detail["msg"]


def test_a_file_of_another_kind_ends_the_request_with_bad_request(engine_server, files, suite_model_root, tmp_path):

    lora = os.path.join(suite_model_root, "upscalers", "not_an_upscaler.safetensors")
    save_file({"lora_unet_down.lora_up.weight": torch.zeros(4, 4)}, lora)
    client = engine_server.client
    image((32, 32)).save(tmp_path / "start.png")
    start = client.upload_asset(str(tmp_path / "start.png"))
    answer = client.generate_wait(body_for("sd1", steps=2, init_image=start["id"], upscale={"model": lora}))
    assert answer["http_status"] == 422 and answer["error"]["code"] == "bad_request", answer
    assert "not an RRDBNet" in answer["error"]["message"]
