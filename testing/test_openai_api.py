"""OpenAI's Images API on the real engine (tiny checkpoints), driven by the official ``openai`` SDK pointed at it
with ``base_url`` and the engine token as API key. The UI proxy runs the same checks: ui/e2e/openai.spec.ts."""

import base64
import math
import time

import httpx
import openai
import pytest

from extensions_built_in.inference_engine.model_aliases import ModelAliases
from testing import openai_checks as checks
from testing.stream_contract import body_for
from testing.test_engine_http import open_stream, wait_until

ALIAS = "tiny"
MODELS = {
    ALIAS: {
        "arch": "sd1",
        "name_or_path": "tiny:sd1",
        "dtype": "float32",
        "sample": {"width": 64, "height": 64, "num_inference_steps": 4},
    }
}
KONTEXT = "flux_kontext:tiny:flux_kontext"


@pytest.fixture(scope="module")
def engine(tmp_path_factory, tiny_cache):
    from testing.engine_harness import EngineHarness

    harness = EngineHarness(tmp_path_factory.mktemp("openai"), models=MODELS)
    yield harness
    harness.close()


@pytest.fixture(scope="module")
def client(engine):
    return checks.sdk_client(f"{engine.url}/v1", engine.TOKEN)


def fetch_with(token):
    def fetch(url):
        r = httpx.get(url, headers={"Authorization": f"Bearer {token}"}, timeout=60)
        assert r.status_code == 200, r.text
        return r.content

    return fetch


def sidecar(engine, url_or_path):
    """The engine's record of a result (its sidecar), by the result's URL or path."""
    name = url_or_path.split("?")[0].rsplit("/", 1)[-1]
    [entry] = [e for e in engine.engine.list_outputs(10000) if e["name"] == name]
    return entry["meta"]


# ---------------------------------------------------------------------------------------------- generations
def test_models_lists_aliases_then_image_families(client):
    rows = {m.id: m for m in client.models.list()}
    assert list(rows)[0] == ALIAS and rows[ALIAS].owned_by == "engine.models"
    assert {"sd1", "flux", "flux_kontext"} <= set(rows)
    assert not {"wan21", "ace_step_15"} & set(rows)
    assert client.models.retrieve(ALIAS).model_extra["name_or_path"] == "tiny:sd1"


def test_n2_b64_json_reports_seeds_that_replay(client):
    data = checks.check_generate_n2(client, ALIAS, seed=11)
    again = client.images.generate(model=ALIAS, prompt="a red circle", size="64x64", extra_body={"seed": 12})
    assert again.data[0].b64_json == data[1].b64_json


def test_url_is_served_with_the_token(engine, client):
    url = checks.check_url(client, ALIAS, fetch_with(engine.TOKEN))
    assert url.startswith(f"{engine.url}/outputs/")
    assert httpx.get(url).status_code == 401


@pytest.mark.parametrize("fmt", ["png", "jpeg", "webp"])
def test_each_output_format(client, fmt):
    checks.check_output_format(client, ALIAS, fmt)


@pytest.mark.parametrize("fmt", ["jpeg", "webp"])
def test_output_compression_is_the_encoder_quality(client, fmt):
    small = checks.check_output_format(client, ALIAS, fmt, compression=5)
    large = checks.check_output_format(client, ALIAS, fmt, compression=100)
    assert small < large


@pytest.mark.parametrize("quality,steps", [("low", 1), ("medium", 2), ("high", 4), ("auto", 4)])
def test_quality_is_a_share_of_the_alias_steps(engine, client, quality, steps):
    r = client.images.generate(model=ALIAS, prompt="x", quality=quality, response_format="url")
    assert r.quality == quality and r.size == "64x64"  # size auto: the alias's
    assert sidecar(engine, r.data[0].url)["config"]["sample"]["num_inference_steps"] == steps


