"""``engine.memory_quality``: whether a memory plan may trade weight bits for speed, and the words that say so.

The memory plan's search (``toolkit/memory_plan.py``) finds the cheapest plan that fits and the cheapest lossless
one (no 8-bit weights). Which of the two runs is the user's call:

``lossless``  16-bit weights, however slow (streaming); 8 bits only where nothing lossless fits.
``balanced``  8 bits only where the plan's own cost model makes them more than ``MIN_SPEEDUP`` faster than the best
              lossless plan, and the family's measured 8-bit quality holds (``BaseModel.quality_8bit_db``: PSNR
              of its 8-bit output against bf16, at least ``MIN_DB``; not measured: lossless).
``fast``      the cheapest plan.

Each chosen plan says why in ``Plan.why`` (the start frame, a status frame, ``/health``). Torch-free.
"""

from __future__ import annotations

from typing import Optional

QUALITIES = ("lossless", "balanced", "fast")
MIN_DB = 35.0
MIN_SPEEDUP = 1.2
HOW = {"gpu": "resident", "visit": "visiting", "stream": "streamed"}


def choose(quality: str, fastest, lossless, arch: str, db: Optional[float]):
    """``fastest`` (the cheapest plan) or ``lossless`` (the cheapest without 8 bits; None: none fits), with
    ``why`` set where the two differ."""
    if quality not in QUALITIES:
        raise ValueError(f"engine.memory_quality must be one of {', '.join(QUALITIES)} (got {quality!r})")
    if lossless is None:
        fastest.why = f"{quality}: 8 bits, since no lossless plan fits"
        return fastest
    if fastest.qtype is None:  # the cheapest plan is lossless itself
        return fastest
    faster = speedup(fastest, lossless)
    versus = f"{faster:.2f}x faster than the best lossless plan ({brief(lossless)})"
    refused = refusal(quality, faster, arch, db)
    if refused is None:
        quality_text = f", 8-bit quality {db:g} dB ≥ {MIN_DB:g}" if quality == "balanced" else ""
        fastest.why = f"{quality}: {brief(fastest)}, {versus}{quality_text}"
        return fastest
    but = f", but {refused}" if refused else ""
    lossless.why = f"{quality}: 16-bit weights; 8 bits ({brief(fastest)}) would be {faster:.2f}x faster{but}"
    return lossless


def refusal(quality: str, faster: float, arch: str, db: Optional[float]) -> Optional[str]:
    """Why ``quality`` keeps the lossless plan against an 8-bit one ``faster`` times as fast ("": it always
    does); None: it does not."""
    if quality == "fast":
        return None
    if quality == "lossless":
        return ""
    if faster <= MIN_SPEEDUP:
        return f"balanced takes 8 bits only above {MIN_SPEEDUP:g}x"
    if db is None:
        return f"{arch}'s 8-bit quality is not measured"
    if db < MIN_DB:
        return f"{arch}'s 8-bit quality is {db:g} dB < {MIN_DB:g}"
    return None


def speedup(plan, than) -> float:
    """How many times faster ``plan`` runs than ``than`` by the plan's cost model: a resident step plus each
    plan's cost, in COST's units (``Plan.step_cost``)."""
    return (than.step_cost + than.cost) / (plan.step_cost + plan.cost)


def brief(plan) -> str:
    """Where a plan puts what is not simply resident, in a few words without commas (the A1111 ``parameters``
    text embeds it): "float8 transformer resident; text_encoder_2 streamed with 4.1 GiB kept"."""
    words = []
    for role, placement in plan.placements.items():
        eight_bit = placement.startswith("quantized")
        where = (placement.partition("_")[2] or "gpu") if eight_bit else placement
        if placement == "gpu":
            continue
        qtype = f"{plan.qtype_for(role) or '8-bit'} " if eight_bit else ""
        kept = plan.kept.get(role)
        words.append(f"{qtype}{role} {HOW[where]}" + (f" with {kept / 1024**3:.1f} GiB kept" if kept else ""))
    return "; ".join(words) or "everything resident"


def file_note(plan) -> Optional[str]:
    """What a result file's settings say of its memory plan: where it ran 8-bit or streamed weights (both change
    the step's arithmetic or speed; a visit changes neither). None otherwise."""
    if plan is None or not any(p.startswith("quantized") or p == "stream" for p in plan.placements.values()):
        return None
    return brief(plan)
