"""Starting from an image through the engine's API: what a request with a start image, mask, upscale or outpaint
writes into its file and sidecar, and the 422s naming the field when any of it is wrong (the model-level
behaviour: testing/test_from_image.py)."""

import json
import pathlib

import httpx
import pytest

from testing.stream_contract import body_for
from testing.test_from_image import write_inputs
from toolkit.media_info import PARAMETERS, read_info


@pytest.fixture(scope="module")
def inputs(tmp_path_factory):
    return write_inputs(tmp_path_factory.mktemp("inputs"))


def post_generate(engine_server, body: dict) -> httpx.Response:
    headers = {"Authorization": f"Bearer {engine_server.TOKEN}"}
    return httpx.post(f"{engine_server.url}/generate", json=body, headers=headers, timeout=60)


def test_the_engine_takes_a_start_image_and_mask_and_writes_them_into_the_file(engine_server, inputs):
    client = engine_server.client
    init, mask = client.upload_asset(str(inputs / "init.png")), client.upload_asset(str(inputs / "mask.png"))
    assert "inpaint" in next(m for m in client.models() if m["arch"] == "sd1")["tasks"]
    answer = client.generate_wait(body_for("sd1", steps=4, seed=3, init_image=init["id"], mask=mask["id"]))
    text = read_info(answer["result"]["path"])[PARAMETERS]
    assert "Denoising strength: 1.0, Mask blur: 4, Init image: " in text and "Mask image: " in text
    sidecar = json.loads(pathlib.Path(answer["result"]["path"]).with_suffix(".json").read_text())
    assert sidecar["config"]["sample"]["strength"] == 1.0  # the default a mask runs with, recorded
    varied = client.generate_wait(body_for("sd1", steps=4, seed=3, init_image=init["id"]))
    assert "Denoising strength: 0.75" in read_info(varied["result"]["path"])[PARAMETERS]


@pytest.mark.parametrize(
    "sample,field,says",
    [
        ({"mask": "x"}, "mask", "needs the image it masks"),
        ({"init_image": "0" * 32}, "init_image", "unknown asset"),
        ({"init_image": "../../etc/passwd"}, "init_image", None),
        ({"strength": 1.5, "init_image": "x"}, "strength", None),
        ({"mask_blur": -1}, "mask_blur", None),
    ],
)
def test_bad_start_images_are_422s_naming_the_field(engine_server, sample, field, says):
    r = post_generate(engine_server, body_for("sd1", **sample))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(d["loc"][-1] == field for d in detail), detail
    assert says is None or says in str(detail)


@pytest.mark.parametrize(
    "arch,field,says",
    [
        ("flux_kontext", "init_image", "flux_kontext cannot start from an image (image-to-image): an edit model"),
        ("hunyuan_video", "init_image", "hunyuan_video cannot start from an image (image-to-image): a video family"),
    ],
)
def test_a_family_that_cannot_start_from_an_image_says_why_by_name(engine_server, inputs, arch, field, says):
    asset = engine_server.client.upload_asset(str(inputs / "init.png"))
    sample = {"init_image": asset["id"]} | ({"mask": asset["id"]} if field == "mask" else {})
    r = post_generate(engine_server, body_for(arch, **sample))
    assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == field and says in r.text, r.text


def test_the_engine_upscales_and_outpaints_from_the_start_images_size(engine_server, inputs):
    client = engine_server.client
    init = client.upload_asset(str(inputs / "init.png"))
    up = client.generate_wait(body_for("sd1", steps=4, init_image=init["id"], upscale={"factor": 2}))
    assert (up["result"]["width"], up["result"]["height"]) == (128, 128)
    assert "Denoising strength: 0.35" in read_info(up["result"]["path"])[PARAMETERS]  # the refine's default
    grown = client.generate_wait(body_for("sd1", steps=4, init_image=init["id"], outpaint={"left": 32, "top": 16}))
    assert (grown["result"]["width"], grown["result"]["height"]) == (96, 80)


@pytest.mark.parametrize(
    "sample,loc,says",
    [
        ({"upscale": {"factor": 2}}, ["sample", "upscale"], "needs the image"),
        ({"outpaint": {"left": 8}}, ["sample", "outpaint"], "needs the image"),
        ({"upscale": {"factor": 9}}, ["sample", "upscale", "factor"], None),
        ({"outpaint": {"left": -1}}, ["sample", "outpaint", "left"], None),
    ],
)
def test_bad_canvases_are_422s_naming_the_field(engine_server, sample, loc, says):
    r = post_generate(engine_server, body_for("sd1", **sample))
    assert r.status_code == 422, r.text
    detail = r.json()["detail"]
    assert any(d["loc"][1 : 1 + len(loc)] == loc for d in detail), detail
    assert says is None or says in str(detail)


def test_an_upscaler_model_outside_the_model_folders_is_refused_by_name_and_a_huge_canvas_too(engine_server, inputs):
    asset = engine_server.client.upload_asset(str(inputs / "init.png"))
    for sample, loc in (
        ({"upscale": {"factor": 2, "model": "/nowhere/4x-UltraSharp.pth"}}, ["sample", "upscale", "model"]),
        ({"outpaint": {"left": 2048, "right": 2048}}, ["sample", "outpaint"]),
    ):
        r = post_generate(engine_server, body_for("sd1", init_image=asset["id"], **sample))
        assert r.status_code == 422 and r.json()["detail"][0]["loc"][1:] == loc, r.text


def test_the_engine_writes_only_masked_into_the_file_and_refuses_it_without_a_mask(engine_server, inputs):
    client = engine_server.client
    init, mask = client.upload_asset(str(inputs / "init.png")), client.upload_asset(str(inputs / "mask.png"))
    body = body_for("sd1", init_image=init["id"], mask=mask["id"], inpaint_area="only_masked", inpaint_padding=16)
    answer = client.generate_wait(body)
    assert (answer["result"]["width"], answer["result"]["height"]) == (64, 64)
    assert "Inpaint area: Only masked, Masked area padding: 16" in read_info(answer["result"]["path"])[PARAMETERS]
    sidecar = json.loads(pathlib.Path(answer["result"]["path"]).with_suffix(".json").read_text())
    assert (sidecar["config"]["sample"]["inpaint_area"], sidecar["config"]["sample"]["inpaint_padding"]) == (
        "only_masked",
        16,
    )
    for sample in (
        {"init_image": init["id"], "inpaint_area": "only_masked"},
        {"init_image": init["id"], "mask": mask["id"], "inpaint_area": "only_masked", "outpaint": {"left": 8}},
        {"init_image": init["id"], "mask": mask["id"], "inpaint_area": "everywhere"},
    ):
        r = post_generate(engine_server, body_for("sd1", **sample))
        assert r.status_code == 422 and r.json()["detail"][0]["loc"][-1] == "inpaint_area", r.text
