"""The memory plan: where each component of a model lives while it generates, decided before anything loads,
from the components' sizes and the memory free *now* (a training job may share the card).

Placements, cheapest first:

``gpu``        resident on the GPU.
``visit``      in pinned host memory, on the GPU only while it runs (model CPU offload,
               ``toolkit/models/offload.py``): costs one host-to-device copy per request.
``quantized``  weight-only 8-bit through torchao (float8 where the GPU has float8, int8 before): about half the
               bytes, resident; every eager step is slower (1.4-1.6x for Flux: docs/BENCHMARKS.md "Memory plan").
``stream``     blocks stream to the GPU on a side CUDA stream as they run (``toolkit/models/streaming.py``;
               encoders: diffusers group offloading); every step moves the whole component (2.7x for Flux at
               1024², docs/BENCHMARKS.md "Memory plan"; nothing for the long videos: ``part_cost``), except
               the blocks of a denoiser that the room the plan leaves keeps (``kept_shares``).

Peak = what stays resident (``gpu``, ``quantized``) + the one component running now (its bytes if it visits, a
window of it if it streams) + that phase's working set (activations; a VAE decode's grows with pixels unless
tiled). The plan is the cheapest assignment whose every phase fits, and whose visiting and streamed weights fit
in host RAM. The numbers behind the costs are measured ones; the working sets are estimates that the engine
corrects by re-planning with a larger reserve when a generation runs out of memory anyway.

Torch-free: the engine and the tests call it with plain numbers.
"""

from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Optional

from toolkit.memory_quality import choose

