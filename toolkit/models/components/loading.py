"""The single load funnel: every component of every family is loaded by ``load_component``.

One funnel means one place that resolves sources (hub id, local diffusers folder or one of its subfolders, a
single ``.safetensors`` file with a config source, ``tiny:<arch>``), honours dtype, and, later, one place where
the component pool decides hit or miss from exactly the arguments given here.
"""

from __future__ import annotations

import importlib
import json
import os
import threading
from dataclasses import dataclass
from typing import Any, Callable, Optional

from toolkit.models.components.hub import config_source_of, fetch_component, folder_files, uses_variant
from toolkit.models.components.library_logs import quiet_library_logs
from toolkit.models.components.pool import ComponentKey, current_pool
from toolkit.models.components.sources import source_kind

DTYPES = {
    "float16": "float16",
    "fp16": "float16",
    "half": "float16",
    "bfloat16": "bfloat16",
    "bf16": "bfloat16",
    "float32": "float32",
    "fp32": "float32",
    "float": "float32",
}


def torch_dtype(name: Optional[str]):
    import torch

    if name is None:
        return None
    if name not in DTYPES:
        raise ValueError(f"dtype {name!r} is not one of {sorted(DTYPES)}")
    return getattr(torch, DTYPES[name])


def import_class(path: str):
    """``"diffusers.AutoencoderKL"`` -> the class; arch files name classes by string so that importing the
    registry does not import diffusers (the server and ``/models`` stay cheap)."""
    quiet_library_logs()
    module, _, name = path.rpartition(".")
    return getattr(importlib.import_module(module), name)


@dataclass(frozen=True)
class ResolvedSource:
    """Where a component's files are, after ``tiny:`` and local-folder resolution."""

    path: str  # local folder, hub id or single file
    subfolder: Optional[str]
    single_file: bool = False
    config_source: Optional[str] = None
    # e.g. "fp16": which weight files of the folder are read (toolkit/models/components/hub.py)
    variant: Optional[str] = None

    @property
    def folder(self) -> str:
        return os.path.join(self.path, self.subfolder or "")


def resolve_source(
    name_or_path: str,
    subfolder: Optional[str],
    config_source: Optional[str] = None,
    variant: Optional[str] = None,
    report: Optional[Callable[[str], None]] = None,
    fetch: bool = True,
) -> ResolvedSource:
    """Where the files are, on this machine: a hub id (``sources.py``) is fetched first, only what the loader reads
    (``hub.fetch_component``; ``report`` hears what is downloaded and how big). ``fetch=False`` leaves it a hub id
    for a caller that reads one config through diffusers' own hub download (``hub.config_source_of``)."""
    if (kind := source_kind(name_or_path)) == "hub":
        found = fetch_component(name_or_path, subfolder, variant, report) if fetch else config_source_of(name_or_path)
        return ResolvedSource(found, subfolder, variant=variant)
    if kind == "tiny":
        from toolkit.models.tiny import tiny_checkpoint

        name_or_path = tiny_checkpoint(name_or_path[len("tiny:") :])
    elif kind == "builtin":
        name_or_path = builtin_checkpoint(name_or_path[len("builtin:") :])
    name_or_path = os.path.expanduser(name_or_path)
    if name_or_path.endswith(".safetensors"):
        if not os.path.isfile(name_or_path):
            raise FileNotFoundError(f"single-file checkpoint {name_or_path!r} does not exist")
        if not config_source:
            raise ValueError(
                f"{name_or_path!r} is a single file: its config comes from extras_name_or_path, which is not set"
            )
        # The config's source stays a hub id when it is one: diffusers reads just that config.json from it.
        return ResolvedSource(name_or_path, subfolder, True, resolve_source(config_source, None, fetch=False).path)
    if os.path.isdir(name_or_path):
        path = os.path.abspath(name_or_path)
        # A local folder may be the whole pipeline or just this component's folder.
        if subfolder and not os.path.isdir(os.path.join(path, subfolder)):
            subfolder = None
        return ResolvedSource(path, subfolder, variant=variant)
    raise FileNotFoundError(f"model path {name_or_path!r} does not exist (and is not a hub id 'org/name')")


