"""Where a request's checkpoint may come from (extensions_built_in/inference_engine/model_sources.py): a local path
only from under the engine's model roots, with one answer whether it exists or not; a hub id never as a folder of
that name; the job config's own models anywhere; and the download rules (``engine.allow_downloads``,
``engine.max_download_gb``) against testing/hub_server.py's hub."""

import json
import os
import shutil

import httpx
import pytest

from testing.engine_harness import EngineHarness
from testing.hub_server import FakeHub
from testing.stream_contract import body_for
from testing.test_engine_http import png_bytes
from testing.test_hub import REPO, SD1_READS, classic_repo, hub_body, result  # noqa: F401 (a fixture)
from testing.test_options import start_engine_job, stop, wait_for_file
from toolkit.models.components.hub import size_text
from toolkit.models.components.sources import source_kind

SIZE = {"width": 64, "height": 64, "num_inference_steps": 2}


def sd1(name_or_path, **model) -> dict:
    body = body_for("sd1", steps=2)
    body["model"] |= {"name_or_path": name_or_path} | model
    return body


def refusal(out: dict, field: str = "name_or_path") -> str:
    """The 422's message for ``model.<field>``, with the path it names left out."""
    assert out["http_status"] == 422, out
    [detail] = out["detail"]
    assert detail["loc"] == ["body", "model", field], detail
    return detail["msg"]


@pytest.fixture()
def folders(tmp_path, tiny_cache):
    """``models`` (the engine's one model root) and ``elsewhere``, each with a copy of the tiny SD 1.5 checkpoint."""
    from toolkit.models.tiny import tiny_checkpoint

    for name in ("models", "elsewhere"):
        shutil.copytree(tiny_checkpoint("sd1"), tmp_path / name / "sd1")
    return tmp_path / "models", tmp_path / "elsewhere"


@pytest.fixture()
def confined(tmp_path, folders):
    h = EngineHarness(tmp_path / "engine", model_roots=[str(folders[0])])
    yield h
    h.close()


def test_a_path_outside_the_model_roots_is_one_refusal_whether_it_exists_or_not(confined, folders, tmp_path):
    """The review's probe: ``/root`` answered "no file named config.json", ``/root/x`` "does not exist"."""
    models, elsewhere = folders
    os.symlink(elsewhere / "sd1", models / "link")  # inside by name, outside once resolved
    existing, missing = str(elsewhere / "sd1"), str(elsewhere / "no_such_model")
    messages = {}
    ups = (f"{models}/../elsewhere/sd1", f"{elsewhere}/../models/sd1")  # the second resolves inside: ".." never
    for path in (existing, missing, "/root", "/root/x", str(models / "link"), *ups):
        messages[path] = refusal(confined.client.generate_wait(sd1(path))).replace(repr(path), "<path>")
    assert len(set(messages.values())) == 1 and "model folders" in messages[existing], messages
    for path in ("~", "./sd1", "sd1", "a/b/c", str(elsewhere / "sd1.safetensors")):
        assert "model folders" in refusal(confined.client.generate_wait(sd1(path))), path
    extras = confined.client.generate_wait(sd1("tiny:sd1", extras_name_or_path=existing))
    extras = refusal(extras, "extras_name_or_path")
    assert extras.replace(repr(existing), "<path>") == messages[existing]
    inside = confined.client.generate_wait(sd1(str(models / "sd1")))
    assert inside["http_status"] == 200, inside
    assert confined.engine.counters["requests"] == 1  # the refusals never reached the queue


def test_a_hub_id_is_never_a_same_named_folder_in_the_working_directory(confined, folders, monkeypatch):
    """``org/name`` next to the engine's working directory: loading it would tell the client that it is there."""
    models, elsewhere = folders
    monkeypatch.chdir(elsewhere.parent)
    os.makedirs("org", exist_ok=True)
    shutil.copytree(elsewhere / "sd1", "org/tiny-sd1")
    assert source_kind("org/tiny-sd1") == "hub" and source_kind("./org/tiny-sd1") == "local"
    out = confined.client.generate_wait(sd1("org/tiny-sd1"))
    assert out["http_status"] == 424 and "Hugging Face cache" in out["error"]["message"], out  # the hub's (offline)
    assert "model folders" in refusal(confined.client.generate_wait(sd1("./org/tiny-sd1")))