GIB = 1024**3
QUANTIZED = ("quantized", "quantized_visit", "quantized_stream")
OFF_GPU = ("visit", "quantized_visit", "stream", "quantized_stream")  # what waits in host RAM between uses
# What a text encoder or decoder gets when a plan quantizes with an activation-quantizing type: encoders run once
# per request (their speed hardly matters) and language models' activations have outliers that per-row float8
# activations would clip, so they keep 16-bit activations.
WEIGHT_ONLY = {"float8dq": "float8"}
# 8-bit bytes over 16-bit ones, by kind. Measured from the real-size runs' pool entries (docs/MEASURED.md
# "8-bit component sizes"): denoisers 0.500-0.503 (eight families: nearly all linear layers, which 8 bits halve), whose
# 0.53 also covers part of their 8-bit transients (Wan 2.2 14B I2V's visiting experts: test_memory_plan.py);
# encoders 0.528 (Mistral) and 0.542 (Gemma 3), which keep their embedding tables in 16 bits, above the 0.53 they were
# counted at.
QUANTIZED_RATIO = {"denoiser": 0.53, "encoder": 0.545, "decoder": 0.545}
STREAM_WINDOW = 0.1  # share of a streamed component on the GPU at once (a block running, the next arriving)
# A denoiser streams block by block, an encoder leaf module by leaf module (toolkit/models/components/loading.py): an
# encoder's largest leaf (a 152k-token embedding table: 1.1 GB for Qwen2.5-VL) may be more than the share.
# Relative cost per placement (a denoiser runs every step, an encoder once per request), plus a small cost per
# GiB moved per request so that, between two plans of one shape, the one moving fewer bytes wins.
COST = {
    "denoiser": {
        "gpu": 0.0,
        "visit": 1.0,
        "quantized": 8.0,
        "quantized_visit": 15.0,  # set under the old flat stream cost (20); not fitted to a measurement yet
        # A streamed denoiser's least cost (its blocks' hooks run every step): what its copies cost on top
        # depends on the request's size (part_cost).
        "stream": 1.5,
        "quantized_stream": 8.5,
    },
    "encoder": {
        "gpu": 0.0,
        "visit": 0.5,
        "quantized": 2.0,
        "quantized_visit": 2.8,
        "stream": 3.0,
        "quantized_stream": 3.2,
    },
    "decoder": {"gpu": 0.0, "visit": 0.2},  # VAEs and vocoders are small; 8-bit would cost quality for nothing
}
MOVE_COST_PER_GIB = 0.01
# A streamed denoiser's step pays for the part of its copies that its compute does not hide, and the compute
# grows with the request's tokens. Measured by testing/bench/stream_bench.py (docs/BENCHMARKS.md "Memory plan"): Flux
# at 1024² (4096 tokens) streamed whole ran at 2.66x its resident step, half kept 1.67x, three quarters kept 1.30x;
# HunyuanVideo at 1280x720x129 (116k tokens) and Wan 2.2 14B at 1280x720x81 (73k) streamed whole at 1.00x and
# 1.03x. Fit: a step slows by max(0, STREAM_COPY x share copied x REF_TOKENS / tokens - STREAM_HIDDEN) (Flux:
# 2.65x, 1.73x, 1.27x; the videos 1.00x). COST's other denoiser entries shrink with REF_TOKENS / tokens as a
# whole (8-bit weights: 0.6 of a step for Flux and HiDream, 0.07 for Wan 2.1 I2V at 32k tokens, 1.07x), so
# against them a stream costs STEP_COST per step of slowdown at REF_TOKENS: COST's 8 for 8-bit is its 0.6.
# An 8-bit encoder streams block by block (toolkit/models/streaming.py) with what lies outside its blocks on the
# GPU for the call: its embedding table and LM head, its largest tensors. Its float8 weights are dequantized per
# call through float32, the head's at 3x its 16-bit size. FLUX.2-dev's Mistral on a 24 GiB budget needed
# ~6.5 GiB beside the transformer's kept blocks where the window and two largest tensors had 3.0 (it ran out of
# memory in torchao's _dequantize_affine_float8): the window plus three largest tensors (6.1) and the encode
# working set (0.5) cover it (docs/MEASURED.md "A streamed 8-bit encoder's head dequantized through float32").
ENCODER_STREAM_LARGEST = 3
REF_TOKENS = 4096
STREAM_COPY = 1.84
STREAM_HIDDEN = 0.19
STEP_COST = 12.0
# The copy term's machine: the pinned host-to-device bandwidth, in GB/s, of the machine STREAM_COPY was fitted on
# (measured by testing/bench/pinned_probe.py; docs/BENCHMARKS.md "Memory plan"). Where copies are slower the term grows
# by the ratio (``copy_scale``: the engine measures its own link, toolkit/h2d_probe.py).
STREAM_COPY_GBPS = 55.2
# What a plan leaves unused before a streamed denoiser keeps blocks on the GPU: the working sets are estimates
# that a real request can exceed, and a kept block is cheap to give back, an out-of-memory mid-step is not.
KEEP_MARGIN = 0.05
STREAMED = ("stream", "quantized_stream")
# The phases each engine stage runs: ``encoding`` lasts until the first step is done.
STAGE_KINDS = {"encoding": ("encoder", "denoiser"), "sampling": ("denoiser",), "decoding": ("decoder",)}
TILING_COST = 0.3


@dataclass(frozen=True)
class Part:
    """One weighted component: ``kind`` is ``denoiser``, ``encoder`` (text/image encoders) or ``decoder``."""

    role: str
    kind: str
    bytes: int
    largest: int = 0  # the largest single tensor: what streaming holds at least twice (running, arriving)
    # Bytes an 8-bit placement leaves at 16 bits: torchao quantizes nn.Linear weights only, and a mixture-of-experts
    # denoiser keeps its experts as fused 3-D parameters (Nucleus-Image: most of its 17B).
    unquantized: int = 0


