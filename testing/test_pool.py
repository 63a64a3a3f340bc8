"""The component pool through the real engine and HTTP: sharing, release, keep-warm, idle unload, OOM retry."""

import gc
import time
import weakref

from testing.engine_harness import EngineHarness
from testing.stream_contract import body_for


def sd1(main="tiny:sd1", extras="tiny:sd1", seed=7, steps=3):
    body = body_for("sd1", steps=steps, seed=seed)
    body["model"].update(name_or_path=main, extras_name_or_path=extras)
    return body


def run(h, body) -> dict:
    out = h.client.generate_wait(body)
    assert out["http_status"] == 200, out
    return out


def counters(h) -> dict:
    return h.client.health()["counters"]


def pool_keys(h) -> set:
    return {entry["key"] for entry in h.client.health()["pool"]}


def roles(h) -> dict:
    return {k.split("|")[1].rsplit("/", 1)[-1]: k for k in pool_keys(h)}


def test_two_finetunes_share_text_encoder_tokenizer_and_vae(harness):
    run(harness, sd1())
    unet_a = weakref.ref(harness.engine.holder.parts["unet"])
    keys_a = pool_keys(harness)
    before = counters(harness)
    run(harness, sd1(main="tiny:sd1/b"))
    after = counters(harness)
    assert after["hits"] - before["hits"] == 3  # text_encoder, tokenizer, vae
    assert after["misses"] - before["misses"] == 1  # only the UNet loads
    keys_b = pool_keys(harness)
    shared = keys_a & keys_b
    assert {k.split("|")[1].rsplit("/", 1)[-1] for k in shared} == {"text_encoder", "tokenizer", "vae"}
    assert not any("sd1/b" in k or "sd1__b" in k for k in keys_a)
    assert len(keys_a - keys_b) == 1 and "unet" in next(iter(keys_a - keys_b))  # A's UNet entry is gone
    gc.collect()
    assert unet_a() is None, "A's UNet is still alive somewhere"


def test_health_reports_each_entry_with_its_bytes_and_load_time(harness):
    run(harness, sd1())
    entries = harness.client.health()["pool"]
    weighted = [e for e in entries if e["bytes"]]
    assert {e["subfolder"] for e in weighted} == {"unet", "text_encoder", "vae"}
    assert all(e["load_s"] > 0 and e["tier"] == "device" and e["in_use"] for e in entries)


def test_repeating_a_config_is_a_holder_fast_path_with_zero_loads(harness):
    run(harness, sd1())
    before = counters(harness)
    run(harness, sd1(seed=8))
    after = counters(harness)
    assert after["misses"] == before["misses"] and after["hits"] == before["hits"]
    assert after["holder_reuses"] == before["holder_reuses"] + 1


def test_keep_resident_budget_keeps_the_newest_idle_entries_warm(harness):
    run(harness, sd1())
    unet_bytes = max(e["bytes"] for e in harness.client.health()["pool"])
    harness.engine.pool.keep_resident_bytes = int(unet_bytes * 1.5)  # room for one idle UNet
    run(harness, sd1(main="tiny:sd1/b"))
    run(harness, sd1(main="tiny:sd1/c"))
    unets = [k for k in pool_keys(harness) if "unet" in k]
    assert len(unets) == 2  # c (in use) + b (newest idle); a was the least recently used and went
    assert any("sd1__b" in k for k in unets) and any("sd1__c" in k for k in unets)
    before = counters(harness)
    run(harness, sd1(main="tiny:sd1/b"))  # warm: no load at all
    assert counters(harness)["misses"] == before["misses"]


def test_idle_unload_frees_everything_after_the_idle_time(tmp_path, tiny_cache):
    h = EngineHarness(tmp_path, idle_unload_seconds=1.0)
    try:
        run(h, sd1())
        assert h.client.health()["pool"]
        deadline = time.monotonic() + 10
        while h.client.health()["pool"] and time.monotonic() < deadline:
            time.sleep(0.2)
        health = h.client.health()
        assert health["pool"] == [] and health["active"] is None and health["resident_bytes"] == 0
        run(h, sd1())  # and it loads again on demand
    finally:
        h.close()


