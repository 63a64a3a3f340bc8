"""The LoRA library and A1111's ``<lora:name:0.8>``: names from the metadata, the job or the folder; trigger words
from the job's config and ``ss_tag_frequency``; the run's sample image as preview; the tag found by name,
applied exactly as ``model.loras`` applies the same file, refused by name when unknown or unreadable; every LoRA
named with A1111's hash in the result's ``parameters`` text, its sidecar and the log; the hash computed once per
file version."""

import hashlib
import json
import os

import numpy as np
import pytest
import yaml
from PIL import Image

from extensions_built_in.inference_engine.catalog import LoraLibrary, UnknownLora
from extensions_built_in.inference_engine.lora_library import BadLoraTag, LoraHashes, addnet_hash, split_lora_tags
from testing.engine_harness import EngineHarness
from testing.test_pool import sd1


def write_sd1_lora(path, metadata=None, seed=1):
    """A kohya-layout SD 1.5 LoRA over the tiny UNet (what testing/write_tiny_lora.py writes), with ``metadata``."""
    from safetensors.torch import save_file

    from testing.test_lora_formats import kohya, peft_lora

    path.parent.mkdir(parents=True, exist_ok=True)
    save_file(kohya(peft_lora(seed)), str(path), metadata=metadata or {})
    return str(path)


def job_config(name, trigger=None):
    process = {"type": "sd_trainer", "model": {"arch": "sd1"}}
    if trigger:
        process["trigger_word"] = trigger
    return yaml.safe_dump({"job": "extension", "config": {"name": name, "process": [process]}})


@pytest.fixture(scope="module")
def training(tmp_path_factory, tiny_cache):
    """What AI Toolkit leaves in a training folder: a job folder with two saves, its config and samples; a
    diffusers-format LoRA in a folder of its own; a kohya LoRA with tag frequencies."""
    root = tmp_path_factory.mktemp("training")
    job = root / "fox_style"
    write_sd1_lora(job / "fox_style_000000250.safetensors", {"ss_output_name": "fox_style"}, seed=1)
    final = write_sd1_lora(
        job / "fox_style.safetensors",
        {"ss_output_name": "fox_style", "training_info": json.dumps({"step": 500, "epoch": 2})},
        seed=2,
    )
    os.utime(final, (2_000_000_000, 2_000_000_000))  # the newest save of the job
    (job / "config.yaml").write_text(job_config("fox_style", trigger="f0x style"))
    samples = job / "samples"
    samples.mkdir()
    for name in ("1700000000__000000250_0.jpg", "1700000000__000000250_1.jpg", "1700000100__000000500_0.jpg"):
        Image.new("RGB", (8, 8), (200, 20, 20)).save(samples / name)
    write_sd1_lora(root / "ink_wash" / "pytorch_lora_weights.safetensors", seed=3)
    tags = {"10_ink": {"sumi-e": 4, "ink": 9}, "5_misc": {"ink": 1, "brush": 2}}
    write_sd1_lora(root / "kohya" / "brushy.safetensors", {"ss_tag_frequency": json.dumps(tags)}, seed=4)
    return root


def test_tags_are_parsed_out_of_the_prompt_with_their_multipliers():
    clean, tags = split_lora_tags("a fox <lora:fox_style:0.8>, in snow <lora:ink_wash> <lora:x:-1.5:0.2>")
    assert clean == "a fox, in snow"
    assert [(t.name, t.multiplier) for t in tags] == [("fox_style", 0.8), ("ink_wash", 1.0), ("x", -1.5)]
    assert split_lora_tags("no tags here") == ("no tags here", [])
    for bad in ("<lora::0.5>", "<lora:fox:strong>", "<lora:fox:11>"):
        with pytest.raises(BadLoraTag):
            split_lora_tags(f"a fox {bad}")


def test_the_library_names_each_lora_as_a_person_knows_it(training):
    entries = {e["tag"]: e for e in LoraLibrary([str(training)]).entries()}
    assert set(entries) == {"fox_style", "fox_style_000000250", "ink_wash", "brushy"}
    step250, final = entries["fox_style_000000250"], entries["fox_style"]
    assert (step250["title"], step250["step"], final["step"]) == ("fox_style", 250, 500)
    assert step250["trigger_words"] == ["f0x style"]  # the job's trigger_word
    assert os.path.basename(step250["preview"]) == "1700000000__000000250_0.jpg"  # its own step, first prompt
    assert os.path.basename(final["preview"]) == "1700000100__000000500_0.jpg"
    assert step250["preview_url"] == "/api/files/" + step250["preview"].replace("/", "%2F")
    ink = entries["ink_wash"]
    assert (ink["title"], ink["name"], ink["preview"]) == ("ink_wash", "pytorch_lora_weights.safetensors", None)
    assert entries["brushy"]["trigger_words"] == ["ink", "sumi-e", "brush"]  # summed over datasets, most first


def test_a_tag_finds_a_file_by_stem_or_the_newest_save_of_its_job(training):
    library = LoraLibrary([str(training)])
    assert library.resolve("fox_style_000000250")["step"] == 250
    assert library.resolve("fox_style")["step"] == 500  # stem of the final save, also the job's newest
    assert library.resolve("INK_WASH")["tag"] == "ink_wash"  # no exact match: case folded
    with pytest.raises(UnknownLora) as e:
        library.resolve("no_such_lora")
    assert "no_such_lora" in str(e.value) and "fox_style" in str(e.value)


