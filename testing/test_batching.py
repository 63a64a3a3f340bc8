"""Requests sharing denoiser steps (extensions_built_in/inference_engine/batching.py, toolkit/models/
step_batching.py): each gets the image it gets alone, its own stream and its own cancel; a request arriving
mid-run joins with its own step count; a batch out of memory halves; only the head of the line joins. Real
engine and HTTP server, tiny checkpoints on CPU, images compared with the same requests run one at a time."""

import copy
import threading
import time

import numpy as np
import pytest
import torch
from PIL import Image

from testing.engine_harness import EngineHarness, wait_for
from testing.stream_contract import body_for
from toolkit.config_modules import GenerateImageConfig, ModelConfig
from toolkit.models import step_batching, step_merge, tiny
from toolkit.models.registry import get_model_class

MIN_PSNR_DB = 40.0  # batched against alone: the same math, only the matmuls' blocking may differ


def psnr(a: np.ndarray, b: np.ndarray) -> float:
    mse = float(((a.astype(np.float64) - b.astype(np.float64)) ** 2).mean())
    return float("inf") if mse == 0 else 10 * np.log10(255.0**2 / mse)


def image_of(result: dict) -> np.ndarray:
    with Image.open(result["path"]) as img:
        return np.asarray(img.convert("RGB"))


def bodies(arch: str) -> list[dict]:
    """Four requests that differ in everything a batch lets differ: prompt, seed, guidance, steps."""
    return [
        body_for(arch, steps=150, seed=1, guidance_scale=4.0),
        body_for(arch, steps=5, seed=2, prompt="a green square", guidance_scale=7.0),
        body_for(arch, steps=9, seed=3, prompt="two yellow stars at night", negative_prompt="blurry"),
        body_for(arch, steps=6, seed=4, guidance_scale=1.0),
    ]


def run_alone(harness, body) -> dict:
    return harness.client.generate_wait(copy.deepcopy(body))["result"]


class Streams:
    """Each request streamed from its POST on a thread of its own, every frame kept: the first starts, the
    others arrive while it samples (so they join mid-run)."""

    def __init__(self, harness, bodies_: list[dict]):
        self.frames: list[list] = [[] for _ in bodies_]
        self.threads = []
        self._start(harness, bodies_[0], 0)
        engine = harness.engine
        wait_for(lambda: engine.running is not None and engine.running.stage == "sampling", 60, "sampling")
        for i, body in enumerate(bodies_[1:], 1):
            self._start(harness, body, i)

    def _start(self, harness, body, i):
        def read():
            for frame in harness.client.generate(copy.deepcopy(body), timeout_s=120):
                self.frames[i].append(frame)

        thread = threading.Thread(target=read, daemon=True)
        thread.start()
        self.threads.append(thread)
        wait_for(lambda: self.frames[i], 30, f"request {i}'s start frame")

    def id_of(self, i: int) -> str:
        return self.frames[i][0].header["request_id"]

    def all(self) -> list[list]:
        for thread in self.threads:
            thread.join(120)
        return self.frames


@pytest.fixture(scope="module")
def engines(tmp_path_factory, tiny_cache):
    alone = EngineHarness(tmp_path_factory.mktemp("alone"), max_batch=1)
    batched = EngineHarness(tmp_path_factory.mktemp("batched"), max_batch=4)
    yield alone, batched
    alone.close()
    batched.close()