def test_quality_table_per_family():
    """The documented mapping: a share of each family's default step count, rounded up."""
    from extensions_built_in.inference_engine.model_aliases import ModelChoice
    from extensions_built_in.inference_engine.openai_params import QUALITY_STEPS, steps_for
    from toolkit.models.registry import get_model_class

    turbo = ModelChoice("z-image-turbo", {"arch": "zimage:turbo"}, get_model_class("zimage"))  # the tag's 9 steps
    assert [steps_for(q, turbo) for q in ("low", "medium", "high", "xhigh")] == [3, 5, 9, 14]
    flux = ModelChoice("flux:x", {}, get_model_class("flux"))
    assert steps_for("low", flux) == math.ceil(28 * QUALITY_STEPS["low"]) == 7


def test_size_auto_is_the_family_native_size_snapped(engine):
    """Without an alias, auto is the family's default size; explicit sizes are floored to its divisibility."""
    from extensions_built_in.inference_engine.openai_params import ImageGenerationBody, plan_images

    choice = engine.engine.model_aliases.resolve("sd3:tiny:sd3")
    plan = plan_images(ImageGenerationBody(prompt="x", size="auto"), choice)
    assert (plan.samples[0]["width"], plan.samples[0]["height"]) == (1024, 1024)
    client = checks.sdk_client(f"{engine.url}/v1", engine.TOKEN)
    r = client.images.generate(model=ALIAS, prompt="x", size="70x77")
    assert r.size == "64x72" and checks.decode(r.data[0].b64_json).size == (64, 72)


# ---------------------------------------------------------------------------------------------- streaming
def test_stream_partial_images_2_through_the_sdk_iterator(client):
    events = checks.check_stream(client, ALIAS, partial_images=2)
    assert events[-1].model_extra["seed"] == events[0].model_extra["seed"]


def test_stream_without_partials_sends_only_the_completed_image(client):
    events = checks.check_stream(client, ALIAS, partial_images=0)
    assert len(events) == 1


def test_partial_images_preview_the_result(client):
    """x0 estimates painted with the checkpoint's factors: on builtin:shapes each partial already shows the red
    circle on blue (in the projection's approximate colours; raw latents this early would still be noise)."""
    import numpy as np

    events = list(
        client.images.generate(
            model="sd1:builtin:shapes",
            prompt="a red circle on a blue background",
            size="64x64",
            stream=True,
            partial_images=2,
            extra_body={"num_inference_steps": 20, "guidance_scale": 5, "seed": 1},
        )
    )

    def red_minus_blue(picture, box):
        rgb = np.asarray(picture.convert("RGB"), dtype=float)[box]
        return (rgb[..., 0] - rgb[..., 2]).mean()

    centre, corners = np.s_[24:40, 24:40], np.s_[::56, ::56]
    for event in events:
        picture = checks.decode(event.b64_json)
        assert red_minus_blue(picture, centre) - red_minus_blue(picture, corners) > 100, event.type


def test_a_failure_after_queueing_is_an_error_event_or_status(client, tmp_path):
    """A model that fails to load: JSON callers get the engine's status (424), streams an ``error`` event, which
    the SDK's iterator raises."""
    model = f"sd1:{tmp_path / 'nonexistent_checkpoint'}"  # inside the engine's model roots, never written
    with pytest.raises(openai.APIStatusError) as e:
        client.images.generate(model=model, prompt="x")
    assert e.value.status_code == 424 and e.value.body["code"] == "load_failed"
    with pytest.raises(openai.APIError) as e:
        list(client.images.generate(model=model, prompt="x", stream=True))
    assert e.value.body["code"] == "load_failed"


def test_edits_stream_as_image_edit_events(client):
    checks.check_edit(client, KONTEXT, stream=True)


def test_a_client_that_leaves_a_stream_cancels_its_generation(engine):
    body = {"model": ALIAS, "prompt": "x", "stream": True, "partial_images": 3, "num_inference_steps": 500}
    headers = {"Authorization": f"Bearer {engine.TOKEN}"}
    with httpx.Client(base_url=engine.url, timeout=60) as http:
        with http.stream("POST", "/v1/images/generations", json=body, headers=headers) as response:
            assert response.headers["content-type"].startswith("text/event-stream")
            lines = response.iter_lines()
            assert next(line for line in lines if line.startswith("event:")) == "event: image_generation.partial_image"
            running = engine.client.queue()["running"]
            assert running is not None
    assert wait_until(lambda: engine.client.queue()["running"] is None, timeout=30)
    assert engine.engine.cancel(running["request_id"]) == "finished"
    assert not [e for e in engine.engine.list_outputs(10000) if e["name"].startswith(running["request_id"])]