@dataclass(frozen=True)
class WorkingSet:
    """How a family's pipeline allocates beside its weights, per unit of request size: what ``BaseModel.workload``
    scales by. Fitted on real-size runs on the GPU machine with every weight resident (each stage's peak allocation
    minus the weights: ``testing/bench/family_sweep.py``; testing/test_working_sets.py), with ~15 % margin. The defaults
    cover every image DiT measured (sampling 0.45-0.81 GiB at 1024², decoding ~2.4 GiB); a family outside them
    says so in its file, with its numbers. Positions are the family's ``LatentSpec``'s (VAE latent pixels times
    latent frames), not the transformer's patch tokens."""

    per_position: int = 40 * 1024  # sampling: bytes per latent position, beside a 0.25 GiB base
    per_pixel: int = 2560  # decoding without tiles: bytes per output pixel of each frame held, beside 0.4 GiB
    frames_at_once: int = 1  # video: frames an untiled decode holds at once (causal VAEs: a few; 0: the whole clip)
    encode: int = GIB // 2  # while the encoders run: the prompt, and for editing families their control images
    # Image-to-video: the VAE encodes the conditioning clip (the image, then blank frames) while an encoder that
    # visited may still be on the GPU: bytes per pixel of a frame, beside 0.4 GiB, tiled like the decode. Wan 2.2
    # 14B I2V at 1280x720 ran out of memory there on a 16 GiB budget with 0.5 GiB counted (docs/MEASURED.md
    # "Image-to-video encoding of the conditioning clip").
    per_pixel_encode: int = 0
    patch: int = 2  # latent positions per token side: 1 where the denoiser does not pack 2x2 (LTX, LTX-2, HyV 1.5)
    tile: int = 0  # a tiled decode's tile side in output pixels; 0: 512 for images, 256 for video (vae_tiling.py)
    # Audio: bytes per second of waveform decoded, beside 0.4 GiB. The Oobleck VAEs of Stable Audio and ACE-Step
    # measured 2.98 GiB for a 47.5 s window and 2.09 GiB for 30 s over their weights (docs/MEASURED.md
    # "Audio decodes by seconds of waveform"): ~60 MiB/s, +15 %.
    per_second: int = 70 * 1024**2

    def encoding(self, pixels: int, tile_area: int) -> tuple:
        """``Workload.encode`` and ``encode_tiled`` for frames of ``pixels`` (None: tiling changes nothing)."""
        if not self.per_pixel_encode:
            return self.encode, None
        sizes = (pixels, min(pixels, tile_area))
        return tuple(max(self.encode, int(0.4 * GIB + px * self.per_pixel_encode)) for px in sizes)


@dataclass(frozen=True)
class Workload:
    """Working sets beside the weights, from the request's size (``BaseModel.workload``)."""

    denoise: int
    decode: int
    decode_tiled: int
    encode: int = GIB // 2
    tokens: int = 0  # the denoiser's tokens per step; 0: unknown, planned as REF_TOKENS
    tile: int = 0  # decode_tiled's tile side where smaller than the family's own (vae_tiling.smaller_tiles); 0: own
    encode_tiled: Optional[int] = None  # ``encode`` under a tiling VAE, where its encode is part of it; None: same