@pytest.mark.parametrize("arch", ["sd1", "sdxl", "flux", "zimage", "qwen_image", "wan21"])
def test_requests_joining_mid_run_get_their_own_steps_stream_and_image(engines, arch):
    alone, batched = engines
    reference = [image_of(run_alone(alone, b)) for b in bodies(arch)]
    before = batched.client.health()["batching"]["calls_by_size"]
    streams = Streams(batched, bodies(arch)).all()
    for body, frames, expected in zip(bodies(arch), streams, reference):
        types = [f.type for f in frames]
        assert types[-2:] == ["result", "end"] and frames[-1].header["ok"], types
        steps = [f.header["step"] for f in frames if f.type == "progress"]
        total = body["sample"]["num_inference_steps"]
        assert steps == list(range(1, total + 1)), "each request counts its own steps from 1"
        latents = [f for f in frames if f.type == "latent"]
        assert latents and all(f.header["step"] <= total for f in latents)
        result = frames[-2].header
        assert result["seed"] == body["sample"]["seed"]
        assert psnr(image_of(result), expected) >= MIN_PSNR_DB
    after = batched.client.health()["batching"]["calls_by_size"]
    shared = sum(n for size, n in after.items() if int(size) > 1) - sum(
        n for size, n in before.items() if int(size) > 1
    )
    assert shared > 0, "the requests sampled together at least once"
    timing = batched.client.health()["batching"]  # where a round's time goes: the members' own work, the round's
    assert timing["member_own_ms"] > 0 and timing["round_ms"] > 0, timing
    scrape = batched.client.http.get("/metrics").text
    merged = [line for line in scrape.splitlines() if line.startswith("aitk_engine_denoiser_calls_total{requests=")]
    assert any(not line.startswith('aitk_engine_denoiser_calls_total{requests="1"}') for line in merged), merged
    assert batched.engine.pool.counters["misses"] <= alone.engine.pool.counters["misses"], "no extra load"


def test_a_cancel_mid_batch_ends_only_that_request(engines):
    alone, batched = engines
    reqs = bodies("sd1")
    reqs[1]["sample"]["num_inference_steps"] = 20
    reference = {i: image_of(run_alone(alone, reqs[i])) for i in (0, 2)}
    streams = Streams(batched, reqs[:3])
    wait_for(lambda: any(f.type == "progress" for f in streams.frames[1]), 60, "the second request sampling")
    batched.client.cancel(streams.id_of(1))
    frames = streams.all()
    assert frames[1][-1].header["ok"] is False and frames[1][-2].header["code"] == "cancelled"
    for i in (0, 2):
        assert frames[i][-2].type == "result"
        assert psnr(image_of(frames[i][-2].header), reference[i]) >= MIN_PSNR_DB


def test_only_the_head_of_the_line_joins_and_another_model_waits_its_turn(engines):
    _, batched = engines
    first, other, same = body_for("sd1", steps=150, seed=1), body_for("sdxl", steps=2), body_for("sd1", steps=2)
    order = []
    done = threading.Event()

    def watch():
        while not done.is_set():
            for rid in batched.engine.queue.running_items():
                if rid.id not in order:
                    order.append(rid.id)
            time.sleep(0.002)

    watcher = threading.Thread(target=watch, daemon=True)
    watcher.start()
    try:
        streams = Streams(batched, [first, other, same])
        results = [frames[-2].type for frames in streams.all()]
        ids = [streams.id_of(i) for i in range(3)]
    finally:
        done.set()
        watcher.join(5)
    assert results == ["result"] * 3
    assert order.index(ids[2]) > order.index(ids[1]), "the sd1 request behind the sdxl one did not pass it"


def test_a_lone_request_waits_batch_wait_ms_for_company(tmp_path):
    """Four steps take a tiny model milliseconds: a second request sent a moment later would find the first done.
    With engine.batch_wait_ms the first waits for it, and they share steps."""
    harness = EngineHarness(tmp_path, max_batch=4, batch_wait_ms=3000)
    try:
        harness.client.generate_wait(body_for("sd1", steps=2))  # resident
        results = {}

        def run(i):
            results[i] = harness.client.generate_wait(body_for("sd1", steps=4, seed=i))

        first = threading.Thread(target=run, args=(1,))
        first.start()
        time.sleep(0.3)
        run(2)
        first.join(60)
        assert {i: "result" in r for i, r in results.items()} == {1: True, 2: True}
        sizes = harness.client.health()["batching"]["calls_by_size"]
        assert sum(n for size, n in sizes.items() if int(size) > 1) > 0, sizes
    finally:
        harness.close()