BUILTIN_ROOT = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "builtin")


def builtin_checkpoint(name: str) -> str:
    """``builtin:<name>``: a small trained checkpoint shipped in the repository (toolkit/models/builtin/)."""
    folder = os.path.join(BUILTIN_ROOT, name)
    if (
        not name
        or os.sep in name
        or name.startswith(".")
        or not os.path.isfile(os.path.join(folder, "model_index.json"))
    ):
        shipped = (
            sorted(d for d in os.listdir(BUILTIN_ROOT) if not d.startswith(".")) if os.path.isdir(BUILTIN_ROOT) else []
        )
        raise FileNotFoundError(f"no built-in model {name!r}; shipped: {', '.join(shipped) or 'none'}")
    return folder


def _scheduler_class(src: ResolvedSource):
    """A checkpoint ships the scheduler it was tuned for (SD1.5: PNDM, Wan: UniPC); take that class."""
    import diffusers

    with open(os.path.join(src.folder, "scheduler_config.json")) as f:
        return getattr(diffusers, json.load(f)["_class_name"])


def _load_single_file(cls, src: ResolvedSource, dtype):
    """A file in diffusers' own layout is assigned onto the module built on the meta device (no double RAM).
    Any other layout (Stability's LDM checkpoints, Black Forest Labs' Flux files, the Wan and Z-Image
    releases, ComfyUI repackagings) goes through the class's diffusers converter, ``from_single_file``, with
    the config from ``config_source``, so nothing is fetched for it."""
    from accelerate import init_empty_weights
    from safetensors.torch import load_file

    if hasattr(cls, "load_config"):  # diffusers model
        config = cls.load_config(src.config_source, subfolder=src.subfolder)
        with init_empty_weights():
            module = cls.from_config(config)
    else:  # transformers model
        config = cls.config_class.from_pretrained(src.config_source, subfolder=src.subfolder or "")
        with init_empty_weights():
            module = cls._from_config(config)
    state = load_file(src.path)
    expected = set(module.state_dict())
    if not expected.issubset(state) or len(state) > len(expected):
        del module, state
        return _convert_single_file(cls, src, dtype, len(expected))
    if dtype is not None:
        state = {k: v.to(dtype) if v.is_floating_point() else v for k, v in state.items()}
    module.load_state_dict(state, strict=True, assign=True)
    return module.eval()


def _convert_single_file(cls, src: ResolvedSource, dtype, expected: int):
    name = os.path.basename(src.path)
    if not hasattr(cls, "from_single_file"):
        raise ValueError(
            f"{name} is not in diffusers' {cls.__name__} layout ({expected} keys expected), and "
            f"diffusers has no converter from other layouts for {cls.__name__}"
        )
    try:
        module = cls.from_single_file(
            src.path, config=src.config_source, subfolder=src.subfolder, torch_dtype=dtype, local_files_only=True
        )
    except Exception as e:
        raise ValueError(
            f"{name}: diffusers could not read it as a {cls.__name__} checkpoint ({type(e).__name__}: {str(e)[:300]})"
        ) from None
    return module.eval()


def load_component(
    cls_path: str,
    name_or_path: str,
    subfolder: Optional[str] = None,
    dtype: Optional[str] = None,
    device: Optional[str] = None,
    config_source: Optional[str] = None,
    qtype: Optional[str] = None,
    offload: Optional[str] = None,
    onload_device: Optional[str] = None,
    variant: Optional[str] = None,
    report: Optional[Callable[[str], None]] = None,
) -> Any:
    """Load one component, through the active component pool when there is one.

    ``cls_path`` ``"auto"`` means "the scheduler class the checkpoint names"; schedulers are stateful and cheap,
    so they are never shared. The pool key is built from exactly these arguments after source resolution:
    a quantized or offloaded copy is a different entry from the plain one, never the same module mutated."""
    src = resolve_source(name_or_path, subfolder, config_source, variant, report)
    load = lambda: _load(cls_path, src, dtype, device, qtype, offload, onload_device)  # noqa: E731
    pool = current_pool()
    if pool is None or cls_path == "auto":
        return load()
    key = ComponentKey(
        cls_path,
        content_digest(src),
        DTYPES.get(dtype, dtype),
        qtype,
        offload,
        device,
        source=src.path,
        subfolder=src.subfolder,
    )
    if device:
        needed = estimate_bytes(src)
        if device == "cpu" and str(onload_device).startswith("cuda") and key not in pool.entries:
            pool.evict_host_for(needed, protect=set())  # it waits in host RAM between uses
        pool.evict_for(needed, onload_device or device, protect=set())
    return pool.get_or_load(key, load)


