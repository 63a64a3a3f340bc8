"""ComponentPool's bookkeeping on its own: hits and misses, what a request marks used, what release and eviction
free, park or keep, in which order, within which budgets. Modules are stand-ins with a known byte size, and
parking (pinned host memory, CUDA only) is replaced by a recorder: the decisions are what is tested here;
test_pool.py and test_pool_safety.py run the same pool under the real engine."""

import pytest
import torch

from toolkit.models.components import pool as pool_module
from toolkit.models.components.pool import GB, ComponentKey, ComponentPool, module_bytes


class Blob:
    """A module of ``n`` bytes (uint8 parameters) and ``b`` bytes of buffers."""

    def __init__(self, n, b=0):
        self.params, self.bufs = [torch.zeros(n, dtype=torch.uint8)], [torch.zeros(b, dtype=torch.uint8)]

    def parameters(self):
        return iter(self.params)

    def buffers(self):
        return iter(self.bufs)


def key(name, device="cpu", **kw):
    return ComponentKey(cls=f"test.{name}", content=name, device=device, **kw)


@pytest.fixture()
def parks(monkeypatch):
    """Parking and returning recorded instead of copied to pinned memory."""
    log = []

    def park(entry):
        log.append(("park", entry.key.content))
        entry.tier = "ram"

    def unpark(entry):
        log.append(("unpark", entry.key.content))
        entry.tier = "device"

    monkeypatch.setattr(pool_module, "_park", park)
    monkeypatch.setattr(pool_module, "_unpark", unpark)
    return log


def load(pool, name, n=100, **kw):
    return pool.get_or_load(key(name, **kw), lambda: Blob(n))


def test_module_bytes_counts_parameters_and_buffers_and_nothing_for_weightless_parts():
    assert module_bytes(Blob(100, 28)) == 128
    assert module_bytes(object()) == 0


def test_module_bytes_on_a_device_counts_what_is_there_now():
    """A visitor loaded on the host and now on the GPU counts as on the GPU (the out-of-memory report's
    components and the stage records): half of this one has moved, to ``meta`` standing in for the GPU."""
    blob = Blob(100, 28)
    blob.params.append(torch.zeros(60, dtype=torch.uint8, device="meta"))
    assert (module_bytes(blob, on="cpu"), module_bytes(blob, on="meta"), module_bytes(blob)) == (128, 60, 188)
    assert module_bytes(blob, on="cuda") == module_bytes(blob, on="cpu:1") == 0


def test_a_miss_records_how_long_the_load_took():
    import time

    pool = ComponentPool()
    pool.get_or_load(key("slow"), lambda: time.sleep(0.02) or Blob(1))
    assert 0.02 <= pool.entries[key("slow")].load_s < 5
    assert pool.snapshot()[0]["load_s"] >= 0.02


def test_a_second_load_of_the_same_key_is_a_hit_on_the_same_module():
    pool = ComponentPool()
    first = load(pool, "a")
    assert load(pool, "a") is first
    assert (pool.counters["hits"], pool.counters["misses"]) == (1, 1)
    [entry] = pool.entries.values()
    assert entry.hits == 1 and entry.bytes == 100 and entry.load_s >= 0
    assert load(pool, "a", device="cuda:0") is not first  # another device is another key
    assert pool.counters["misses"] == 2


def test_a_request_uses_what_it_loads_or_marks_and_nothing_else():
    pool = ComponentPool()
    load(pool, "a"), load(pool, "b")
    pool.begin_request()
    assert pool.used == set()
    load(pool, "a")
    pool.mark_used(key("b"))
    pool.mark_used(key("unknown"))
    assert pool.used == {key("a"), key("b")}
    assert [e["in_use"] for e in pool.snapshot()] == [True, True]


def test_release_frees_what_the_request_did_not_use():
    pool = ComponentPool()
    load(pool, "a"), load(pool, "b"), load(pool, "c")
    pool.begin_request()
    load(pool, "b")
    assert set(pool.release_unused()) == {key("a"), key("c")}
    assert list(pool.entries) == [key("b")] and pool.counters["evictions"] == 2
    assert pool.release_unused(keep={key("b")}) == []


def test_release_keeps_the_newest_idle_entries_within_the_keep_warm_budget():
    pool = ComponentPool(keep_resident_gb=250 / GB)  # room for two entries of 100 bytes
    for name in ("old", "mid", "new", "used"):
        load(pool, name)
    pool.begin_request()
    load(pool, "used")
    assert pool.release_unused() == [key("old")]  # least recently used goes first
    assert set(pool.entries) == {key("mid"), key("new"), key("used")}