def test_a_client_that_leaves_a_json_request_cancels_its_generations(engine):
    """No stream: the client gives up (its read timeout) while n=2 generations run; both are cancelled. At 256x256
    each takes well over the 3 s the client waits (64x64's 500 steps once finished in 2.7 s, and its file stayed)."""
    body = {"model": ALIAS, "prompt": "x", "n": 2, "num_inference_steps": 500, "size": "256x256"}
    headers = {"Authorization": f"Bearer {engine.TOKEN}"}
    before = {e["name"] for e in engine.engine.list_outputs(10000)}
    with pytest.raises(httpx.ReadTimeout):
        httpx.post(f"{engine.url}/v1/images/generations", json=body, headers=headers, timeout=3)
    assert wait_until(lambda: engine.client.queue()["running"] is None and not engine.client.queue()["pending"], 30)
    assert {e["name"] for e in engine.engine.list_outputs(10000)} == before  # neither result was written


def test_a_queued_stream_gets_keep_alives_and_then_its_events(engine):
    c0, r0, f0 = open_stream(engine, body_for("sd1", steps=500))
    blocker = next(f for f in f0 if f.type == "progress").request_id
    body = {"model": ALIAS, "prompt": "x", "stream": True}
    headers = {"Authorization": f"Bearer {engine.TOKEN}"}
    try:
        with httpx.stream("POST", f"{engine.url}/v1/images/generations", json=body, headers=headers, timeout=60) as r:
            lines = r.iter_lines()
            assert next(lines) == ": keep-alive"  # nothing else while it waits in line
            engine.client.cancel(blocker)
            events = [line for line in lines if line.startswith("event:")]
        assert events == ["event: image_generation.completed"]
    finally:
        r0.close()
        c0.close()


# ---------------------------------------------------------------------------------------------- edits
def test_edit_with_an_image(engine, client):
    r = checks.check_edit(client, KONTEXT)
    assert r.usage.input_tokens_details.image_tokens > 0


def test_edit_with_several_images(engine, client):
    r = client.images.edit(
        model="qwen_image_edit_plus:tiny:qwen_image_edit_plus",
        image=[("a.png", checks.png_bytes(), "image/png"), ("b.png", checks.png_bytes(color=(9, 9, 9)), "image/png")],
        prompt="put them side by side",
        size="64x64",
        response_format="url",
        extra_body={"num_inference_steps": 2},
    )
    sample = sidecar(engine, r.data[0].url)["config"]["sample"]
    assert sample["ctrl_img_1"] and sample["ctrl_img_2"] and sample["ctrl_img_1"] != sample["ctrl_img_2"]


def test_edit_refusals_name_the_parameter(client):
    one = ("a.png", checks.png_bytes(), "image/png")
    mask = ("m.png", checks.png_bytes(), "image/png")
    checks.expect_400(lambda: client.images.edit(model=KONTEXT, image=one, mask=mask, prompt="x"), "mask")
    # every image family now starts from an image or edits one (and each that starts from one inpaints): a start
    # from two is what is refused
    checks.expect_400(
        lambda: client.images.edit(model="ernie_image:tiny:ernie_image", image=[one, one], prompt="x"), "image"
    )
    checks.expect_400(lambda: client.images.edit(model=KONTEXT, image=[one, one], prompt="x"), "image")
    not_an_image = ("a.png", b"GIF89a" + b"\0" * 64, "image/png")
    body = checks.expect_400(lambda: client.images.edit(model=KONTEXT, image=not_an_image, prompt="x"), "image")
    assert body["code"] == "invalid_image"