@dataclass
class Plan:
    placements: dict  # role -> placement
    vae_tiling: bool
    peak: int
    available: int
    parts: tuple = field(default=(), repr=False)
    qtype: Optional[str] = None
    source: str = "auto"  # "auto": planned; "options": the user's explicit options; "default": neither (off, CPU)
    work: Optional[Workload] = field(default=None, repr=False)  # the working sets it was planned with
    kept: dict = field(default_factory=dict)  # role -> bytes of a streamed denoiser that stay on the GPU
    copy_scale: float = 1.0  # this machine's stream copy cost over the fit's (``stream_slowdown``)
    why: Optional[str] = None  # why its bits: what engine.memory_quality weighed (toolkit/memory_quality.py)
    replanned: Optional[str] = None  # why the engine planned again rather than keep the loaded placements

    @property
    def workload(self) -> Workload:
        """The working sets it was planned with; none for a plan that is the user's options."""
        return self.work or Workload(0, 0, 0, 0)

    @property
    def cost(self) -> float:
        return plan_cost(self.parts, self.placements, self.vae_tiling, self.kept, self.workload.tokens, self.copy_scale)

    @property
    def step_cost(self) -> float:
        """A resident step in COST's units at the request's tokens: what a plan's cost adds to (its predicted
        step), so that two plans' speeds compare (``toolkit/memory_quality.py``)."""
        return STEP_COST * (self.workload.tokens or REF_TOKENS) / REF_TOKENS

    def work_of(self, stage: str) -> int:
        """The working set planned for the engine's stage: the largest of its phases' (``STAGE_KINDS``)."""
        return max(_work(kind, self.workload, self.vae_tiling) for kind in STAGE_KINDS.get(stage, COST))

    def peak_of(self, stage: str) -> int:
        """The peak predicted for the engine's stage: what stays resident plus its largest phase."""
        work = self.workload
        kinds = STAGE_KINDS.get(stage, COST)
        phases = [running_bytes(p, self.placements[p.role]) + _work(p.kind, work, self.vae_tiling) for p in self.parts]
        running = [peak for peak, p in zip(phases, self.parts) if p.kind in kinds]
        resident = sum(resident_bytes(p, self.placements[p.role]) for p in self.parts) + sum(self.kept.values())
        return resident + max(running, default=0)

    @property
    def vae_tile(self) -> Optional[int]:
        """The tile side a tiled decode must use, where the plan counted one smaller than the family's own."""
        return self.workload.tile or None if self.vae_tiling else None

    def qtype_for(self, role: str) -> Optional[str]:
        """The 8-bit type of a quantized role: the plan's own for the denoiser, its weight-only kind for the rest."""
        kind = next((p.kind for p in self.parts if p.role == role), "denoiser")
        return self.qtype if kind == "denoiser" else WEIGHT_ONLY.get(self.qtype, self.qtype)

    def summary(self) -> str:
        how = {"gpu": "on the GPU", "visit": "visit the GPU", "stream": "stream to the GPU as they run"}
        groups: dict = {}
        for role, placement in self.placements.items():
            word = how.get(placement)
            if word is None:  # quantized, quantized_visit, quantized_stream
                word = f"{self.qtype_for(role) or '8-bit'} {how[placement.partition('_')[2] or 'gpu']}"
            groups.setdefault(word, []).append(role)
        text = "; ".join(f"{', '.join(roles)} {word}" for word, roles in groups.items())
        text += "".join(f"; {_gib(kept)} GiB of {role} kept on the GPU" for role, kept in self.kept.items())
        text += "".join(f"; {role}'s step ~{x:.2f}x resident" for role, x in self.stream_slowdowns().items())
        tiles = f" in {self.vae_tile} px tiles" if self.vae_tile else ""
        return text + (f"; VAE tiled{tiles}" if self.vae_tiling else "")

    def message(self) -> str:
        """The status frame's line: the plan, then why it was planned again and why its bits, where they apply."""
        return ". ".join(text for text in (f"Memory plan: {self.summary()}", self.replanned, self.why) if text)

    def stream_slowdowns(self) -> dict:
        """Role -> predicted step over the resident step, for the streamed denoisers (``stream_slowdown``)."""
        tokens, scale = self.workload.tokens, self.copy_scale
        return {
            p.role: round(stream_slowdown(p, self.placements[p.role], self.kept.get(p.role, 0), tokens, scale), 2)
            for p in self.parts
            if p.kind == "denoiser" and self.placements.get(p.role) in STREAMED
        }

    def describe(self) -> dict:
        sizes = {p.role: p.bytes for p in self.parts}
        slowdowns = self.stream_slowdowns()
        return {
            "source": self.source,
            "summary": self.summary(),
            "vae_tiling": self.vae_tiling,
            "vae_tile": self.vae_tile,
            "qtype": self.qtype,
            "peak_gib": _gib(self.peak),
            "available_gib": _gib(self.available),
            "quality": self.why,
            "replanned": self.replanned,
            "components": {
                role: {"placement": placement, "gib": _gib(sizes.get(role, 0))}
                | ({"kept_gib": _gib(self.kept[role])} if role in self.kept else {})
                | ({"step_slowdown": slowdowns[role]} if role in slowdowns else {})
                for role, placement in self.placements.items()
            },
        }


SMALLER_REQUEST = "fewer pixels or frames need less"


class PlanDoesNotFit(Exception):
    """No assignment fits: says how much the smallest plan needs, and what it is."""

    def __init__(
        self, arch: str, smallest: Plan, budget: Optional[int], host_needed: int, host_available: int, work: int = 0
    ):
        self.smallest = smallest
        limit = f"a {_gib(budget)} GiB budget (engine.vram_budget_gb)" if budget else "this GPU"
        host = ""
        if host_needed > host_available:
            host = (
                f", and {_gib(host_needed)} GiB of host RAM to hold what it offloads ({_gib(host_available)} GiB free)"
            )
        # Video working sets dwarf some models' weights (HunyuanVideo at 1280x720x129: 12 GiB to sample): a user
        # on a small card can often run the model at a smaller size, and should be told so.
        self.size_matters = work * 4 >= smallest.peak and not host
        self._message = (
            f"{arch} does not fit {limit}: {_gib(smallest.available)} GiB is free for it now; its smallest plan "
            f"({smallest.summary()}) needs {_gib(smallest.peak)} GiB of GPU memory"
            + (f" ({_gib(work)} GiB of it for this request's size: {{what_fits}})" if self.size_matters else "")
            + host
        )
        super().__init__(self._message.replace("{what_fits}", SMALLER_REQUEST))

    def suggest(self, what_fits: str) -> None:
        """Name the smaller requests that do fit (the engine knows the request; the plan only its working sets)."""
        self.args = (self._message.replace("{what_fits}", what_fits),)