def test_release_keeps_an_entry_that_fits_exactly_and_not_one_byte_more():
    pool = ComponentPool(keep_resident_gb=100 / GB)
    load(pool, "a")
    pool.begin_request()
    assert pool.release_unused() == []
    pool = ComponentPool(keep_resident_gb=99 / GB)
    load(pool, "a")
    pool.begin_request()
    assert pool.release_unused() == [key("a")]


def test_release_with_an_explicit_keep_set_spares_it():
    pool = ComponentPool()
    load(pool, "a"), load(pool, "b")
    pool.begin_request()
    assert pool.release_unused(keep={key("a")}) == [key("b")]


def test_evict_drops_and_counts_and_ignores_unknown_keys():
    pool = ComponentPool()
    module = load(pool, "a")
    assert pool.evict([key("a"), key("nope")]) == [key("a")]
    assert not pool.entries and pool.counters["evictions"] == 1
    assert module.params  # the pool let go of it; the module itself is untouched


def test_evict_parks_cuda_components_in_ram_within_the_budget(parks):
    pool = ComponentPool(keep_in_ram_gb=150 / GB)
    load(pool, "a", device="cuda:0"), load(pool, "b", device="cuda:0"), load(pool, "c", device="cpu")
    assert pool.evict([key("a", "cuda:0"), key("b", "cuda:0"), key("c")]) == [
        key("a", "cuda:0"),
        key("b", "cuda:0"),
        key("c"),
    ]
    assert parks == [("park", "a")]  # b would overflow the budget; c is not on a GPU
    assert list(pool.entries) == [key("a", "cuda:0")] and pool.entries[key("a", "cuda:0")].tier == "ram"
    assert (pool.counters["parked"], pool.counters["evictions"]) == (1, 2)
    assert pool.evict([key("a", "cuda:0")]) == []  # already parked: nothing more to free
    assert load(pool, "a", device="cuda:0") is not None and parks[-1] == ("unpark", "a")
    assert pool.counters["ram_hits"] == 1 and pool.entries[key("a", "cuda:0")].return_s is not None


def test_a_parked_entry_is_dropped_when_parking_is_not_allowed(parks):
    pool = ComponentPool(keep_in_ram_gb=1)
    load(pool, "a", device="cuda:0")
    pool.evict([key("a", "cuda:0")])
    assert pool.evict([key("a", "cuda:0")], allow_park=False) == [key("a", "cuda:0")]
    assert not pool.entries


@pytest.mark.parametrize(
    "device,budget,size,expected",
    [
        ("cuda:0", 1, 100, True),
        ("cpu", 1, 100, False),
        ("cuda:0", 0, 100, False),
        ("cuda:0", 1, 0, False),
        ("cuda:0", 100 / GB, 100, True),
        ("cuda:0", 99 / GB, 100, False),
    ],
)
def test_what_may_be_parked(device, budget, size, expected):
    pool = ComponentPool(keep_in_ram_gb=budget)
    load(pool, "a", n=size, device=device)
    assert pool._can_park(pool.entries[key("a", device)]) is expected


def test_parking_budget_counts_what_is_already_parked(parks):
    pool = ComponentPool(keep_in_ram_gb=200 / GB)
    load(pool, "a", device="cuda:0"), load(pool, "b", device="cuda:0")
    pool.evict([key("a", "cuda:0")])
    assert pool._can_park(pool.entries[key("b", "cuda:0")]) is True  # 100 parked + 100 = 200 fits
    load(pool, "c", n=101, device="cuda:0")
    assert pool._can_park(pool.entries[key("c", "cuda:0")]) is False


def test_unload_everything_or_named_entries_but_never_protected_ones(parks):
    pool = ComponentPool(keep_in_ram_gb=1)
    load(pool, "a", device="cuda:0"), load(pool, "b"), load(pool, "c")
    names = {k.content: str(k) for k in pool.entries}
    assert pool.unload([names["b"]]) == [names["b"]]
    with pytest.raises(KeyError, match="nope"):
        pool.unload(["nope"])
    assert pool.unload([names["c"]], protect={key("c")}) == []
    assert set(pool.unload(None, protect={key("c")})) == {names["a"]}
    assert list(pool.entries) == [key("c")]  # unload(None) frees, never parks
    assert ("park", "a") not in parks