def test_oom_during_a_build_frees_untouched_entries_and_retries_once(harness):
    run(harness, sd1())
    harness.engine.pool.inject_oom(1)  # the next load (B's UNet) raises CUDA out-of-memory
    frames = list(harness.client.generate(sd1(main="tiny:sd1/b")))
    messages = [f.header.get("message", "") for f in frames if f.type == "status"]
    assert any("Out of memory while loading" in m for m in messages)
    assert frames[-1].type == "end" and frames[-1].header["ok"] is True
    assert [f for f in frames if f.type == "result"]


def test_oom_twice_is_an_oom_error_frame_and_the_engine_keeps_serving(harness):
    harness.engine.pool.inject_oom(2)
    frames = list(harness.client.generate(sd1()))
    errors = [f.header for f in frames if f.type == "error"]
    assert errors and errors[0]["code"] == "oom"
    run(harness, sd1())


def test_unload_all_and_by_key(harness):
    run(harness, sd1())
    vae_key = roles(harness)["vae"]
    r = harness.client.http.post("/unload", json={"keys": [vae_key]})
    assert r.status_code == 200 and r.json()["unloaded"] == [vae_key]
    assert vae_key not in pool_keys(harness) and harness.client.health()["active"] is None
    r = harness.client.http.post("/unload", json={"keys": ["no|such|key"]})
    assert r.status_code == 422 and "no|such|key" in r.text
    r = harness.client.http.post("/unload", json={"all": True})
    assert r.status_code == 200 and pool_keys(harness) == set()
    run(harness, sd1())


def test_tokenizers_are_pooled_by_content_without_dtype_or_device(harness):
    run(harness, sd1())
    tokenizer = roles(harness)["tokenizer"]
    assert len(tokenizer.split("|")) == 3 and tokenizer.split("|")[2].startswith("#")  # class|source|#content


def test_identical_files_under_another_name_are_shared(harness, tmp_path):
    """Content identity: a copy of the checkpoint in another folder (another repo name) shares everything."""
    import shutil

    from toolkit.models.tiny import tiny_checkpoint

    copy = tmp_path / "renamed_copy"
    shutil.copytree(tiny_checkpoint("sd1"), copy)
    run(harness, sd1())
    before = counters(harness)
    run(harness, sd1(main=str(copy), extras=str(copy)))
    after = counters(harness)
    assert after["misses"] == before["misses"] and after["hits"] - before["hits"] == 4


def test_a_different_dtype_is_a_different_entry(harness):
    run(harness, sd1())
    body = sd1()
    body["model"]["dtype"] = "bf16"
    before = counters(harness)
    run(harness, body)
    after = counters(harness)
    assert after["misses"] - before["misses"] == 3  # unet, text encoder, vae in bf16; tokenizer shared
    assert after["hits"] - before["hits"] == 1


def test_a_waiting_request_is_not_delayed_by_releasing_the_last_ones_components(harness):
    """Releasing (parking, on a GPU: ~1 s per GB the first time) runs only while nobody waits. A, B, A queued at
    once keep A's components through B, so the second A finds its UNet still loaded (a hit, not a reload);
    once the queue is empty, what the last request did not use goes."""
    run(harness, sd1(main="tiny:sd1/b"))  # a running request for the three below to queue behind
    tickets = [harness.client.submit(b) for b in (sd1(steps=30), body_for("flux", steps=2), sd1(seed=8))]
    for ticket in tickets:
        frames = [f.header for f in harness.client.frames(ticket["request_id"])]
        assert frames[-1]["ok"] is True, frames[-3:]
    pool = harness.client.health()["pool"]
    unets = [e for e in pool if e["subfolder"] == "unet"]
    assert len(unets) == 1 and "sd1__b" not in unets[0]["key"]  # idle at the end: b's UNet went ...
    assert unets[0]["hits"] >= 1  # ... A's stayed through the Flux request, and the second A hit it
    assert not any("flux" in e["key"] for e in pool)  # ... and so did Flux's parts
