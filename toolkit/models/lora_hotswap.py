"""LoRA switches on a compiled denoiser without recompiling it (issue #14).

torch.compile guards on the denoiser's structure. Today's adapters are named per file, so each LoRA switch added
modules and changed the active adapter list, and every switch recompiled (tens of seconds to minutes on a GPU).
A compiled denoiser instead keeps its LoRAs in fixed adapters, ``slot_0``, ``slot_1``, … (one per LoRA of a
request), and diffusers' hot-swap (``load_lora_weights(..., hotswap=True)`` over PEFT's ``peft.utils.hotswap``)
refills them in place. ``enable_lora_hotswap`` pads each slot when it is created (``slot_rank``: the file's rank
rounded up to a power of two, at least ``HOTSWAP_MIN_RANK``) and keeps its scale in a tensor, so a LoRA of any
rank up to the slot's swaps in with no change to a shape, a module or a guarded value; one of a higher rank (up to
``HOTSWAP_RANK``) makes the slot again at its own, which recompiles once. Slots a request does not use stay
active at scale 0 (x + 0·lora(x) is exactly x): the active list never changes either.

Where a swap cannot apply, the slot is deleted and the file loads into it anew, which recompiles, and the status
says so: a LoRA over the rank ceiling, one that targets other layers than the slot's or has a config PEFT will
not swap (DoRA, per-layer alphas), one with text-encoder layers (diffusers cannot hot-swap those). A pipeline
without ``enable_lora_hotswap`` keeps today's path. Which file a slot holds is kept on the denoiser (pooled,
so shared by every holder of it), so the same file is not loaded twice.
"""

from __future__ import annotations

import math
import os
import warnings
from dataclasses import dataclass

from toolkit.models.lora import LoraMismatch, adapter_name, load_lora, loaded_adapters, no_match, read_layers, sources

# The highest rank a slot is padded to: 128 is the value diffusers' hot-swap docs use, and it covers the ranks
# trainers write by default (AI Toolkit: 16-32; 64-128 for style LoRAs). A file of higher rank loads unpadded and
# recompiles. A slot is padded only as far as its first file needs (``slot_rank``): the padded rows are multiplied
# every step like real ones, so a rank-32 file in a slot of 128 does four times the LoRA matmuls it needs, a cost a
# compare grid pays on every cell (docs/BENCHMARKS.md "Compare grids"); the floor keeps a rank-4 or rank-16 file from
# recompiling at the next, larger one.
HOTSWAP_RANK = 128
HOTSWAP_MIN_RANK = 32
SLOT = "slot_"
UNLESS = " (unless torch.compile has this adapter layout cached from before)"
_RECORD = "_aitk_lora_slots"  # on the first denoiser: slot -> Held
_UNIT = "_aitk_lora_unit"  # on each LoRA layer: adapter -> its scale at multiplier 1
_DOWN = (".lora_A.weight", ".lora_down.weight", ".lora.down.weight", ".lora_A.default.weight")


def apply_to_slots(model, pipe, loras: list) -> bool:
    """Make the pipeline's LoRAs match ``loras`` (path, multiplier) through slots. False: today's path applies
    (no denoiser is or will be compiled, or the pipeline cannot hot-swap)."""
    main = [(r, model.parts.get(r)) for r, c in model.components.items() if c.source == "main"]
    denoisers = [m for _, m in main if m is not None]
    if not any(model.will_compile(r, m) or getattr(m, _RECORD, None) for r, m in main if m is not None):
        return False
    if not hasattr(pipe, "enable_lora_hotswap"):
        if loras:
            model.print_and_status_update(
                f"{model.arch}: its pipeline cannot hot-swap LoRAs, so each LoRA switch recompiles the denoiser",
                "loading",
            )
        return False
    Slots(model, pipe, denoisers).apply(loras)
    return True


def slot_rank(rank: int) -> int:
    """What a new slot for a file of ``rank`` is padded to."""
    return min(HOTSWAP_RANK, max(HOTSWAP_MIN_RANK, 1 << max(0, rank - 1).bit_length()))


def file_rank(path: str) -> int:
    """The highest LoRA rank in the file (rows of its down/A matrices), read from the header."""
    from toolkit.models.components.loading import safetensors_header

    header = safetensors_header(path)
    return max((v["shape"][0] for k, v in header.items() if k.endswith(_DOWN) and v.get("shape")), default=0)


def lora_layers(module) -> list:
    from peft.tuners.lora import LoraLayer

    modules = getattr(module, "modules", None)
    return [m for m in modules() if isinstance(m, LoraLayer)] if modules is not None else []


@dataclass
class Held:
    """What a slot holds: the file (its ``adapter_name`` id), how it was loaded, and its layers as named in it."""

    fid: str
    kwargs: dict
    name: str
    layers: list

    def fits(self, other: "Held") -> bool:
        return set(self.layers) <= set(other.layers)