def test_the_job_configs_own_models_may_point_anywhere(tmp_path, folders):
    """``engine.default_model`` and ``engine.models`` are the operator's: their paths load from outside the roots,
    by alias and by their own path, and nothing else there does."""
    models, elsewhere = folders
    own = str(elsewhere / "sd1")
    aliases = {"theirs": {"arch": "sd1", "name_or_path": own, "dtype": "float32", "sample": SIZE}}
    default = {"arch": "sd1", "name_or_path": str(elsewhere)}
    h = EngineHarness(tmp_path / "engine", model_roots=[str(models)], models=aliases, default_model=default)
    try:
        assert h.client.generate_wait(sd1(own))["http_status"] == 200
        not_a_checkpoint = h.client.generate_wait(sd1(str(elsewhere), extras_name_or_path="tiny:sd1"))
        assert not_a_checkpoint["error"]["code"] == "load_failed", not_a_checkpoint  # allowed: it fails as it loads
        assert "model folders" in refusal(h.client.generate_wait(sd1(str(elsewhere / "sd1" / "unet"))))
        with httpx.Client(base_url=f"{h.url}/v1", headers={"Authorization": f"Bearer {h.TOKEN}"}, timeout=120) as api:
            assert api.post("/images/generations", json={"model": "theirs", "prompt": "x"}).status_code == 200
    finally:
        h.close()


def test_openai_arch_path_models_pass_the_same_check_as_a_400_naming_model(confined, folders):
    models, elsewhere = folders
    with httpx.Client(
        base_url=f"{confined.url}/v1", headers={"Authorization": f"Bearer {confined.TOKEN}"}, timeout=120
    ) as api:
        for path in (str(elsewhere / "sd1"), str(elsewhere / "no_such_model")):
            r = api.post("/images/generations", json={"model": f"sd1:{path}", "prompt": "x"})
            error = r.json()["error"]
            assert r.status_code == 400 and error["param"] == "model" and "model folders" in error["message"], r.text
            assert error["type"] == "invalid_request_error"
        files = {"image": ("in.png", png_bytes((64, 64)), "image/png")}
        form = {"model": f"flux_kontext:{elsewhere / 'sd1'}", "prompt": "x"}
        r = api.post("/images/edits", data=form, files=files)
        assert r.status_code == 400 and r.json()["error"]["param"] == "model", r.text
        assert confined.engine.assets.usage()["files"] == 0  # refused before the image was stored
        r = api.post("/images/generations", json={"model": f"sd1:{models / 'sd1'}", "prompt": "x", "size": "64x64"})
        assert r.status_code == 200, r.text
    assert confined.engine.counters["requests"] == 1


# ---------------------------------------------------------------------------------------------- downloads
def test_a_component_is_in_the_cache_only_with_every_shard_its_index_names(tmp_path, monkeypatch):
    """A download cut short leaves the index and some shards: with downloads off that repo is refused up front."""
    from huggingface_hub import constants

    from toolkit.models.components.hub import missing_from_cache

    monkeypatch.setattr(constants, "HF_HUB_CACHE", str(tmp_path))
    storage = tmp_path / "models--org--sharded"
    snapshot = storage / "snapshots" / "abc"
    (storage / "refs").mkdir(parents=True)
    (storage / "refs" / "main").write_text("abc")
    for folder in ("unet", "vae"):
        (snapshot / folder).mkdir(parents=True)
        (snapshot / folder / "config.json").write_text("{}")
    shards = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors"}}
    (snapshot / "unet" / "model.safetensors.index.json").write_text(json.dumps(shards))
    (snapshot / "unet" / "model-00001-of-00002.safetensors").write_bytes(b"x")
    (snapshot / "vae" / "model.safetensors").write_bytes(b"x")
    assert missing_from_cache("org/sharded", ["unet", "vae", "text_encoder"], None) == ["unet", "text_encoder"]
    (snapshot / "unet" / "model-00002-of-00002.safetensors").write_bytes(b"x")
    assert missing_from_cache("org/sharded", ["unet", "vae"], None) == []
    assert missing_from_cache("org/absent", ["unet"], None) == ["unet"]