def test_evict_for_frees_least_recently_used_until_the_load_fits(monkeypatch):
    pool = ComponentPool()
    for name in ("a", "b", "c", "d"):
        load(pool, name, device="cuda:0")
    load(pool, "other", device="cuda:1")
    pool.begin_request()
    load(pool, "c", device="cuda:0")  # used by this request
    free = {"bytes": 50}
    monkeypatch.setattr(pool_module, "free_device_bytes", lambda device: free["bytes"])
    assert pool.evict_for(40, "cuda:0", protect=set()) == []  # it fits already
    assert pool.evict_for(250, "cuda:0", protect={key("a", "cuda:0")}) == [key("b", "cuda:0"), key("d", "cuda:0")]
    assert set(pool.entries) == {key("a", "cuda:0"), key("c", "cuda:0"), key("other", "cuda:1")}
    assert pool.evict_for(10**9, "cuda:0", protect=set()) == [key("a", "cuda:0")]  # all it may free


def test_evict_for_stops_as_soon_as_the_load_fits(monkeypatch):
    pool = ComponentPool()
    for name in ("a", "b", "c"):
        load(pool, name, device="cuda:0")
    pool.begin_request()
    monkeypatch.setattr(pool_module, "free_device_bytes", lambda device: 0)
    assert pool.evict_for(100, "cuda:0", protect=set()) == [key("a", "cuda:0")]
    assert pool.evict_for(200, "cuda:0", protect=set()) == [key("b", "cuda:0"), key("c", "cuda:0")]


def test_evict_for_does_nothing_off_the_gpu():
    pool = ComponentPool()
    load(pool, "a")
    pool.begin_request()
    assert pool.evict_for(10**12, "cpu", protect=set()) == [] and len(pool.entries) == 1


def test_injected_out_of_memory_fails_that_many_misses_and_no_hits():
    pool = ComponentPool()
    load(pool, "a")
    pool.inject_oom(1)
    assert load(pool, "a") is not None  # a hit loads nothing
    with pytest.raises(torch.cuda.OutOfMemoryError):
        load(pool, "b")
    assert load(pool, "b") is not None and pool.counters["misses"] == 2


def test_resident_bytes_and_snapshot_newest_first():
    pool = ComponentPool()
    load(pool, "a", n=10), load(pool, "b", n=20)
    assert pool.resident_bytes() == 30
    assert [e["content"] for e in pool.snapshot()] == ["b", "a"]
    load(pool, "a")
    assert [e["content"] for e in pool.snapshot()] == ["a", "b"]


# ------------------------------------------------------------------ what the mutation run found unguarded
def test_counters_and_timings_accumulate(parks):
    import time

    pool = ComponentPool(keep_in_ram_gb=1)
    started = time.time()
    for _ in range(3):
        load(pool, "a", device="cuda:0")
    entry = pool.entries[key("a", "cuda:0")]
    assert (pool.counters["hits"], entry.hits) == (2, 2)
    assert 0 <= entry.load_s < 10 and started - 1 <= entry.last_used <= time.time() + 1
    load(pool, "b", device="cuda:0")
    for _ in range(2):
        pool.evict([key("a", "cuda:0"), key("b", "cuda:0")])
        load(pool, "a", device="cuda:0"), load(pool, "b", device="cuda:0")
    assert pool.counters["parked"] == 4 and pool.counters["ram_hits"] == 4
    assert 0 <= entry.return_s < 10


def test_a_weightless_entry_is_released_without_a_budget_and_a_one_byte_budget_keeps_one_byte():
    pool = ComponentPool()
    load(pool, "tokenizer", n=0)
    pool.begin_request()
    assert pool.release_unused() == [key("tokenizer")]
    pool = ComponentPool(keep_resident_gb=1 / GB)
    load(pool, "a", n=1)
    pool.begin_request()
    assert pool.release_unused() == []


def test_evict_goes_on_past_keys_it_skips(parks):
    pool = ComponentPool(keep_in_ram_gb=1)
    load(pool, "parked", device="cuda:0"), load(pool, "b")
    pool.evict([key("parked", "cuda:0")])
    assert pool.evict([key("nope"), key("parked", "cuda:0"), key("b")]) == [key("b")]


def test_unload_names_every_unknown_key():
    pool = ComponentPool()
    load(pool, "a")
    with pytest.raises(KeyError, match="x, y"):
        pool.unload(["x", str(key("a")), "y"])
    assert len(pool.entries) == 1


def test_evict_for_asks_about_the_right_device_and_counts_what_it_frees(monkeypatch):
    pool = ComponentPool()
    for name in ("a", "b", "c"):
        load(pool, name, device="cuda:1")
    pool.begin_request()
    free = {"cuda:0": 0, "cuda:1": 60}
    monkeypatch.setattr(pool_module, "free_device_bytes", lambda device: free[device])
    assert pool.evict_for(60, "cuda:1", protect=set()) == []  # exactly enough is enough
    assert pool.evict_for(250, "cuda:1", protect=set()) == [key("a", "cuda:1"), key("b", "cuda:1")]  # 60+100+100


