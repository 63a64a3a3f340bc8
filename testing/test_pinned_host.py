"""Pinned host copies (toolkit/models/pinned.py ``host_buffers``) on their own: one page-locked block per set of
buffers, reused while their names and shapes match and renewed once much of the block went stale, unlocked when
the last buffer goes (after a CUDA graph capture, if one is running), and torch's pinned memory where page locking
is refused. The pool drops a module's copies when it evicts it (test_pool_units.py)."""

import torch

from toolkit.models.pinned import host_buffers


def test_host_buffers_are_reused_unless_much_of_their_block_went_stale():
    """New names get buffers, made in one call (one page-locked block). Buffers that no longer match (a LoRA
    renamed or reshaped a weight) are replaced; when they were more than a quarter of the old bytes, every buffer
    is renewed, since a live view keeps its whole old block allocated."""
    made = []

    def allocate(tensors):
        made.append([tuple(t.shape) for t in tensors])
        return [torch.empty_like(t) for t in tensors]

    big, small = torch.zeros(100), torch.zeros(10, dtype=torch.float16)
    first = host_buffers({"big": big, "small": small}, None, allocate)
    added = host_buffers({"big": big, "small": small, "new": torch.zeros(1)}, first, allocate)
    assert added["big"] is first["big"] and added["small"] is first["small"] and made[-1] == [(1,)]
    renamed = host_buffers({"big": big, "small.base": small}, first, allocate)  # 20 of 420 bytes stale: reuse
    assert renamed["big"] is first["big"] and made[-1] == [(10,)]
    reshaped = host_buffers({"big": torch.zeros(50), "small": small}, first, allocate)  # 400 of 420: renew all
    assert reshaped["small"] is not first["small"] and made[-1] == [(50,), (10,)]
    assert host_buffers({"big": big.half(), "small": small}, first, allocate)["small"] is not first["small"]


def test_host_copies_share_one_exact_block_that_unlocks_when_the_last_goes(monkeypatch):
    """torch's pinned allocator rounds each tensor up to a power of two (a 1.2 GiB copy held 2 GiB on the GPU
    machine); ``empty_like_all`` carves every copy from one mapping of their summed size, aligned, and unregisters
    it once no copy is left. Registration itself needs CUDA: recorded here instead."""
    import gc

    from toolkit.models import pinned

    registered, unregistered = [], []

    def register(pages, address, size):
        registered.append((address, size))
        pages.address = address
        return True

    monkeypatch.setattr(pinned, "_register", register)
    monkeypatch.setattr(pinned, "_unregister", unregistered.append)
    like = [torch.randn(3, 5), torch.ones(7, dtype=torch.bfloat16), torch.zeros(0, 4), torch.tensor(2.0)]
    like.append(torch.ones(4, dtype=torch.float8_e4m3fn))
    copies = pinned.empty_like_all(like, lock=True)
    for source, copy in zip(like, copies):
        copy.copy_(source)
        assert copy.shape == source.shape and copy.dtype == source.dtype and torch.equal(copy.float(), source.float())
    ((address, size),) = registered
    assert size == 4 * pinned.ALIGN  # 60, 14, 0, 4 and 4 bytes, each on its own 512-byte boundary
    assert [c.data_ptr() - address for c in copies if c.numel()] == [0, 512, 1024, 1536]
    kept = copies[1]
    del copies, copy
    gc.collect()
    assert unregistered == []  # one copy still uses the block
    assert torch.equal(kept, torch.ones(7, dtype=torch.bfloat16))
    del kept
    gc.collect()
    assert unregistered == [address]
    assert pinned.empty_like_all([torch.zeros(0)], lock=True)[0].numel() == 0 and len(registered) == 1


def test_host_copies_freed_during_a_graph_capture_are_unlocked_after_it(monkeypatch):
    """The garbage collector may free a dropped module's copies while a CUDA graph is being captured, when the
    GPU may be neither synchronized nor asked to unlock memory: the mapping waits, and goes with the next
    allocation once the capture is over."""
    import gc

    from toolkit.models import pinned

    unregistered, capturing = [], [True]
    monkeypatch.setattr(pinned, "_register", lambda pages, address, size: setattr(pages, "address", address) or True)
    monkeypatch.setattr(pinned, "_unregister", unregistered.append)
    monkeypatch.setattr(pinned, "_capturing", lambda: capturing[0])
    monkeypatch.setattr(pinned, "_deferred", [])
    copies = pinned.empty_like_all([torch.ones(8)], lock=True)
    address = copies[0].data_ptr()
    del copies
    gc.collect()
    assert unregistered == [] and len(pinned._deferred) == 1
    pinned.empty_like_all([torch.ones(1)], lock=True)  # still capturing: nothing yet
    assert unregistered == []
    capturing[0] = False
    pinned.empty_like_all([torch.ones(1)], lock=True)
    assert address in unregistered and pinned._deferred == []


def test_a_refused_page_lock_falls_back_to_torchs_pinned_memory(monkeypatch):
    """Where the driver will not page-lock memory torch did not allocate, copies still come pinned (rounded, as
    before) and the refusal is tried once, not for every block."""
    from types import SimpleNamespace

    from toolkit.models import pinned

    monkeypatch.setattr(pinned, "_refused", [])
    monkeypatch.setattr(torch.cuda, "cudart", lambda: SimpleNamespace(cudaHostRegister=lambda *a: 801))
    asked, real_empty = [], torch.empty

    def empty(*args, pin_memory=False, **kwargs):
        asked.append(pin_memory)
        return real_empty(*args, **kwargs)

    monkeypatch.setattr(torch, "empty", empty)
    copies = pinned.empty_like_all([torch.ones(3), torch.ones(2, 2)], lock=True)
    assert [tuple(c.shape) for c in copies] == [(3,), (2, 2)] and asked == [True, True]
    assert "CUDA error 801" in pinned._refused[0]
    pinned.empty_like_all([torch.ones(1)], lock=True)
    assert asked == [True, True, True] and len(pinned._refused) == 1


def test_host_buffers_are_kept_when_exactly_a_quarter_of_their_bytes_went_stale():
    """At exactly STALE_SHARE of the old bytes ("more than a quarter" renews them) the buffers are still reused."""
    from toolkit.models.pinned import STALE_SHARE

    assert STALE_SHARE == 0.25
    made = []

    def allocate(tensors):
        made.append([tuple(t.shape) for t in tensors])
        return [torch.empty_like(t) for t in tensors]

    parts = {name: torch.zeros(10) for name in "abcd"}  # 40 bytes each: "d" reshaped is 40 of 160 stale
    first = host_buffers(parts, None, allocate)
    again = host_buffers({**parts, "d": torch.zeros(5)}, first, allocate)
    assert all(again[name] is first[name] for name in "abc") and made[-1] == [(5,)]