@pytest.fixture()
def two_repos(tmp_path, request):
    """``org/tiny-sd1`` and ``org/padded-sd1``: the same model with 8 MiB more that a loader reads (a tokenizer
    text file), so a cap can fall between them."""
    classic, padded = request.getfixturevalue("classic_repo"), tmp_path / "padded"
    shutil.copytree(classic, padded)
    (padded / "tokenizer" / "extra.txt").write_bytes(b"padding\n" * (1024**2))
    return {REPO: str(classic), "org/padded-sd1": str(padded)}


def engine_frames(tmp_path, name: str, engine: dict, env: dict, bodies: list) -> list:
    """An engine job (``python run.py``) with these settings; each body's frames, or its HTTP refusal."""
    from extensions_built_in.inference_engine.client import EngineClient, EngineError

    (tmp_path / name).mkdir()
    job_folder = tmp_path / name / "job"
    proc, _ = start_engine_job(tmp_path / name, {"warm_up": False, "job_folder": str(job_folder), **engine}, env=env)
    answers = []
    try:
        wait_for_file(job_folder / "engine.json", proc)
        with EngineClient.from_engine_json(str(job_folder / "engine.json"), generation_timeout_s=180) as client:
            for body in bodies:
                try:
                    answers.append(list(client.generate(body)))
                except EngineError as e:
                    answers.append(e)
    finally:
        stop(proc)
    return answers


def test_a_download_over_the_cap_is_refused_before_it_starts_and_downloads_off_serve_the_cache(tmp_path, two_repos):
    cache = tmp_path / "hf_cache"
    env = {"HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"}
    tiny_bytes = sum(os.path.getsize(os.path.join(two_repos[REPO], p)) for p in SD1_READS)
    cap_gb = (tiny_bytes + 4 * 1024**2) / 1024**3
    with FakeHub(two_repos) as hub:
        padded, tiny = engine_frames(
            tmp_path,
            "capped",
            {"max_download_gb": cap_gb},
            env | {"HF_ENDPOINT": hub.url},
            [hub_body(name_or_path="org/padded-sd1"), hub_body()],
        )
        assert hub.fetched("org/padded-sd1") == []  # sized from the hub's list, nothing downloaded
        assert hub.fetched(REPO) == sorted(SD1_READS)  # under the cap: fetched as always
    [error] = [f.header for f in padded if f.type == "error"]
    assert error["code"] == "bad_request", error
    message = error["message"]
    assert "model.name_or_path 'org/padded-sd1'" in message and "engine.max_download_gb" in message, message
    assert size_text(tiny_bytes + 8 * 1024**2) in message and size_text(int(cap_gb * 1024**3)) in message, message
    result(tiny)

    files = tmp_path / "files"  # a UNet as one file: its config comes from the cached repo, not the hub
    files.mkdir()
    unet = os.path.join(two_repos[REPO], "unet", "diffusion_pytorch_model.safetensors")
    shutil.copy(unet, files / "unet.safetensors")
    single = hub_body(name_or_path=str(files / "unet.safetensors"), extras_name_or_path=REPO)
    with FakeHub(two_repos) as hub:
        cached, uncached, single_file = engine_frames(
            tmp_path,
            "no_downloads",
            {"allow_downloads": False, "model_roots": [str(files)]},
            env | {"HF_ENDPOINT": hub.url},
            [hub_body(), hub_body(name_or_path="org/padded-sd1"), single],
        )
        assert [m for m, _ in hub.requests] == []  # the cache served, the hub was never asked
    result(cached), result(single_file)
    assert uncached.status == 422 and uncached.detail[0]["loc"] == ["body", "model", "name_or_path"], uncached.detail
    assert "allow_downloads" in uncached.detail[0]["msg"]