# AI Toolkit's qtype names -> torchao configs (diffusers and transformers take AOBaseConfig objects). All are
# weight-only but ``float8dq``: float8 weights *and* activations (scaled per row, at run time), so the matmuls run
# on float8 tensor cores instead of dequantizing the weights every step.
QTYPES = {
    "float8": "Float8WeightOnlyConfig",
    "qfloat8": "Float8WeightOnlyConfig",
    "int8": "Int8WeightOnlyConfig",
    "qint8": "Int8WeightOnlyConfig",
    "int4": "Int4WeightOnlyConfig",
    "qint4": "Int4WeightOnlyConfig",
    "float8dq": "Float8DynamicActivationFloat8WeightConfig",
}
CUDA_ONLY_QTYPES = {"float8", "qfloat8", "int4", "qint4", "float8dq"}  # their torchao kernels need a GPU


def check_qtype(qtype: str, device: str) -> Optional[str]:
    """Why ``qtype`` cannot run here, or None. Checked before a request is queued so it fails as a 4xx."""
    import importlib.util

    if qtype not in QTYPES:
        return f"qtype {qtype!r} is not supported; use one of {', '.join(sorted(QTYPES))} (torchao)"
    if importlib.util.find_spec("torchao") is None:
        return f"qtype {qtype!r} needs the torchao package, which is not installed"
    if qtype in CUDA_ONLY_QTYPES and not str(device).startswith("cuda"):
        return f"qtype {qtype!r} needs a CUDA GPU; this engine runs on {device} (int8 runs on CPU)"
    return None


def best_qtype(device: str) -> Optional[str]:
    """The 8-bit type a memory plan may use here: float8 weights and activations where the GPU has float8 tensor
    cores (Ada, Hopper and later: compute capability 8.9+), int8 weights before; None without torchao or off CUDA."""
    import importlib.util

    import torch

    if not str(device).startswith("cuda") or importlib.util.find_spec("torchao") is None:
        return None
    return "float8dq" if torch.cuda.get_device_capability(torch.device(device)) >= (8, 9) else "int8"


def _quantization_config(cls, qtype: str):
    """diffusers and transformers each take a TorchAoConfig of their own, around the same torchao config."""
    import torchao.quantization

    ao_class = getattr(torchao.quantization, QTYPES[qtype])
    # set_inductor_config=False: by default torchao turns on inductor's coordinate-descent tuning for the whole
    # process, which then tunes every Triton kernel of every later compile the first time it runs, one ptxas call per
    # candidate. Qwen-Image-Edit's float8 blocks spent 342 s of a 392 s first request in it (dynamo's timers
    # counted 22 s); without it Qwen-Image's float8 step compiled still ran at 0.65x the full card's bf16 step
    # (docs/MEASURED.md "torchao's process-wide coordinate-descent tuning").
    options = {"set_inductor_config": False}
    # Per-row scales: one scale per output channel and per token keeps float8's error at weight-only's level
    # (one scale per tensor lets a single outlier token flatten the rest).
    if qtype == "float8dq":
        options["granularity"] = torchao.quantization.PerRow()
    ao_config = ao_class(**options)
    if cls.__module__.startswith("diffusers"):
        from diffusers import TorchAoConfig
    else:
        from transformers import TorchAoConfig
    return TorchAoConfig(ao_config)