def test_an_out_of_memory_batch_halves_and_every_request_still_gets_its_image(tmp_path):
    """The UNet's first layer refuses more than one request's rows (two, with CFG): every merged call runs out
    of memory, is halved to single requests, and each image is still the one it is alone."""
    arch = "sd1"
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    model.load_model()
    gens = [
        GenerateImageConfig(**tiny.sample(arch), prompt=p, seed=s, num_inference_steps=4, guidance_scale=5.0)
        for p, s in (("a red circle", 1), ("a blue square", 2), ("green stripes", 3))
    ]
    alone = [model.generate_media(copy.deepcopy(g)).image for g in gens]

    def refuse_large(module, args):
        if args[0].shape[0] > 2:
            raise torch.OutOfMemoryError("CUDA out of memory (a test's limit of two rows)")

    handle = model.parts["unet"].conv_in.register_forward_pre_hook(refuse_large)
    batcher = step_batching.StepBatcher()
    out: dict = {}
    start = threading.Barrier(len(gens))

    def run(i):
        start.wait()
        out[i] = model.generate_media(copy.deepcopy(gens[i]), batch=batcher.member(str(i))).image

    try:
        with step_batching.gathering(
            step_batching.denoisers(model), step_batching.other_modules(model), batcher.one_at_a_time
        ):
            threads = [threading.Thread(target=run, args=(i,)) for i in range(len(gens))]
            [t.start() for t in threads]
            [t.join(120) for t in threads]
    finally:
        handle.remove()
    assert batcher.halvings > 0 and set(batcher.sizes) == {1}
    assert batcher.max_calls == 1 and batcher.halvings <= 2, "later rounds ran at the size that fit, not halved again"
    assert sorted(out) == [0, 1, 2]
    for i, image in out.items():
        assert psnr(image, alone[i]) >= MIN_PSNR_DB


def run_together(model, gens: list) -> tuple[dict, step_batching.StepBatcher]:
    """``gens`` started at once on threads sharing steps; each one's image."""
    batcher, out, errors = step_batching.StepBatcher(), {}, {}
    start = threading.Barrier(len(gens))

    def run(i):
        start.wait()
        try:
            out[i] = model.generate_media(copy.deepcopy(gens[i]), batch=batcher.member(str(i))).image
        except Exception as e:  # the assertion below names it
            errors[i] = e

    with step_batching.gathering(
        step_batching.denoisers(model), step_batching.other_modules(model), batcher.one_at_a_time
    ):
        threads = [threading.Thread(target=run, args=(i,)) for i in range(len(gens))]
        [t.start() for t in threads]
        [t.join(300) for t in threads]
    assert not errors, errors
    return out, batcher


def test_a_members_tokenizers_run_one_thread_at_a_time_and_the_resident_pipeline_keeps_its_own(tiny_cache):
    """SD 1.5's pipeline tokenizes a prompt with ``padding="max_length"`` and again with ``"longest"``; a fast
    tokenizer keeps that setting on its one shared object, so two requests encoding at once got a 2-token
    negative prompt beside a 77-token prompt (a ``torch.cat`` error with 8 clients on CPU). A member's copy of the
    pipeline calls its tokenizers under the batch's lock; the resident pipeline and its config are untouched."""
    model = get_model_class("sd1")("cpu", ModelConfig(name_or_path="tiny:sd1", arch="sd1"))
    model.load_model()
    resident = model.task_pipeline("txt2img")
    config_before = dict(resident.config)
    batcher = step_batching.StepBatcher()
    own = batcher.member("a").pipeline(resident)
    tokenizer = resident.tokenizer
    assert own.tokenizer is not tokenizer and isinstance(own.tokenizer, type(tokenizer))
    assert resident.tokenizer is tokenizer and dict(resident.config) == config_before
    assert own.tokenizer.model_max_length == tokenizer.model_max_length and len(own.tokenizer) == len(tokenizer)
    assert own.text_encoder is resident.text_encoder  # modules stay shared: gathering locks their calls

    held = threading.Event()

    def hold():
        with batcher.one_at_a_time:
            held.set()
            time.sleep(0.5)

    finished = {}

    def tokenize(name, call):
        held.wait()
        call()
        finished[name] = time.monotonic()

    holder = threading.Thread(target=hold)
    holder.start()
    started = time.monotonic()
    calls = {"call": lambda: own.tokenizer("a red circle"), "method": lambda: own.tokenizer.tokenize("a red circle")}
    threads = [threading.Thread(target=tokenize, args=item) for item in calls.items()]
    [t.start() for t in threads]
    [t.join(10) for t in threads + [holder]]
    assert set(finished) == {"call", "method"}
    assert all(t - started >= 0.45 for t in finished.values()), "a tokenizer call ran while the batch's lock was held"
    ids = own.tokenizer("a red circle", padding="max_length", max_length=77, truncation=True).input_ids
    assert ids == tokenizer("a red circle", padding="max_length", max_length=77, truncation=True).input_ids