def test_injected_out_of_memory_says_so():
    pool = ComponentPool()
    pool.inject_oom(1)
    with pytest.raises(torch.cuda.OutOfMemoryError, match="injected out-of-memory while loading"):
        load(pool, "a")


def test_before_a_planned_request_runs_residents_it_does_not_use_leave_as_far_as_its_peak_needs(monkeypatch):
    """A plan counts the pool's other GPU residents as free memory; its visiting and streamed weights then come and
    go in offload hooks the pool never sees. On the H200, a Wan 2.1 I2V re-plan ran out of memory mid-step beside
    what the failed plan had left on the card. The resident model makes the room before sampling: oldest unused
    residents first, only as many as the plan's peak needs, never one this request uses."""
    from types import SimpleNamespace

    from extensions_built_in.inference_engine.resident import ResidentModel

    pool = ComponentPool()
    for name in ("old_a", "old_b", "old_c"):
        load(pool, name, n=100, device="cuda")
    pool.begin_request()
    load(pool, "mine", n=50, device="cuda")
    free = {"bytes": 20}
    monkeypatch.setattr(pool_module, "free_device_bytes", lambda device: free["bytes"])
    ResidentModel("cuda", pool, lambda *a: None).make_room(SimpleNamespace(peak=50 + 200))  # own 50: needs 200
    assert [k.content for k in pool.entries] == ["old_c", "mine"]  # 20 free + a + b = 220 >= 200
    ResidentModel("cuda", pool, lambda *a: None).make_room(None)  # the user's own options: nothing planned
    assert [k.content for k in pool.entries] == ["old_c", "mine"]


def test_release_stops_when_asked_and_leaves_the_rest_for_later():
    """The engine stops parking when a request is waiting: what is left stays on the device until a later
    release (or a load that needs the room) takes it."""
    pool = ComponentPool()
    load(pool, "a"), load(pool, "b"), load(pool, "c")
    pool.begin_request()
    asked = []
    assert len(pool.release_unused(stop=lambda: asked.append(1) or len(asked) > 1)) == 1  # one, then stop
    assert len(pool.entries) == 2 and pool.counters["evictions"] == 1
    assert pool.release_unused(stop=lambda: True) == []  # a request waits: nothing now
    assert len(pool.release_unused()) == 2 and not pool.entries  # idle again: the rest goes


def test_a_holder_streams_keep_their_planned_blocks_and_give_them_back_when_dropped(monkeypatch):
    """The resident model gives each streamed denoiser its plan's kept share once ``make_room`` has made the
    room (a reused holder's new plan may give more or less), and takes it back when the holder goes: the pool
    lists a streamed component as waiting on the host, so nothing else would free those blocks for the next
    model. Until then the next plan counts them as the engine's own (``RequestMemory.refresh``)."""
    from types import SimpleNamespace

    from extensions_built_in.inference_engine import request_memory
    from extensions_built_in.inference_engine.request_memory import RequestMemory
    from extensions_built_in.inference_engine.resident import ResidentModel
    from toolkit.models.offload import _on_host
    from toolkit.models.streaming import BlockStream, module_bytes

    torch.manual_seed(0)
    denoiser = torch.nn.Module()
    denoiser.blocks = torch.nn.ModuleList(torch.nn.Linear(64, 64) for _ in range(4))
    stream = BlockStream(denoiser, "cpu")
    block = module_bytes(denoiser.blocks[0])
    resident = ResidentModel("cpu", ComponentPool(), lambda *a: None)
    resident.holder = SimpleNamespace(parts={"transformer": denoiser, "tokenizer": object()})
    monkeypatch.setattr(resident, "make_room", lambda plan: None)

    resident._place_kept_blocks(SimpleNamespace(kept={"transformer": 2 * block}))
    assert [_on_host(b) for b in denoiser.blocks] == [False, False, True, True]
    seen = {}
    monkeypatch.setattr(request_memory, "plannable_bytes", lambda device, own: seen.setdefault("own", own))
    monkeypatch.setattr(request_memory, "kept_bytes", lambda device: stream.kept_bytes)  # only this stream's
    RequestMemory("cpu", "auto", ComponentPool(), None).refresh()
    assert seen["own"] == 2 * block  # the pool holds nothing on the device; the kept blocks are the engine's
    resident._place_kept_blocks(SimpleNamespace(kept={"transformer": 3 * block}))  # a new plan, more room
    assert [_on_host(b) for b in denoiser.blocks] == [False, False, False, True]
    resident._place_kept_blocks(None)  # the user's own options: nothing kept
    assert all(_on_host(b) for b in denoiser.blocks)
    resident._place_kept_blocks(SimpleNamespace(kept={"transformer": 4 * block}))
    resident.drop()
    assert all(_on_host(b) for b in denoiser.blocks) and stream.kept_bytes == 0