def _load(
    cls_path: str,
    src: ResolvedSource,
    dtype: Optional[str],
    device: Optional[str],
    qtype: Optional[str] = None,
    offload: Optional[str] = None,
    onload_device: Optional[str] = None,
) -> Any:
    cls = _scheduler_class(src) if cls_path == "auto" else import_class(cls_path)
    kwargs = {"subfolder": src.subfolder} if src.subfolder else {}
    if not src.single_file and uses_variant(src.folder, src.variant):
        kwargs["variant"] = src.variant
    if qtype:
        kwargs["quantization_config"] = _quantization_config(cls, qtype)
    if src.single_file:
        module = _load_single_file(cls, src, torch_dtype(dtype))
    elif dtype is not None:
        module = cls.from_pretrained(src.path, torch_dtype=torch_dtype(dtype), **kwargs)
    else:
        module = cls.from_pretrained(src.path, **kwargs)
    if hasattr(module, "eval"):
        module.eval()
    if offload and offload.startswith("group:"):
        _group_offload(module, onload_device or device, offload.partition(":")[2])
    elif offload in ("blocks", "blocks:encoder"):
        from toolkit.models.streaming import BlockStream

        # a denoiser's parts outside its blocks stay on the GPU; an encoder's come for each call
        BlockStream(module, onload_device or device, rest_stays=offload == "blocks")
    elif device is not None and hasattr(module, "to") and hasattr(module, "parameters"):
        module.to(device)
    return module


def _group_offload(module, onload_device: str, level: str = "block") -> None:
    """Layer offloading through diffusers' group offloading: parts stream to the GPU as they run, on a side CUDA
    stream. ``block``: the module's top-level block lists (a denoiser's ``transformer_blocks``), one block a
    group. ``leaf``: every leaf module its own group, for text encoders, whose layers sit deeper (a
    ``Qwen2_5_VLForConditionalGeneration`` has no block list at its top, so block level put all 15 GiB of it in
    one group, onloaded at once: a 24 GiB Qwen-Image plan ran out of memory there, docs/MEASURED.md
    "Group offloading an encoder with no block list")."""
    import torch
    from diffusers.hooks import apply_group_offloading

    from toolkit.models.offload import move_to_host

    onload = torch.device(onload_device)
    # diffusers pins each tensor through torch's allocator, which rounds it up to a power of two (up to twice
    # the encoder in host RAM); weights already in page-locked memory it uses as they are: exact-size copies first.
    move_to_host(module)
    if level == "leaf":
        apply_group_offloading(
            module,
            onload_device=onload,
            offload_device=torch.device("cpu"),
            offload_type="leaf_level",
            use_stream=onload.type == "cuda",
        )
    else:
        apply_group_offloading(
            module,
            onload_device=onload,
            offload_device=torch.device("cpu"),
            offload_type="block_level",
            num_blocks_per_group=1,
            use_stream=onload.type == "cuda",
        )


def end_group_offload_call(module) -> None:
    """After a call that raised (out of memory, a cancel), every group of a module under diffusers' group
    offloading goes back to its host copy: the hook that offloads a group after it runs never ran for the group
    running then, nor for the one prefetched, and a re-plan would find up to two leaves (a 2 GB embedding table
    for LTX-2's Gemma) still on the GPU. On CUDA each offload is a pointer swap."""
    groups = {}
    for sub in module.modules() if callable(getattr(module, "modules", None)) else ():
        hook = getattr(sub, "_diffusers_hook", None) and sub._diffusers_hook.get_hook("group_offloading")
        if hook is not None:
            groups[id(hook.group)] = hook.group
    for group in groups.values():
        group.offload_()


_digests: dict = {}
HASH_LIMIT = 256 * 1024**2
_digests_lock = threading.Lock()


def content_digest(src: ResolvedSource) -> str:
    """What the component *is*, independent of where it lives: files and their contents.

    Files in the Hugging Face cache are symlinks to blobs named by their sha256, so those cost nothing. Other
    files up to ``HASH_LIMIT`` are hashed once per (path, size, mtime) and remembered; larger local files are
    identified by (path, size, mtime) instead: hashing 24 GB would cost more than loading it, and a sampled
    hash could call two different fine-tunes the same. So two byte-identical big local copies do not share,
    which is safe; everything from the hub does. Only the files the loader reads count (``hub.component_files``):
    a repo's unread copies change nothing, and its ``fp16`` variant is a different component from its plain one."""
    import hashlib

    files = [src.path] if src.single_file else folder_files(src.folder, src.variant)
    h = hashlib.sha1()
    for path in files:
        h.update(os.path.basename(path).encode())
        h.update(file_digest(path).encode())
    return h.hexdigest()


