"""Hub ids as users name models: only the files a loader reads are fetched (one weight format, the chosen
variant), the download is announced with its size, identity follows what was read, and a cached model loads
with ``HF_HUB_OFFLINE`` set. The hub is ``testing/hub_server.py``: a local repository served over HTTP the way
huggingface.co serves one, so ``huggingface_hub`` runs its real code."""

import shutil

import numpy as np
import pytest

from testing.hub_server import FakeHub
from testing.stream_contract import body_for
from testing.test_options import start_engine_job, stop, wait_for_file
from toolkit.models.components.hub import component_files, variant_of

REPO = "org/tiny-sd1"
SD1_READS = [
    "scheduler/scheduler_config.json",
    "text_encoder/config.json",
    "text_encoder/model.safetensors",
    "tokenizer/tokenizer.json",
    "tokenizer/tokenizer_config.json",
    "unet/config.json",
    "unet/diffusion_pytorch_model.safetensors",
    "vae/config.json",
    "vae/diffusion_pytorch_model.safetensors",
]


@pytest.mark.parametrize(
    "name,variant",
    [
        ("diffusion_pytorch_model.safetensors", None),
        ("diffusion_pytorch_model.fp16.safetensors", "fp16"),
        ("model.safetensors.index.json", None),
        ("model.safetensors.index.fp16.json", "fp16"),
        ("model-00001-of-00002.safetensors", None),
        ("model.fp16-00001-of-00002.safetensors", "fp16"),
        ("diffusion_pytorch_model-00001-of-00003.fp16.safetensors", "fp16"),
        ("pytorch_model.bin", None),
    ],
)
def test_variant_of_reads_diffusers_and_transformers_names(name, variant):
    assert variant_of(name) == variant


CLASSIC = [
    "config.json",
    "diffusion_pytorch_model.bin",
    "diffusion_pytorch_model.safetensors",
    "diffusion_pytorch_model.fp16.bin",
    "diffusion_pytorch_model.fp16.safetensors",
    "diffusion_flax_model.msgpack",
    "model.onnx",
    "openvino_model.xml",
    "README.md",
    "sample.png",
]
SHARDED = [
    "config.json",
    "model.safetensors.index.json",
    "model-00001-of-00002.safetensors",
    "model-00002-of-00002.safetensors",
    "model.safetensors.index.fp16.json",
    "model.fp16-00001-of-00002.safetensors",
    "model.fp16-00002-of-00002.safetensors",
    "pytorch_model.bin.index.json",
    "pytorch_model-00001-of-00002.bin",
    "pytorch_model-00002-of-00002.bin",
    "tokenizer.json",
    "spiece.model",
    "chat_template.jinja",
]


@pytest.mark.parametrize(
    "names,variant,reads",
    [
        (CLASSIC, None, ["config.json", "diffusion_pytorch_model.safetensors"]),
        (CLASSIC, "fp16", ["config.json", "diffusion_pytorch_model.fp16.safetensors"]),
        (CLASSIC, "bf16", ["config.json", "diffusion_pytorch_model.safetensors"]),  # absent variant: plain weights
        (["config.json", "pytorch_model.bin", "flax_model.msgpack"], None, ["config.json", "pytorch_model.bin"]),
        (
            SHARDED,
            None,
            [
                "chat_template.jinja",
                "config.json",
                "model-00001-of-00002.safetensors",
                "model-00002-of-00002.safetensors",
                "model.safetensors.index.json",
                "spiece.model",
                "tokenizer.json",
            ],
        ),
        (
            SHARDED,
            "fp16",
            [
                "chat_template.jinja",
                "config.json",
                "model.fp16-00001-of-00002.safetensors",
                "model.fp16-00002-of-00002.safetensors",
                "model.safetensors.index.fp16.json",
                "spiece.model",
                "tokenizer.json",
            ],
        ),
    ],
)
def test_component_files_are_one_format_and_one_variant(names, variant, reads):
    assert component_files(names, variant) == reads