def _gib(n: Optional[int]) -> Optional[float]:
    return None if n is None else round(n / GIB, 2)


def resident_bytes(part: Part, placement: str) -> int:
    if placement == "gpu":
        return part.bytes
    if placement == "quantized":
        return _quantized_bytes(part)
    return 0


def running_bytes(part: Part, placement: str) -> int:
    """What this part adds on the GPU while it runs, beyond what stays resident. An 8-bit part also holds 16-bit
    transients the full card's measured working sets never saw: float8 weights only are dequantized per layer
    call, float8 activations quantized per call. Counted as two of its largest tensor: at 24 GiB,
    Wan 2.2 14B I2V's experts visiting in float8 needed 23.54 GiB against a plan of 23.3 (its bf16 working set
    measured on the full card, 8.2 GiB, was covered; testing/test_memory_plan.py::
    test_an_8_bit_plan_counts_its_16_bit_transients), and LTX-2's float8 visitors needed more than streaming."""
    if placement == "visit":
        return part.bytes
    if placement == "quantized":
        return 2 * part.largest
    if placement == "quantized_visit":
        return _quantized_bytes(part) + 2 * part.largest
    if placement == "stream":
        return max(int(part.bytes * STREAM_WINDOW), 2 * part.largest)
    if placement == "quantized_stream":
        window = int(_quantized_bytes(part) * STREAM_WINDOW)
        if part.kind == "encoder":
            return window + ENCODER_STREAM_LARGEST * part.largest
        return max(window, 2 * part.largest)
    return 0


def peak_bytes(parts: tuple, placements: dict, work: Workload, vae_tiling: bool, kept: Optional[dict] = None) -> int:
    resident = sum(resident_bytes(p, placements[p.role]) for p in parts) + sum((kept or {}).values())
    phases = [running_bytes(p, placements[p.role]) + _work(p.kind, work, vae_tiling) for p in parts]
    return resident + max(phases, default=0)


def _work(kind: str, work: Workload, vae_tiling: bool) -> int:
    if kind == "denoiser":
        return work.denoise
    if kind == "decoder":
        return work.decode_tiled if vae_tiling else work.decode
    return work.encode_tiled if vae_tiling and work.encode_tiled is not None else work.encode


def host_bytes(parts: tuple, placements: dict) -> int:
    """Pinned host memory the plan needs: every visiting and streamed component has its copy there."""
    return sum(_held_bytes(p, placements[p.role]) for p in parts if placements[p.role] in OFF_GPU)


def _held_bytes(part: Part, placement: str) -> int:
    return _quantized_bytes(part) if placement in QUANTIZED else part.bytes


def _quantized_bytes(part: Part) -> int:
    return int((part.bytes - part.unquantized) * QUANTIZED_RATIO[part.kind]) + part.unquantized


def plan_cost(
    parts: tuple, placements: dict, vae_tiling: bool, kept: Optional[dict] = None, tokens: int = 0, scale: float = 1.0
) -> float:
    cost = sum(part_cost(p, placements[p.role], (kept or {}).get(p.role, 0), tokens, scale) for p in parts)
    moved = sum(_held_bytes(p, placements[p.role]) for p in parts if placements[p.role] in OFF_GPU)
    return cost + MOVE_COST_PER_GIB * moved / GIB + (TILING_COST if vae_tiling else 0.0)


def part_cost(part: Part, placement: str, kept: int = 0, tokens: int = 0, scale: float = 1.0) -> float:
    """COST, plus for a streamed denoiser the copies its step cannot hide (``stream_slowdown``). COST's entries
    are per step at REF_TOKENS and shrink with the step's compute as a whole, so the slowdown counts in those
    units scaled by tokens / REF_TOKENS."""
    return COST[part.kind][placement] + _stream_cost(part, placement, kept, tokens, scale)