def test_a_lora_saved_after_the_listing_is_found_on_first_use(tmp_path, tiny_cache):
    library = LoraLibrary([str(tmp_path)])
    assert library.entries() == []
    write_sd1_lora(tmp_path / "late" / "late_000000100.safetensors", {"ss_output_name": "late"})
    assert library.resolve("late")["tag"] == "late_000000100"


def test_the_hash_is_a1111s_and_computed_once_per_file_version(tmp_path, tiny_cache):
    path = write_sd1_lora(tmp_path / "a.safetensors", {"ss_output_name": "a"})
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        f.seek(8 + length)
        expected = hashlib.sha256(f.read()).hexdigest()
    assert addnet_hash(path) == expected
    hashes = LoraHashes()
    assert hashes.known(path) is None
    hashes.prefetch(path)
    assert hashes.short(path) == expected[:12] and hashes.hash(path) == expected
    assert hashes.computed == 1  # the prefetch's result, not a second read
    hashes.short(path)
    assert hashes.computed == 1
    # new metadata: a new file version (hashed again) with the same tensors, so the same hash
    write_sd1_lora(tmp_path / "a.safetensors", {"ss_output_name": "renamed"})
    assert hashes.known(path) is None and hashes.short(path) == expected[:12] and hashes.computed == 2


@pytest.fixture(scope="module")
def engine(training, tmp_path_factory):
    h = EngineHarness(tmp_path_factory.mktemp("lora_library_engine"), lora_roots=[str(training)])
    yield h
    h.close()


def run(h, prompt, **model):
    body = sd1(seed=11)
    body["sample"]["prompt"] = prompt
    body["model"].update(model)
    return h.client.generate_wait(body)


def pixels(out):
    assert out["http_status"] == 200 and "result" in out, out
    return np.asarray(Image.open(out["result"]["path"]), dtype=np.int16)


def sidecar(out):
    with open(os.path.splitext(out["result"]["path"])[0] + ".json") as f:
        return json.load(f)


def test_a_prompt_tag_applies_the_lora_as_model_loras_does_and_the_result_names_it(engine, training, capfd):
    from toolkit.media_info import read_info

    path = str(training / "fox_style" / "fox_style_000000250.safetensors")
    base = pixels(run(engine, "a red fox"))
    picked = pixels(run(engine, "a red fox", loras=[{"path": path, "multiplier": 0.8}]))
    tagged_out = run(engine, "a red fox <lora:fox_style_000000250:0.8>")
    assert np.abs(picked - base).max() > 10  # the LoRA does something
    assert np.array_equal(pixels(tagged_out), picked)  # the tag is out of the encoded prompt, the LoRA applied

    short = addnet_hash(path)[:12]
    config = sidecar(tagged_out)["config"]
    assert config["sample"]["prompt"] == "a red fox"
    assert config["model"]["loras"] == [{"path": path, "multiplier": 0.8}]
    assert config["loras"] == [{"name": "fox_style_000000250", "path": path, "multiplier": 0.8, "hash": short}]
    text = read_info(tagged_out["result"]["path"])["parameters"]
    assert text.splitlines()[0] == "a red fox <lora:fox_style_000000250:0.8>"
    assert f'Lora hashes: "fox_style_000000250: {short}"' in text
    assert f"LoRA fox_style_000000250:0.8 ({short})" in capfd.readouterr().out  # the job log's line

    # the text's prompt line, pasted back, makes the same image
    assert np.array_equal(pixels(run(engine, text.splitlines()[0])), picked)


def test_a_tag_and_a_picked_lora_combine_and_the_job_name_finds_its_newest_save(engine, training):
    final = str(training / "fox_style" / "fox_style.safetensors")
    ink = str(training / "ink_wash" / "pytorch_lora_weights.safetensors")
    out = run(engine, "a red fox <lora:fox_style:0.5>", loras=[{"path": ink, "multiplier": 1.0}])
    loras = sidecar(out)["config"]["loras"]
    assert [(e["name"], e["path"], e["multiplier"]) for e in loras] == [
        ("ink_wash", ink, 1.0),
        ("fox_style", final, 0.5),
    ]
    # a tag naming a LoRA already picked sets its multiplier instead of applying it twice
    again = run(engine, "a red fox <lora:ink_wash:0.3>", loras=[{"path": ink, "multiplier": 1.0}])
    assert sidecar(again)["config"]["model"]["loras"] == [{"path": ink, "multiplier": 0.3}]


@pytest.mark.parametrize(
    "prompt,words",
    [
        ("a fox <lora:nobody_trained_this:0.8>", ["nobody_trained_this", "names no LoRA", "fox_style"]),
        ("a fox <lora:fox_style:lots>", ["'lots'", "not a number"]),
        ("a fox <lora:>", ["names no LoRA"]),
    ],
)
def test_a_bad_tag_is_a_422_at_sample_prompt_naming_it(engine, prompt, words):
    import httpx

    body = sd1()
    body["sample"]["prompt"] = prompt
    response = httpx.post(
        f"{engine.url}/generate?wait=1", json=body, headers={"Authorization": f"Bearer {engine.TOKEN}"}, timeout=60
    )
    assert response.status_code == 422, response.text
    detail = response.json()["detail"][0]
    assert detail["loc"] == ["body", "sample", "prompt"] and all(w in detail["msg"] for w in words), detail


def test_get_loras_lists_names_trigger_words_and_previews(engine):
    listing = engine.client._json("GET", "/loras")["loras"]
    fox = next(e for e in listing if e["tag"] == "fox_style_000000250")
    assert fox["title"] == "fox_style" and fox["trigger_words"] == ["f0x style"] and fox["preview_url"]
    assert "fox_style" in fox["aliases"]
