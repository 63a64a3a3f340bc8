"""The prompt cache (toolkit/models/prompt_cache.py): a repeated prompt skips encoding and samples exactly what
encoding it again would have, in every family; what decides the encoders' output is part of the key."""

import numpy as np
import pytest
import torch

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for, upload_test_image
from toolkit.models import prompt_cache as prompts
from toolkit.models.registry import ARCHS, get_model_class


def last_latent(client, body) -> np.ndarray:
    frames = list(client.generate(body))
    assert frames[-1].header["ok"] is True, [f.header for f in frames if f.type == "error"]
    return [f for f in frames if f.type == "latent"][-1].array().astype(np.float32)


# Families whose pipeline has no ``encode_prompt`` for the cache to wrap: diffusers' modular pipelines encode inside
# a block of their graph. Written out, so a family that loses its cache (or one that gains it) fails here.
NO_ENCODE_PROMPT = {"anima", "minimax_h3"}
CACHED = [a for a in ARCHS if a not in NO_ENCODE_PROMPT]


def test_exactly_the_modular_families_have_no_encode_prompt_to_cache():
    classic = {a for a in ARCHS if not get_model_class(a).pipeline_class.endswith("ModularPipeline")}
    assert set(ARCHS) - classic == NO_ENCODE_PROMPT


@pytest.mark.parametrize("arch", CACHED)
def test_a_repeated_prompt_is_not_encoded_again_and_samples_the_same(arch, tmp_path, tiny_cache):
    """Prompt A, prompt B, then A again with a new seed: the third request is answered from the cache, and its
    latents equal those of the same request encoded afresh (the cache switched off), control images included."""
    h = EngineHarness(tmp_path)
    try:
        images = {}
        for i in range(get_model_class(arch).control_images):
            images["ctrl_img" if i == 0 else f"ctrl_img_{i + 1}"] = upload_test_image(h.client, seed=i)["id"]

        def body(prompt, seed):
            b = body_for(arch, steps=2, seed=seed, **images)
            b["sample"]["prompt"] = prompt
            return b

        last_latent(h.client, body("a red circle on a blue background", 1))
        first = dict(h.client.health()["prompt_cache"])
        last_latent(h.client, body("a green square", 2))
        before = dict(h.client.health()["prompt_cache"])
        assert before["misses"] > first["misses"], (first, before)  # B is new (its negative prompt may hit)
        cached = last_latent(h.client, body("a red circle on a blue background", 3))
        after = h.client.health()["prompt_cache"]
        prompts.configure(0)
        fresh = last_latent(h.client, body("a red circle on a blue background", 3))
    finally:
        prompts.configure(16)
        h.close()
    assert after["hits"] > before["hits"] and after["misses"] == before["misses"], (before, after)
    assert np.array_equal(cached, fresh)


class FakePipeline:
    """What the cache sees of a diffusers pipeline: ``components`` and ``encode_prompt``."""

    def __init__(self):
        self.text_encoder = torch.nn.Linear(2, 2)
        self.calls = 0
        self._guidance_scale = 5.0

    @property
    def components(self):
        return {"text_encoder": self.text_encoder, "tokenizer": object()}

    def encode_prompt(self, prompt, image=None, generator=None):
        self.calls += 1
        return torch.full((2,), float(len(prompt))), [torch.ones(1)], None


def encode(pipe, *args, context=(), **kwargs):
    with prompts.prompt_cache(pipe, context):
        return pipe.encode_prompt(*args, **kwargs)


def test_what_decides_the_encoding_is_part_of_the_key():
    pipe = FakePipeline()
    encode(pipe, "a cat")
    encode(pipe, "a cat")
    assert pipe.calls == 1
    encode(pipe, "a dog")  # another prompt
    encode(pipe, "a cat", context=(("style.safetensors", 1.0),))  # LoRAs
    encode(pipe, "a cat", image=torch.zeros(3))
    encode(pipe, "a cat", image=torch.tensor([0.0, 0.0, 1.0]))  # one value differs
    pipe._guidance_scale = 1.0  # what __call__ set before encoding
    encode(pipe, "a cat")
    assert pipe.calls == 6
    pipe.text_encoder = torch.nn.Linear(2, 2)  # a re-plan loaded another encoder: nothing from before counts
    pipe._guidance_scale = 5.0
    encode(pipe, "a cat")
    assert pipe.calls == 7
    encode(pipe, "a cat", generator=torch.Generator())  # a generator cannot be keyed: never cached
    encode(pipe, "a cat", generator=torch.Generator())
    assert pipe.calls == 9
    assert "encode_prompt" not in vars(pipe)  # the wrapper is gone after the generation


def test_a_hit_hands_back_copies_the_caller_may_change():
    pipe = FakePipeline()
    first, extra, none = encode(pipe, "a cat")
    first.mul_(0)
    extra[0].add_(1)
    again, extra_again, none_again = encode(pipe, "a cat")
    assert pipe.calls == 1 and none is none_again is None
    assert torch.equal(again, torch.full((2,), 5.0)) and torch.equal(extra_again[0], torch.ones(1))


def test_it_keeps_the_most_recent_prompts_up_to_its_size_and_zero_turns_it_off(monkeypatch):
    pipe = FakePipeline()
    try:
        prompts.configure(2)
        for prompt in ("a", "b", "c", "a"):  # "a" was pushed out by "c"
            encode(pipe, prompt)
        assert pipe.calls == 4
        prompts.configure(0)
        encode(pipe, "a")
        assert pipe.calls == 5
        with pytest.raises(ValueError, match="engine.prompt_cache"):
            prompts.configure(-1)
        prompts.configure(16)
        monkeypatch.setattr(prompts, "MAX_BYTES", 20)  # each entry holds 12 bytes: two do not fit
        for prompt in ("x", "y", "x"):
            encode(pipe, prompt)
        assert pipe.calls == 8
    finally:
        prompts.configure(16)