@pytest.mark.parametrize("arch", ["sd1", "pixart_sigma"])  # diffusers' task classes; the engine's own start
def test_image_to_image_and_inpainting_share_steps_each_from_its_own_point(arch, tmp_path, tiny_cache):
    """Strengths 0.4 and 0.8 start at different steps of one schedule; an inpaint blends its kept region back
    every step; a text-to-image runs beside them. Each image is the one it is alone."""
    rng = np.random.default_rng(0)
    Image.fromarray(rng.integers(0, 256, (64, 64, 3), dtype=np.uint8)).save(tmp_path / "init.png")
    mask = np.zeros((64, 64), np.uint8)
    mask[16:48, 16:48] = 255
    Image.fromarray(mask).save(tmp_path / "mask.png")
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    model.load_model()
    base = dict(tiny.sample(arch), num_inference_steps=10, guidance_scale=5.0, width=64, height=64)
    init = str(tmp_path / "init.png")
    gens = [
        GenerateImageConfig(**base, prompt="a red circle", seed=1, init_image=init, strength=0.4),
        GenerateImageConfig(**base, prompt="a blue square", seed=2, init_image=init, strength=0.8),
        GenerateImageConfig(**base, prompt="green", seed=3, init_image=init, mask=str(tmp_path / "mask.png")),
        GenerateImageConfig(**base, prompt="stars", seed=4),
    ]
    assert all(step_batching.refusal(model, g) is None for g in gens)
    alone = [model.generate_media(copy.deepcopy(g)).image for g in gens]
    together, batcher = run_together(model, gens)
    assert any(size > 1 for size in batcher.sizes), dict(batcher.sizes)
    for i, image in enumerate(alone):
        assert psnr(together[i], image) >= MIN_PSNR_DB, i


def test_merge_concatenates_what_carries_the_batch_and_keeps_what_is_shared():
    sizes_ = []

    class Call:
        def __init__(self, hidden, t, ids, cond):
            self.args, self.kwargs = (hidden,), {"timestep": t, "img_ids": ids, "added": {"time_ids": cond}}
            self.names, self.forward = ("hidden_states",), "the unet's forward"
            sizes_.append(hidden.shape[0])

    ids = torch.arange(12.0).reshape(4, 3)
    a = Call(torch.zeros(2, 4, 8), torch.tensor(900.0), ids, torch.ones(2, 6))
    b = Call(torch.ones(1, 4, 8), torch.tensor(500.0), ids.clone(), torch.zeros(1, 6))
    args, kwargs, sizes = step_merge.merge([a, b])
    assert sizes == [2, 1] and args[0].shape == (3, 4, 8)
    assert kwargs["timestep"].tolist() == [900.0, 900.0, 500.0], "each request's own timestep, per row"
    assert kwargs["img_ids"] is ids, "equal shared inputs pass once"
    assert kwargs["added"]["time_ids"].shape == (3, 6)
    parts = step_merge.split((torch.arange(3.0),), sizes)
    assert [p[0].tolist() for p in parts] == [[0.0, 1.0], [2.0]]
    c = Call(torch.zeros(1, 4, 9), torch.tensor(1.0), ids, torch.zeros(1, 6))
    with pytest.raises(step_merge.Incompatible):
        step_merge.merge([a, c])
    # equal timesteps go per row too, uncompared: comparing two CUDA scalars waits for the GPU every round
    same = Call(torch.ones(1, 4, 8), torch.tensor(900.0), ids, torch.zeros(1, 6))
    assert step_merge.merge([a, same])[1]["timestep"].tolist() == [900.0, 900.0, 900.0]
    # each call is placed by its group's first call: c (another width) opens a group of its own
    assert step_batching._groups([a, b, c, same]) == [[a, b, same], [c]]
    assert step_batching._groups([a, b, c, same], max_calls=2) == [[a, b], [c], [same]]


@pytest.mark.parametrize("arch", ["flex2", "hidream"])
def test_families_whose_denoiser_follows_one_request_say_so(arch):
    model = get_model_class(arch)("cpu", ModelConfig(name_or_path=f"tiny:{arch}", arch=arch))
    gen = GenerateImageConfig(**tiny.sample(arch), prompt="x")
    assert "one request at a time" in step_batching.refusal(model, gen)