class Slots:
    def __init__(self, model, pipe, denoisers: list):
        self.model, self.pipe, self.denoisers = model, pipe, denoisers
        self.record = vars(denoisers[0]).setdefault(_RECORD, {})

    def apply(self, loras: list) -> None:
        wanted = {adapter_name(path): (path, weight) for path, weight in loras}
        loaded = self.adapters()
        for slot in [s for s in self.record if s not in loaded]:
            del self.record[slot]
        # Per-file adapters (loaded while nothing was compiled), unrecorded slots, and slots that cannot hot-swap
        # once unused (an unpadded one would block padding the next slot) go; spare swappable slots stay.
        stale = [
            a for a in loaded if a not in self.record or (self.record[a].fid not in wanted and not self.swappable(a))
        ]
        if stale:
            self.pipe.delete_adapters(sorted(stale))
            for slot in stale:
                if slot in self.record:
                    self.model.print_and_status_update(
                        f"LoRA {self.record.pop(slot).name} left {slot}: it could not be hot-swapped, so the compiled "
                        f"denoiser recompiles{UNLESS}",
                        "loading",
                    )
        holding = {held.fid: slot for slot, held in self.record.items() if held.fid in wanted}
        for fid, (path, _) in wanted.items():
            if fid not in holding:
                held = Held(fid, self.model.lora_load_kwargs(path), os.path.basename(path), read_layers(path))
                holding[fid] = self.free(set(holding.values()), held)
                self.load(holding[fid], path, held)
        self.activate({slot: wanted[fid][1] for fid, slot in holding.items()})

    def adapters(self) -> set:
        return loaded_adapters(self.pipe)

    def free(self, taken: set, new: "Held") -> str:
        """A slot for a new file: a spare one, preferring one that took a file with the same load arguments (a
        family with two denoisers keeps each slot on one of them) whose layers include the new file's (a swap
        into a slot over other layers fails, and loses that slot); else a new one."""
        spare = [s for s in self.record if s not in taken]
        if spare:
            return min(
                spare, key=lambda s: (self.record[s].kwargs != new.kwargs, not new.fits(self.record[s]), _index(s))
            )
        used = self.adapters() | taken
        return next(f"{SLOT}{i}" for i in range(len(used) + 1) if f"{SLOT}{i}" not in used)

    def load(self, slot: str, path: str, held: "Held") -> None:
        name, arch, kwargs = held.name, self.model.arch, held.kwargs
        rank, reason = file_rank(path), None
        if rank > HOTSWAP_RANK:
            reason = f"its rank {rank} is over the hot-swap ceiling {HOTSWAP_RANK}"
        elif slot in self.adapters() and not self.swappable(slot):
            reason = f"{slot} held a LoRA that cannot be hot-swapped"
        elif slot in self.adapters() and rank > self.padded_rank(slot):
            reason = f"its rank {rank} is over the rank {self.padded_rank(slot)} {slot} was made for"
        elif slot in self.adapters():
            self.model.print_and_status_update(f"Loading {arch}: LoRA {name} (hot-swap into {slot})", "loading")
            try:
                message = self.hot_swap(slot, path, kwargs)
                self.record[slot] = held
                return self.model.print_and_status_update(message, "loading")
            except LoraMismatch:
                raise
            except Exception as e:
                from toolkit.device import is_oom

                if is_oom(e):
                    raise
                reason = f"it cannot be hot-swapped into {slot} ({type(e).__name__}: {str(e)[:120]}…)"
        self.remove(slot)
        self.model.print_and_status_update(f"Loading {arch}: LoRA {name}", "loading")
        padded = rank <= HOTSWAP_RANK and self.max_rank() <= HOTSWAP_RANK
        if not padded and reason is None:
            reason = f"a LoRA over rank {HOTSWAP_RANK} is loaded beside it"
        try:
            message = self.fresh(slot, path, kwargs, slot_rank(rank) if padded else 0)
        except LoraMismatch:
            if not padded:
                raise
            message = self.fresh(slot, path, kwargs, 0)  # if the padding failed; a true mismatch fails again
        self.record[slot] = held
        for layer in self.layers(slot, everywhere=True):
            vars(layer).setdefault(_UNIT, {})[slot] = float(layer.scaling[slot])
        swappable = self.swappable(slot)
        if reason is None and not swappable:
            reason = "it has text-encoder layers, which diffusers cannot hot-swap"
        later = f"later LoRAs of rank up to {self.padded_rank(slot)} on these layers hot-swap into it"
        if reason is not None:
            message += f" ({slot}; {reason}: loaded as a new adapter, so the compiled denoiser recompiles{UNLESS}"
            message += f"; {later})" if swappable else ")"
        else:
            message += f" ({slot}: {later})"
        self.model.print_and_status_update(message, "loading")

    def fresh(self, slot: str, path: str, kwargs: dict, padded: int) -> str:
        """Load the file as the new adapter ``slot``; ``padded``: the rank it is padded to for later hot-swaps into
        it (0: not prepared for them)."""
        try:
            if padded:  # diffusers pads the new slot and puts its scale in a tensor right after injecting it
                self.pipe.enable_lora_hotswap(target_rank=padded, check_compiled="ignore")
            return load_lora(self.pipe, path, slot, self.model.arch, **kwargs)
        finally:
            for module in self.denoisers:
                if "_prepare_lora_hotswap_kwargs" in vars(module):
                    module._prepare_lora_hotswap_kwargs = None  # a load that injected nothing must not pad later

    def hot_swap(self, slot: str, path: str, kwargs: dict) -> str:
        """Refill ``slot`` with the file's weights. A layout that places none of its keys leaves diffusers doing
        nothing at all, so each layer's scale is first set to NaN: the ones the swap rewrote are the layers it
        adapted. No layout adapting any is ``LoraMismatch`` with the slot as it was."""
        name, layers = os.path.basename(path), read_layers(path)
        tuned = self.layers(slot)
        shapes = [(t.lora_A[slot].weight.shape, t.lora_B[slot].weight.shape) for t in tuned]
        swapped = set()
        for source in sources(self.pipe, path):
            for t in tuned:
                t.scaling[slot].fill_(math.nan)
            with warnings.catch_warnings():
                warnings.filterwarnings("ignore", message="Already found a `peft_config` attribute")
                self.pipe.load_lora_weights(source, adapter_name=slot, hotswap=True, **kwargs)
            swapped = {id(t) for t in tuned if not math.isnan(float(t.scaling[slot]))}
            if swapped:
                break
        if not swapped:
            for t in tuned:
                t.scaling[slot].fill_(_unit(t, slot))
            raise no_match(name, layers, self.model.arch)
        if shapes != [(t.lora_A[slot].weight.shape, t.lora_B[slot].weight.shape) for t in tuned]:
            raise RuntimeError("its weights do not fit the slot's shapes")  # PEFT swapped tensors of other shapes
        for t in tuned:  # layers the new file lacks were zeroed by PEFT; their NaN scale must not reach a step
            vars(t).setdefault(_UNIT, {})[slot] = float(t.scaling[slot]) if id(t) in swapped else 0.0
            t.scaling[slot].fill_(_unit(t, slot))
        return (
            f"LoRA {name}: {len(layers)} layers in the file, {len(swapped)} adapted in {self.model.arch} "
            f"(hot-swapped into {slot}: the compiled denoiser is not recompiled)"
        )

    def swappable(self, slot: str) -> bool:
        """The slot lives only in the denoisers, padded (one rank on every layer) with its scale in a tensor."""
        import torch

        if any(slot in t.scaling for c in self.others() for t in lora_layers(c)):
            return False
        tuned = self.layers(slot)
        ranks = {t.lora_A[slot].weight.shape[0] for t in tuned}
        return bool(tuned) and len(ranks) == 1 and all(isinstance(t.scaling[slot], torch.Tensor) for t in tuned)

    def padded_rank(self, slot: str) -> int:
        return max((t.lora_A[slot].weight.shape[0] for t in self.layers(slot)), default=0)

    def max_rank(self) -> int:
        return max(
            (t.lora_A[a].weight.shape[0] for d in self.denoisers for t in lora_layers(d) for a in t.lora_A),
            default=0,
        )

    def remove(self, slot: str) -> None:
        """Delete the slot everywhere, including what a failed hot-swap left on layers diffusers missed."""
        if slot in self.adapters():
            self.pipe.delete_adapters([slot])
        for component in self.components():
            for t in lora_layers(component):
                if slot in t.lora_A:
                    t.delete_adapter(slot)
        self.record.pop(slot, None)

    def activate(self, weights: dict) -> None:
        """Every slot active on every layer, each at its multiplier (0: unused). Not ``set_adapters``: its
        ``set_scale`` puts a float where the slot's scale tensor was (a recompile), computed from the rank and
        alpha of the slot's first file, not the file swapped in."""
        slots = sorted((a for a in self.adapters() if a.startswith(SLOT)), key=_index)
        for component in self.components():
            for t in lora_layers(component):
                if list(t.active_adapters) != slots:
                    t.set_adapter(slots)
                for slot in slots:
                    if slot in t.scaling:
                        _scale(t, slot, weights.get(slot, 0.0))

    def layers(self, slot: str, everywhere: bool = False) -> list:
        modules = self.components() if everywhere else self.denoisers
        return [t for m in modules for t in lora_layers(m) if slot in t.scaling]

    def components(self) -> list:
        return [c for c in self.pipe.components.values() if hasattr(c, "modules")]

    def others(self) -> list:
        return [c for c in self.components() if all(c is not d for d in self.denoisers)]


def _scale(layer, slot: str, multiplier: float) -> None:
    import torch

    value = multiplier * _unit(layer, slot)
    if isinstance(layer.scaling[slot], torch.Tensor):
        layer.scaling[slot].fill_(value)  # in place: the compiled graph reads this tensor
    else:
        layer.scaling[slot] = value


def _unit(layer, slot: str) -> float:
    units = getattr(layer, _UNIT, {})
    return units[slot] if slot in units else layer.lora_alpha[slot] / layer.r[slot]


def _index(slot: str) -> int:
    return int(slot[len(SLOT) :])