def _weight_files(src: ResolvedSource) -> list[str]:
    if src.single_file:
        return [src.path]
    return [p for p in folder_files(src.folder, src.variant) if p.endswith((".safetensors", ".bin"))]


def file_digest(path: str) -> str:
    import hashlib

    real = os.path.realpath(path)
    if f"{os.sep}blobs{os.sep}" in real:
        return os.path.basename(real)  # the hub cache names blobs by their hash
    stat = os.stat(real)
    memo_key = (real, stat.st_size, stat.st_mtime_ns)
    if stat.st_size > HASH_LIMIT:
        return "file:%s:%d:%d" % memo_key
    with _digests_lock:
        if memo_key in _digests:
            return _digests[memo_key]
    h = hashlib.sha256()
    with open(real, "rb") as f:
        for block in iter(lambda: f.read(8 << 20), b""):
            h.update(block)
    with _digests_lock:
        _digests[memo_key] = h.hexdigest()
    return _digests[memo_key]


def estimate_bytes(src: ResolvedSource) -> int:
    """Size on disk of a local component's weights: what a pre-load eviction must make room for."""
    return sum(os.path.getsize(p) for p in _weight_files(src))


_DTYPE_BYTES = {
    "F64": 8,
    "F32": 4,
    "F16": 2,
    "BF16": 2,
    "F8_E4M3": 1,
    "F8_E5M2": 1,
    "I64": 8,
    "I32": 4,
    "I16": 2,
    "I8": 1,
    "U8": 1,
    "BOOL": 1,
}
_TARGET_BYTES = {"float32": 4, "float16": 2, "bfloat16": 2}


def safetensors_header(path: str) -> dict:
    """The tensor table at the start of a ``.safetensors`` file (8-byte little-endian length, then JSON): the
    memory plan reads sizes without loading anything."""
    with open(path, "rb") as f:
        length = int.from_bytes(f.read(8), "little")
        if not 0 < length <= 100 * 1024**2:
            raise ValueError(f"{path}: not a safetensors file (header length {length})")
        return json.loads(f.read(length))


def weight_bytes(
    name_or_path: str,
    subfolder: Optional[str],
    dtype: Optional[str],
    config_source: Optional[str] = None,
    variant: Optional[str] = None,
    report: Optional[Callable[[str], None]] = None,
) -> tuple[int, int]:
    """(total, largest tensor) bytes of a component's weights once loaded in ``dtype``: floating tensors at the
    target dtype, others as stored. Files that are not safetensors count at their size on disk."""
    files = _weight_files(resolve_source(name_or_path, subfolder, config_source, variant, report))
    target = _TARGET_BYTES.get(DTYPES.get(dtype or "", ""), None)
    total = largest = 0
    for path in files:
        if not path.endswith(".safetensors"):
            total += os.path.getsize(path)
            continue
        for name, info in safetensors_header(path).items():
            if name == "__metadata__":
                continue
            count = 1
            for n in info["shape"]:
                count *= n
            floating = info["dtype"].startswith(("F", "BF"))
            size = count * (target if floating and target else _DTYPE_BYTES.get(info["dtype"], 2))
            total += size
            largest = max(largest, size)
    return total, largest


def warm_up_process(device: str) -> None:
    """A fresh process's first-use costs, paid before a request waits on them: diffusers' and transformers' shared
    model and pipeline code (~3 s of imports on the build box) and the CUDA context. A fresh engine's first SDXL
    UNet load took 10 s, against 1.3 s in a warm process (docs/BENCHMARKS.md "First request and queue"). The library
    filters go on first."""
    import importlib

    quiet_library_logs()
    for name in (
        "diffusers.models.modeling_utils",
        "diffusers.pipelines.pipeline_utils",
        "transformers.modeling_utils",
    ):
        importlib.import_module(name)
    if str(device).startswith("cuda"):
        import torch

        torch.zeros(1, device=device).add_(1)
        torch.cuda.synchronize(device)