def _stream_cost(part: Part, placement: str, kept: int, tokens: int, scale: float = 1.0) -> float:
    slowdown = stream_slowdown(part, placement, kept, tokens, scale)
    return STEP_COST * (slowdown - 1.0) * (tokens or REF_TOKENS) / REF_TOKENS


def stream_slowdown(part: Part, placement: str, kept: int = 0, tokens: int = 0, scale: float = 1.0) -> float:
    """A streamed denoiser's step over its resident step, as fitted above: less the more of it stays on the GPU
    and the longer its step computes, more where this machine's copies are slower (``scale``: its copy term over
    the fit's). 1.0 for anything else."""
    return 1.0 + max(0.0, scale * _copy_term(part, placement, kept, tokens) - STREAM_HIDDEN)


def _copy_term(part: Part, placement: str, kept: int, tokens: int) -> float:
    """The fit's copy term: the step share its copies would take, before the compute hides any."""
    if part.kind != "denoiser" or placement not in STREAMED:
        return 0.0
    copied = max(0.0, 1.0 - kept / _held_bytes(part, placement))
    copied *= QUANTIZED_RATIO[part.kind] if placement == "quantized_stream" else 1.0
    return STREAM_COPY * copied * REF_TOKENS / (tokens or REF_TOKENS)


def copy_scale_for(part: Part, placement: str, kept: int, tokens: int, measured: float) -> Optional[float]:
    """The copy scale at which ``stream_slowdown`` predicts the ``measured`` step; None where nothing streams."""
    term = _copy_term(part, placement, kept, tokens)
    return (measured - 1.0 + STREAM_HIDDEN) / term if term > 0 else None


def candidates(parts: tuple, can_quantize: bool, can_stream: bool, quantize_denoiser: bool = False) -> list:
    """Per part, the placements it may take."""
    return [
        [
            c
            for c in COST[p.kind]
            if (can_quantize or c not in QUANTIZED)
            and (can_stream or "stream" not in c)
            and (not quantize_denoiser or p.kind != "denoiser" or c in QUANTIZED)
        ]
        for p in parts
    ]


@dataclass(frozen=True)
class _Option:
    """One part in one placement, with what the search adds up: computed once per plan, not per combination
    (HiDream's six weighted parts make 31k combinations; summing them part by part from scratch took 1.1 s per
    request on the GPU machine's CPU, twice: the start frame's prediction, then the plan)."""

    part: Part
    placement: str
    resident: int
    phases: tuple  # what it adds while it runs, working set included: (VAE untiled, tiled)
    held: int  # bytes waiting in host RAM (also the bytes it moves per request)
    cost: float  # COST's entry; a streamed denoiser's copies are priced once its kept share is known
    streamed: bool  # a streamed denoiser: it keeps what the plan leaves room for
    eight_bit: bool  # a quantized placement: what ``engine.memory_quality`` weighs


def _options(part: Part, placements: list, work: Workload) -> list:
    return [
        _Option(
            part,
            c,
            resident_bytes(part, c),
            tuple(running_bytes(part, c) + _work(part.kind, work, tiled) for tiled in (False, True)),
            _held_bytes(part, c) if c in OFF_GPU else 0,
            COST[part.kind][c],
            part.kind == "denoiser" and c in STREAMED,
            c in QUANTIZED,
        )
        for c in placements
    ]


