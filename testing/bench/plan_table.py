"""The plan the engine would choose for every family at its native size on a given card, from the published
component sizes (``testing/bench/real_configs`` PARAMS, bf16) and each component's largest tensor (its real
config built on the meta device): a prediction to check on the GPU, and the reason a family cannot run on a
card at all.

    .venv/bin/python testing/bench/plan_table.py --cards 24,16 --host-gb 64 --out docs/bench/plan_table.md

No weights are built or read: this runs anywhere in seconds. ``--host-gb`` is the machine's free RAM (offloaded
weights wait there in pinned memory), of which the engine leaves a reserve (``host_reserve_bytes``, counted as if
it were the machine's whole RAM); 64 GiB is a common size beside a 24 GB card.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
sys.path.insert(0, str(ROOT))


def real_parts(arch: str) -> list:
    """The family's components as the planner sees them (``BaseModel.memory_parts``), at their published bf16
    sizes instead of read from a checkpoint's headers."""
    from testing.bench.real_build import largest_parameters
    from testing.bench.real_configs import PARAMS
    from toolkit.memory_plan import Part
    from toolkit.models.memory_inputs import component_kind
    from toolkit.models.registry import get_model_class

    components = get_model_class(arch).components
    largest = largest_parameters(arch)
    return [
        Part(role, component_kind(role, components[role]), int(billions * 1e9 * 2), 2 * largest[role])
        for role, billions in PARAMS[arch].items()
    ]


def predicted(arch: str, card_gib: float, host_gib: float, qtype="float8dq") -> dict:
    from extensions_built_in.inference_engine.request_memory import plan_naming_what_fits, tiled_to_fit
    from toolkit.config_modules import GenerateImageConfig, ModelConfig
    from toolkit.memory_plan import GIB, PlanDoesNotFit, plan_memory
    from toolkit.models.components.pool import host_reserve_bytes, plannable_share
    from toolkit.models.registry import get_model_class

    model_class = get_model_class(arch)
    model = model_class("cuda", ModelConfig(name_or_path="unused", arch=arch))
    parts = real_parts(arch)
    native = {k: v for k, v in model_class.defaults.items() if k in GenerateImageConfig.__dataclass_fields__}
    gen = GenerateImageConfig(prompt="", **native)
    available = plannable_share(int(card_gib * GIB))  # what the engine counts on of a free card
    host = int(host_gib * GIB) - host_reserve_bytes(int(host_gib * GIB))  # as host_available_bytes counts it
    if qtype == "float8dq" and not model_class.float8_activations:  # as RequestMemory.qtype_for decides
        qtype = "float8"

    def plan_at(request, tile=None):
        work = model.workload(request, tile)
        return plan_memory(arch, parts, available, work, host, budget=int(card_gib * GIB), qtype=qtype)

    try:  # as the engine plans it, and as its message says what fits
        plan = plan_naming_what_fits(model, gen, lambda request: tiled_to_fit(model, request, plan_at))
        return {"fits": True, "summary": plan.summary(), "peak_gib": round(plan.peak / GIB, 1)}
    except PlanDoesNotFit as e:
        return {"fits": False, "summary": str(e), "peak_gib": round(e.smallest.peak / GIB, 1)}


def table(cards: list, host_gib: float) -> str:
    from testing.bench.real_configs import PARAMS
    from toolkit.models.registry import ARCHS

    head = "| arch | weights GiB (bf16) | " + " | ".join(f"{c:g} GiB card: predicted plan" for c in cards) + " |"
    lines = [head, "|---" * (2 + len(cards)) + "|"]
    for arch in ARCHS:
        weights = sum(PARAMS[arch].values()) * 2e9 / 1024**3
        cells = []
        for card in cards:
            p = predicted(arch, card, host_gib)
            cells.append(
                f"{p['summary']} (peak {p['peak_gib']} GiB)" if p["fits"] else f"**cannot run**: {p['summary']}"
            )
        lines.append(f"| {arch} | {weights:.1f} | " + " | ".join(cells) + " |")
    return (
        "\n".join(lines)
        + f"\n\nHost RAM assumed free: {host_gib:g} GiB. 8-bit is what ``engine.memory_qtype: auto`` picks on Ada, "
        "Hopper and later: float8 weights and activations for image denoisers (float8dq), float8 weights for video "
        "denoisers, HiDream's and encoders. "
        "Working sets: each family's ``working_set`` (fitted on the H200 runs).\n"
    )


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--cards", default="24,16", help="GiB, comma-separated")
    parser.add_argument("--host-gb", type=float, default=64)
    parser.add_argument("--out")
    args = parser.parse_args(argv)
    text = table([float(c) for c in args.cards.split(",")], args.host_gb)
    if args.out:
        Path(args.out).write_text(text)
    print(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