@pytest.fixture()
def classic_repo(tmp_path):
    """The tiny SD 1.5 checkpoint laid out like a classic hub repo: .bin, fp16 and Flax copies beside the
    safetensors. Copies that must never be read hold bytes no loader accepts."""
    import torch
    from diffusers import UNet2DConditionModel

    from toolkit.models.tiny import tiny_checkpoint

    repo = tmp_path / "repo"
    shutil.copytree(tiny_checkpoint("sd1"), repo)
    UNet2DConditionModel.from_pretrained(repo, subfolder="unet", torch_dtype=torch.float16).save_pretrained(
        repo / "unet", variant="fp16"
    )
    for unread in (
        "unet/diffusion_pytorch_model.bin",
        "unet/diffusion_flax_model.msgpack",
        "text_encoder/pytorch_model.bin",
        "text_encoder/flax_model.msgpack",
        "vae/diffusion_pytorch_model.bin",
    ):
        (repo / unread).write_bytes(b"never read " * 200)
    (repo / "README.md").write_text("a model card")
    return repo


def hub_body(**model) -> dict:
    body = body_for("sd1", steps=2)
    body["model"] |= {"name_or_path": REPO} | model
    return body


def run_engine(tmp_path, name: str, env: dict, requests: list) -> list:
    """Start an engine job with ``env``, send ``requests`` (bodies), return each one's frames; stop it."""
    from extensions_built_in.inference_engine.client import EngineClient

    (tmp_path / name).mkdir()
    job_folder = tmp_path / name / "job"
    proc, _ = start_engine_job(
        tmp_path / name,
        {"warm_up": False, "output_folder": str(tmp_path / "out"), "job_folder": str(job_folder)},
        env=env,
    )
    try:
        wait_for_file(job_folder / "engine.json", proc)
        with EngineClient.from_engine_json(str(job_folder / "engine.json"), generation_timeout_s=180) as client:
            return [list(client.generate(body)) for body in requests]
    finally:
        stop(proc)


def result(frames) -> dict:
    assert frames[-2].type == "result", [f.header.get("message") for f in frames if f.type == "error"]
    return frames[-2].header


def test_a_hub_id_fetches_only_what_is_read_says_so_and_then_loads_offline(tmp_path, classic_repo):
    from PIL import Image

    cache = tmp_path / "hf_cache"
    with FakeHub({REPO: str(classic_repo)}) as hub:
        online = run_engine(
            tmp_path,
            "online",
            {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": str(cache), "HF_HUB_OFFLINE": "0"},
            [hub_body(), hub_body(variant="fp16")],
        )
        plain, fp16 = online
        result(plain), result(fp16)
        assert hub.fetched(REPO) == sorted(SD1_READS + ["unet/diffusion_pytorch_model.fp16.safetensors"])
    downloads = [f.header["message"] for f in plain if f.type == "status" and "Downloading" in f.header["message"]]
    # (heartbeats repeat the current status while a stage lasts)
    assert sorted({m.split(":")[0] for m in downloads}) == [
        f"Downloading {REPO}/{c}" for c in ("scheduler", "text_encoder", "tokenizer", "unet", "vae")
    ]
    assert f"Downloading {REPO}/unet: 2 file(s), 0.00 GiB" in downloads
    fp16_downloads = [f.header["message"] for f in fp16 if f.type == "status" and "Downloading" in f.header["message"]]
    assert set(fp16_downloads) == {f"Downloading {REPO}/unet: 1 file(s), 0.00 GiB"}  # the rest was cached
    # The fp16 weights are another UNet (rounded to half precision), not the cached plain one under a new name.
    first, second = (np.asarray(Image.open(result(f)["path"])) for f in online)
    assert not np.array_equal(first, second)

    offline_env = {"HF_HUB_OFFLINE": "1", "HF_HUB_CACHE": str(cache), "HF_ENDPOINT": "http://127.0.0.1:9"}
    again, missing = run_engine(
        tmp_path, "offline", offline_env, [hub_body(), hub_body(name_or_path="org/never-fetched")]
    )
    assert np.array_equal(np.asarray(Image.open(result(again)["path"])), first)  # same files, same seed, same image
    error = next(f.header for f in missing if f.type == "error")
    assert "org/never-fetched" in error["message"] and "HF_HUB_OFFLINE" in error["message"], error