def test_before_a_host_waiting_load_idle_host_copies_go_oldest_first_and_none_is_parked(parks, monkeypatch):
    """FLUX.2-dev on a 16 GiB budget (H200 machine): a re-plan's new host copies loaded beside the old ones and the
    OS killed the engine. Only what waits in host RAM goes (loaded there, or parked), never a GPU resident or what
    this request uses, and it is dropped: parking would keep it in the same RAM."""
    pool = ComponentPool()
    load(pool, "host_a"), load(pool, "gpu_b", device="cuda:0"), load(pool, "parked_c", device="cuda:0")
    load(pool, "host_d"), load(pool, "host_e")
    pool.entries[key("parked_c", "cuda:0")].tier = "ram"
    pool.begin_request()
    load(pool, "host_d")  # this request's
    free = {"bytes": 50}
    monkeypatch.setattr(pool_module, "host_available_bytes", lambda: free["bytes"])
    assert pool.evict_host_for(50, protect=set()) == []  # it fits
    assert pool.evict_host_for(250, protect={key("host_a")}) == [key("parked_c", "cuda:0"), key("host_e")]
    assert [k.content for k in pool.entries] == ["host_a", "gpu_b", "host_d"] and not parks


def test_evict_for_does_not_count_a_parked_entry_as_gpu_memory_it_frees(parks, monkeypatch):
    pool = ComponentPool()
    load(pool, "parked", device="cuda:0"), load(pool, "resident", device="cuda:0")
    pool.entries[key("parked", "cuda:0")].tier = "ram"
    pool.begin_request()
    monkeypatch.setattr(pool_module, "free_device_bytes", lambda device: 0)
    assert pool.evict_for(100, "cuda:0", protect=set()) == [key("resident", "cuda:0")]


@pytest.mark.parametrize("onload", ["cuda:0", None], ids=["gpu_engine", "cpu_engine"])
def test_the_load_funnel_makes_host_room_only_for_what_waits_there(onload, tiny_cache, monkeypatch):
    """A GPU engine's host-waiting load (``device="cpu"``, run on the GPU) evicts idle host copies first; a CPU
    engine's loads are its residents and leave them alone."""
    from toolkit.models.components.loading import load_component

    pool = ComponentPool()
    load(pool, "stale")
    pool.begin_request()
    monkeypatch.setattr(pool_module, "host_available_bytes", lambda: 0)
    monkeypatch.setattr(pool_module, "free_device_bytes", lambda device: 10**12)  # room on the GPU
    with pool_module.active_pool(pool):
        load_component("transformers.CLIPTextModel", "tiny:sd1", "text_encoder", device="cpu", onload_device=onload)
    assert (key("stale") in pool.entries) == (onload is None)


def test_host_ram_for_offloaded_weights_leaves_a_reserve(monkeypatch):
    import psutil

    memory = {"total": 64 * GB, "available": 20 * GB}
    monkeypatch.setattr(psutil, "virtual_memory", lambda: type("VM", (), memory)())
    assert pool_module.host_available_bytes(5 * GB) == 20 * GB - int(6.4 * GB) + 5 * GB  # a tenth of 64 GiB
    memory.update(total=16 * GB, available=3 * GB)
    assert pool_module.host_available_bytes(5 * GB) == 5 * GB  # under the 4 GiB floor: only its own copies


# ------------------------------------------------------------------ the second mutation run
def test_an_evicted_module_drops_its_host_copies_and_its_send_back_hook():
    """Offloading (toolkit/models/offload.py) leaves pinned host copies and a forward pre-hook on a module;
    dropping it from the pool takes both off, or the copies stay allocated and the hook keeps the chain's
    previous model alive."""
    from toolkit.models.offload import PINNED_ATTR, SENDS_BACK_ATTR

    pool = ComponentPool()
    module = pool.get_or_load(key("m"), lambda: torch.nn.Linear(2, 2))
    handle = module.register_forward_pre_hook(lambda m, args: None)
    module.__dict__[SENDS_BACK_ATTR] = handle
    module.__dict__[PINNED_ATTR] = {"weight": torch.zeros(2, 2)}
    assert pool.evict([key("m")]) == [key("m")]
    assert PINNED_ATTR not in module.__dict__ and SENDS_BACK_ATTR not in module.__dict__
    assert handle.id not in module._forward_pre_hooks