def alpha_mask(size=(48, 40), hole=(8, 8, 32, 24)) -> bytes:
    """OpenAI's kind of mask: opaque everywhere but a transparent rectangle, the part to repaint."""
    import io

    from PIL import Image

    img = Image.new("RGBA", size, (0, 0, 0, 255))
    img.paste((0, 0, 0, 0), hole)
    out = io.BytesIO()
    img.save(out, format="PNG")
    return out.getvalue()


@pytest.mark.parametrize("model", [ALIAS, "sd1:builtin:shapes"])
def test_an_edit_with_a_mask_inpaints_the_transparent_part_and_without_one_starts_from_the_image(engine, client, model):
    import io

    import numpy as np
    from PIL import Image

    image = ("a.png", checks.png_bytes(), "image/png")  # 48x40
    extra = {"num_inference_steps": 4}
    r = client.images.edit(
        model=model,
        image=image,
        mask=("m.png", alpha_mask(), "image/png"),
        prompt="a green square",
        response_format="url",
        extra_body=extra,
    )
    sample = sidecar(engine, r.data[0].url)["config"]["sample"]
    assert sample["init_image"] and sample["mask"] and sample["strength"] == 1.0
    out = np.asarray(Image.open(io.BytesIO(fetch_with(engine.TOKEN)(r.data[0].url))).convert("RGB"))
    original = np.asarray(Image.open(io.BytesIO(checks.png_bytes())).convert("RGB"))
    assert out.shape == original.shape  # the image's size: size was left to auto
    assert np.array_equal(out[36:, :], original[36:, :])  # opaque in the mask, and past its blur: kept
    assert np.abs(out[12:20, 12:28].astype(int) - original[12:20, 12:28]).mean() > 3  # transparent: repainted
    varied = client.images.edit(
        model=model, image=image, prompt="a green square", response_format="url", extra_body=extra
    )
    sample = sidecar(engine, varied.data[0].url)["config"]["sample"]
    assert sample["init_image"] and not sample.get("mask") and sample["strength"] == 0.75


def test_an_edit_from_a_one_pixel_image_starts_at_the_familys_size(engine, client):
    """Found by the schema fuzz: a 1 px input at its own size reached the VAE encoder as 8x8, whose GroupNorm
    cannot normalise the 1x1 map it makes (a 500). Inputs under 16 px take the family's size instead."""
    tiny_png = ("a.png", checks.png_bytes(size=(1, 1)), "image/png")
    r = client.images.edit(
        model=ALIAS, image=tiny_png, prompt="x", response_format="url", extra_body={"num_inference_steps": 2}
    )
    assert r.size == "64x64" and sidecar(engine, r.data[0].url)["config"]["sample"]["init_image"]


def test_a_mask_without_transparency_or_of_another_size_is_refused_by_name(client):
    one = ("a.png", checks.png_bytes(), "image/png")
    opaque = ("m.png", checks.png_bytes(), "image/png")  # RGB: no alpha to say what to repaint
    body = checks.expect_400(lambda: client.images.edit(model=ALIAS, image=one, mask=opaque, prompt="x"), "mask")
    assert body["code"] == "invalid_mask" and "alpha" in body["message"]
    small = ("m.png", alpha_mask(size=(16, 16), hole=(0, 0, 8, 8)), "image/png")
    body = checks.expect_400(lambda: client.images.edit(model=ALIAS, image=one, mask=small, prompt="x"), "mask")
    assert "16x16" in body["message"]


def test_edit_form_without_an_image_or_with_an_unknown_field(engine):
    headers = {"Authorization": f"Bearer {engine.TOKEN}"}
    with httpx.Client(base_url=engine.url, timeout=60, headers=headers) as http:
        r = http.post("/v1/images/edits", data={"prompt": "x", "model": KONTEXT}, files={"other": ("f", b"x")})
        assert r.status_code == 400 and r.json()["error"]["message"] == "Unrecognized request argument supplied: other"
        r = http.post("/v1/images/edits", data={"prompt": "x", "model": KONTEXT})
        assert r.status_code == 400 and r.json()["error"]["param"] in ("image", None)
        r = http.post("/v1/images/edits", json={"prompt": "x"})
        assert r.status_code == 400 and "multipart/form-data" in r.json()["error"]["message"]


