"""The OpenAI Images API as a client sees it, through the official ``openai`` SDK: each check drives one
scenario and asserts on what the SDK hands back.

The same checks run against the engine directly (testing/test_openai_api.py) and through the UI's proxy
(ui/e2e/openai.spec.ts runs this file as a script), so both paths are held to one contract.

    python testing/openai_checks.py --base-url http://127.0.0.1:8675/api/inference/v1 --api-key TOKEN \
        --model tiny --edit-model flux_kontext:tiny:flux_kontext [--job ID]
"""

from __future__ import annotations

import argparse
import base64
import io
import json
import sys
from typing import Callable, Optional

SIZE = "64x64"


def sdk_client(base_url: str, api_key: str, job: Optional[str] = None):
    """No retries: a 429 or a 5xx must show up as the test's failure, not be retried into a pass."""
    import openai

    return openai.OpenAI(
        base_url=base_url, api_key=api_key, max_retries=0, timeout=120, default_query={"job": job} if job else None
    )


def decode(b64: str):
    from PIL import Image

    picture = Image.open(io.BytesIO(base64.b64decode(b64)))
    picture.load()
    return picture


def png_bytes(size=(48, 40), color=(30, 160, 220)) -> bytes:
    from PIL import Image

    out = io.BytesIO()
    Image.new("RGB", size, color).save(out, format="PNG")
    return out.getvalue()


def check_generate_n2(client, model: str, seed: int = 11) -> list:
    """n=2: two images of the requested size, their seeds reported and consecutive."""
    r = client.images.generate(model=model, prompt="a red circle", n=2, size=SIZE, extra_body={"seed": seed})
    assert len(r.data) == 2, r
    assert [d.model_extra["seed"] for d in r.data] == [seed, seed + 1]
    assert r.size == SIZE and r.output_format == "png" and r.usage.total_tokens > 0
    for d in r.data:
        assert decode(d.b64_json).size == (64, 64) and d.url is None
    return r.data


def check_url(client, model: str, fetch: Callable[[str], bytes]) -> str:
    """response_format url: a URL the engine (or the proxy) serves with the same token; it is the image."""
    r = client.images.generate(model=model, prompt="a blue square", size=SIZE, response_format="url")
    [d] = r.data
    assert d.url and d.b64_json is None, d
    picture = decode(base64.b64encode(fetch(d.url)).decode())
    assert picture.size == (64, 64) and picture.format == "PNG"
    return d.url


def check_output_format(client, model: str, fmt: str, compression: Optional[int] = None) -> int:
    """png, jpeg or webp as asked; returns the encoded size (output_compression changes it)."""
    kw = {"output_compression": compression} if compression is not None else {}
    r = client.images.generate(model=model, prompt="a green triangle", size=SIZE, output_format=fmt, **kw)
    picture = decode(r.data[0].b64_json)
    assert picture.format == {"png": "PNG", "jpeg": "JPEG", "webp": "WEBP"}[fmt] and picture.size == (64, 64)
    assert r.output_format == fmt
    return len(base64.b64decode(r.data[0].b64_json))


def check_edit(client, model: str, images: int = 1, stream: bool = False):
    """An edit with ``images`` uploaded images; streamed, its events are image_edit.*."""
    files = [(f"in{i}.png", png_bytes(color=(40 * i, 90, 200)), "image/png") for i in range(images)]
    image = files[0] if images == 1 else files
    if not stream:
        r = client.images.edit(model=model, image=image, prompt="make it red", size=SIZE)
        assert decode(r.data[0].b64_json).size == (64, 64)
        return r
    events = list(client.images.edit(model=model, image=image, prompt="make it red", size=SIZE, stream=True))
    assert [e.type for e in events][-1] == "image_edit.completed", events
    return events


def check_stream(client, model: str, partial_images: int = 2, prefix: str = "image_generation"):
    """stream with partial_images: that many partials (decoding as images of the requested size), in order,
    then the completed image with usage, read through the SDK's own stream iterator."""
    stream = client.images.generate(
        model=model, prompt="a yellow circle", size=SIZE, stream=True, partial_images=partial_images
    )
    events = list(stream)
    types = [e.type for e in events]
    assert types == [f"{prefix}.partial_image"] * partial_images + [f"{prefix}.completed"], types
    assert [e.partial_image_index for e in events[:-1]] == list(range(partial_images))
    for e in events:
        assert decode(e.b64_json).size == (64, 64) and e.size == SIZE and e.output_format == "png"
    assert events[-1].usage.output_tokens > 0
    return events


def check_unknown_model(client):
    import openai

    try:
        client.images.generate(model="no-such-model", prompt="x")
    except openai.NotFoundError as e:
        assert e.body["code"] == "model_not_found" and e.body["param"] == "model", e.body
        return e.body
    raise AssertionError("an unknown model was accepted")


def check_bad_size(client, model: str):
    return expect_400(lambda: client.images.generate(model=model, prompt="x", size="64 by 64"), "size")


def check_refused_video(client, model: str = "wan21:tiny:wan21"):
    body = expect_400(lambda: client.images.generate(model=model, prompt="x"), "model")
    assert "image models only" in body["message"], body
    return body


def expect_400(call, param: str) -> dict:
    import openai

    try:
        call()
    except openai.BadRequestError as e:
        assert e.status_code == 400 and e.body["param"] == param, e.body
        assert set(e.body) == {"message", "type", "param", "code"}, e.body
        return e.body
    raise AssertionError(f"no 400 naming {param}")


def run_all(client, model: str, edit_model: str, fetch: Callable[[str], bytes]) -> dict:
    """Every scenario once, for the proxy run; a failure raises with the scenario's name."""
    done = {}
    scenarios = {
        "generate_n2_b64_json": lambda: check_generate_n2(client, model),
        "url": lambda: check_url(client, model, fetch),
        **{f"output_format_{f}": (lambda f=f: check_output_format(client, model, f)) for f in ("png", "jpeg", "webp")},
        "edit": lambda: check_edit(client, edit_model),
        "stream_partial_images_2": lambda: check_stream(client, model),
        "unknown_model": lambda: check_unknown_model(client),
        "bad_size": lambda: check_bad_size(client, model),
        "refused_video_arch": lambda: check_refused_video(client),
    }
    for name, scenario in scenarios.items():
        try:
            scenario()
        except Exception as e:
            raise AssertionError(f"{name}: {type(e).__name__}: {e}") from e
        done[name] = "ok"
    return done


def main(argv=None) -> int:
    import httpx

    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    for flag in ("--base-url", "--api-key", "--model", "--edit-model"):
        parser.add_argument(flag, required=True)
    parser.add_argument("--job")
    args = parser.parse_args(argv)
    client = sdk_client(args.base_url, args.api_key, args.job)

    def fetch(url: str) -> bytes:
        r = httpx.get(url, headers={"Authorization": f"Bearer {args.api_key}"}, timeout=60)
        r.raise_for_status()
        return r.content

    try:
        print(json.dumps(run_all(client, args.model, args.edit_model, fetch)))
    except AssertionError as e:
        print(json.dumps({"failed": str(e)}))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