def plan_memory(
    arch: str,
    parts: list,
    available: int,
    work: Workload,
    host_available: int,
    budget: Optional[int] = None,
    qtype: Optional[str] = "float8",
    can_stream: bool = True,
    quantize_denoiser: bool = False,
    only: Optional[dict] = None,
    quality: str = "fast",
    quality_db: Optional[float] = None,
    copy_scale: float = 1.0,
) -> Plan:
    """The cheapest plan that fits ``available`` GPU bytes and ``host_available`` host bytes; ``qtype`` None
    when 8-bit weights are not possible here (no torchao). ``quantize_denoiser``: the request asked for an 8-bit
    denoiser (the ``fp8`` speed tier), so only its quantized placements are candidates. ``only``: role ->
    placement, the candidates where still allowed (a resident plan's, kept while it fits). ``quality``: whether
    the cheapest plan may have 8-bit weights where a lossless one fits (``toolkit/memory_quality.py``; the
    family's 8-bit PSNR is ``quality_db``). ``copy_scale``: this machine's stream copy cost over the fit's.
    Raises :class:`PlanDoesNotFit`."""
    parts = tuple(parts)
    allowed = candidates(parts, qtype is not None, can_stream, quantize_denoiser)
    if only:
        allowed = [[only[p.role]] if only.get(p.role) in found else found for p, found in zip(parts, allowed)]
    options = [_options(p, placements, work) for p, placements in zip(parts, allowed)]
    best = smallest = lossless = None  # (cost, peak, combo, tiling, kept) of each
    for combo in itertools.product(*options):
        resident = sum(o.resident for o in combo)
        held = sum(o.held for o in combo)
        base = sum(o.cost for o in combo) + MOVE_COST_PER_GIB * held / GIB
        streamed = [o for o in combo if o.streamed]
        for tiling in (False, True):
            peak = resident + max((o.phases[tiling] for o in combo), default=0)
            fits = peak <= available and held <= host_available
            if not fits and smallest is not None and peak > smallest[1]:
                continue  # neither the best nor the smallest
            kept = _kept(streamed, peak, available)
            cost = base + (TILING_COST if tiling else 0.0)
            cost += sum(
                _stream_cost(o.part, o.placement, kept.get(o.part.role, 0), work.tokens, copy_scale) for o in streamed
            )
            if smallest is None or (peak, cost) < (smallest[1], smallest[0]):
                smallest = (cost, peak, combo, tiling, kept)
            if fits and (best is None or cost < best[0]):
                best = (cost, peak, combo, tiling, kept)
            if fits and (lossless is None or cost < lossless[0]) and not any(o.eight_bit for o in combo):
                lossless = (cost, peak, combo, tiling, kept)
    if best is None:
        plan = _plan(smallest, available, parts, qtype, work, copy_scale)
        raise PlanDoesNotFit(
            arch,
            plan,
            budget,
            sum(o.held for o in smallest[2]),
            host_available,
            work=max(work.denoise, work.decode_tiled if plan.vae_tiling else work.decode),
        )
    fastest, plain = (_plan(f, available, parts, qtype, work, copy_scale) for f in (best, lossless or best))
    plan = fastest if quantize_denoiser else choose(quality, fastest, plain if lossless else None, arch, quality_db)
    plan.peak += sum(plan.kept.values())
    return plan


def _plan(found: tuple, available: int, parts: tuple, qtype: Optional[str], work: Workload, scale: float) -> Plan:
    _, peak, combo, tiling, kept = found
    placements = {o.part.role: o.placement for o in combo}
    quantized = any(placement in QUANTIZED for placement in placements.values())
    q = qtype if quantized else None
    return Plan(placements, tiling, peak, available, parts, q, work=work, kept=kept, copy_scale=scale)


def _kept(streamed: list, peak: int, available: int) -> dict:
    """``kept_shares`` for the search's options."""
    parts = tuple(o.part for o in streamed)
    return kept_shares(parts, {o.part.role: o.placement for o in streamed}, peak, available) if streamed else {}


def kept_shares(parts: tuple, placements: dict, peak: int, available: int) -> dict:
    """A streamed denoiser moves all of itself through PCIe every step; of the room a plan leaves (less a
    margin), the streamed denoisers (Wan 2.2 14B has two) take equal shares and keep that much of themselves on
    the GPU for good, so only the rest streams (``BlockStream.keep``). Role -> bytes kept; ``peak`` is the
    plan's without them."""
    streamed = [p for p in parts if p.kind == "denoiser" and placements[p.role] in STREAMED]
    spare = available - peak - max(GIB, int(available * KEEP_MARGIN))
    kept = {}
    for p in streamed if spare > 0 else ():
        placement = placements[p.role]
        # a share of this part's bytes as it waits on the host (8-bit: its payload), never all of it
        share = min(spare // len(streamed), _held_bytes(p, placement) - running_bytes(p, placement))
        if share > 0:
            kept[p.role] = share
    return kept