# ---------------------------------------------------------------------------------------------- refusals
def test_unknown_model_is_an_openai_404(client):
    checks.check_unknown_model(client)


@pytest.mark.parametrize("size", ["64 by 64", "8x8", "5000x64", "64x", "auto64"])
def test_bad_size_is_a_400_naming_size(client, size):
    checks.expect_400(lambda: client.images.generate(model=ALIAS, prompt="x", size=size), "size")


@pytest.mark.parametrize("model", ["wan21:tiny:wan21", "ace_step_15:tiny:ace_step_15"])
def test_video_and_audio_archs_are_refused(client, model):
    checks.check_refused_video(client, model)


@pytest.mark.parametrize(
    "extra,param,code",
    [
        ({"n": 11}, "n", "integer_above_max_value"),
        ({"response_format": "jpeg"}, "response_format", "invalid_value"),
        ({"output_format": "gif"}, "output_format", "invalid_value"),
        ({"background": "transparent"}, "background", None),
        ({"partial_images": 4}, "partial_images", "integer_above_max_value"),
        ({"frame_count": 8}, "frame_count", None),
    ],
)
def test_bad_values_are_400s_in_openai_shape(engine, extra, param, code):
    r = httpx.post(
        f"{engine.url}/v1/images/generations",
        json={"model": ALIAS, "prompt": "x", **extra},
        headers={"Authorization": f"Bearer {engine.TOKEN}"},
    )
    assert r.status_code == 400, r.text
    error = r.json()["error"]
    assert (error["param"], error["code"], error["type"]) == (param, code, "invalid_request_error")


def test_unknown_fields_and_missing_prompt_are_refused_as_openai_does(engine, client):
    with pytest.raises(openai.BadRequestError) as e:
        client.images.generate(model=ALIAS, prompt="x", extra_body={"colour": "red"})
    assert e.value.body == {
        "message": "Unrecognized request argument supplied: colour",
        "type": "invalid_request_error",
        "param": None,
        "code": None,
    }
    headers = {"Authorization": f"Bearer {engine.TOKEN}"}
    r = httpx.post(f"{engine.url}/v1/images/generations", json={"model": ALIAS}, headers=headers)
    assert r.status_code == 400 and r.json()["error"]["message"] == "Missing required parameter: 'prompt'."
    r = httpx.post(f"{engine.url}/v1/images/generations", content=b"{nope", headers=headers)
    assert r.status_code == 400 and "could not parse the JSON body" in r.json()["error"]["message"]


def test_an_edit_family_on_the_generations_route_is_refused(client):
    checks.expect_400(lambda: client.images.generate(model=KONTEXT, prompt="x"), "model")


def test_wrong_token_is_an_openai_401_and_unknown_routes_404(engine):
    bad = checks.sdk_client(f"{engine.url}/v1", "wrong")
    with pytest.raises(openai.AuthenticationError) as e:
        bad.images.generate(model=ALIAS, prompt="x")
    assert e.value.body["code"] == "invalid_api_key"
    r = httpx.get(f"{engine.url}/v1/nothing", headers={"Authorization": f"Bearer {engine.TOKEN}"})
    assert r.status_code == 404 and r.json()["error"]["message"] == "Invalid URL (GET /v1/nothing)"
    r = httpx.get(f"{engine.url}/nothing", headers={"Authorization": f"Bearer {engine.TOKEN}"})
    assert r.json() == {"detail": "Not Found"}  # the engine's own routes keep FastAPI's shape


def test_a_body_over_the_json_cap_is_an_openai_413(engine):
    r = httpx.post(
        f"{engine.url}/v1/images/generations",
        content=b'{"prompt": "' + b"x" * (1 << 20) + b'"}',
        headers={"Authorization": f"Bearer {engine.TOKEN}", "content-type": "application/json"},
    )
    assert r.status_code == 413 and "error" in r.json()


def test_a_full_queue_is_an_openai_429_and_nothing_of_the_request_stays_queued(tmp_path, tiny_cache):
    from testing.engine_harness import EngineHarness

    h = EngineHarness(tmp_path, max_queue=1, models=MODELS)
    try:
        c0, r0, f0 = open_stream(h, body_for("sd1", steps=500))
        blocker = next(f for f in f0 if f.type == "progress").request_id
        client = checks.sdk_client(f"{h.url}/v1", h.TOKEN)
        with pytest.raises(openai.RateLimitError) as e:
            client.images.generate(model=ALIAS, prompt="x", n=2)  # the first fits in line, the second does not
        assert e.value.body["code"] == "rate_limit_exceeded" and int(e.value.response.headers["retry-after"]) >= 1
        assert h.client.queue()["pending"] == []
        h.client.cancel(blocker)
        r0.close()
        c0.close()
        assert len(client.images.generate(model=ALIAS, prompt="x").data) == 1  # the engine serves on
    finally:
        h.close()


# ---------------------------------------------------------------------------------------------- schema
def test_openapi_schema_shows_the_routes(engine):
    schema = httpx.get(f"{engine.url}/openapi.json", headers={"Authorization": f"Bearer {engine.TOKEN}"}).json()
    assert {"/v1/images/generations", "/v1/images/edits", "/v1/models"} <= set(schema["paths"])
    form = schema["paths"]["/v1/images/edits"]["post"]["requestBody"]["content"]["multipart/form-data"]["schema"]
    assert {"image", "mask", "prompt", "n", "size"} <= set(form["properties"])


def test_schema_fuzz_of_the_openai_routes_finds_no_server_errors(engine):
    """As testing/test_engine_http.py fuzzes every route, here with an alias configured, so bodies the fuzzer
    gets right really generate."""
    import schemathesis
    from hypothesis import HealthCheck, given, settings

    auth = {"Authorization": f"Bearer {engine.TOKEN}"}
    schema = schemathesis.openapi.from_url(f"{engine.url}/openapi.json", headers=auth)
    failures = []
    for result in schema.include(path_regex="^/v1/").get_all_operations():
        operation = result.ok()

        @settings(max_examples=20, deadline=None, suppress_health_check=list(HealthCheck), database=None)
        @given(case=operation.as_strategy())
        def run(case):
            response = case.call(headers=auth, timeout=120)
            if response.status_code >= 500:
                failures.append((case.method, case.path, response.status_code, response.text[:300]))

        run()
    assert not failures, failures[:5]
    assert wait_until(lambda: engine.client.queue()["running"] is None, timeout=120)


# ---------------------------------------------------------------------------------------------- engine.models
@pytest.mark.parametrize(
    "config,names",
    [
        ({"a": {"name_or_path": "x"}}, "engine.models.a needs at least arch"),
        ({"a": {"arch": "sd9", "name_or_path": "x"}}, "engine.models.a.arch"),
        ({"a": {"arch": "sd1", "name_or_path": "x", "sample": {"width": "wide"}}}, "engine.models.a"),
        ({"a": {"arch": "sd1", "name_or_path": "x", "sample": {"prompt": "p"}}}, "engine.models.a.sample"),
        ({"a b": {"arch": "sd1", "name_or_path": "x"}}, "engine.models.a b"),
        (["sd1"], "engine.models must map"),
    ],
)
def test_a_bad_engine_models_entry_stops_the_engine_naming_it(config, names):
    with pytest.raises(ValueError, match=names.replace(".", r"\.")):
        ModelAliases(config)


def test_model_names_resolve_to_aliases_or_arch_and_path():
    aliases = ModelAliases(MODELS)
    assert aliases.resolve(None).id == ALIAS  # no model: the first alias
    direct = aliases.resolve("flux:org/name")
    assert (direct.model["arch"], direct.model["name_or_path"], direct.sample) == ("flux", "org/name", {})
    for name in ("sd1", "nope:x", "sd1:"):
        with pytest.raises(LookupError):
            aliases.resolve(name)


def test_created_and_seed_fields(client):
    before = int(time.time())
    r = client.images.generate(model=ALIAS, prompt="x", size="64x64")
    assert before <= r.created <= time.time() + 1
    assert isinstance(r.data[0].model_extra["seed"], int)
    assert len(base64.b64decode(r.data[0].b64_json)) > 100
