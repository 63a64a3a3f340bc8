"""What the libraries print that a user cannot act on, kept out of job logs and the console: per-file loading bars,
notices about optional kernels and packages this engine does not use. Called before any model loads."""

from __future__ import annotations

import warnings


def quiet_library_logs() -> None:
    """Per-file "Loading weights" bars would flood job logs and the engine's console on every swap, and
    transformers 5 announces on each pipeline import that image processors fall back without torchvision
    (no pipeline here needs torchvision). Filters go on the library's handler: child loggers emit these.

    Importing diffusers imports torchao, which logs three harmless warnings a user cannot act on (see
    ``QUIET``); they were the first lines of ``make demo``. Those messages are dropped where they are logged."""
    import logging

    for name, fragments in QUIET.items():
        logger = logging.getLogger(name)
        if not any(isinstance(f, _DropMessages) for f in logger.filters):
            logger.addFilter(_DropMessages(fragments))
    from diffusers.utils import logging as diffusers_logging
    from transformers.utils import logging as transformers_logging

    diffusers_logging.disable_progress_bar()
    transformers_logging.disable_progress_bar()
    for message in QUIET_WARNINGS:
        warnings.filterwarnings("ignore", message=message)
    for handler in transformers_logging.get_logger().handlers:
        if not any(isinstance(f, _DropTorchvisionNotice) for f in handler.filters):
            handler.addFilter(_DropTorchvisionNotice())


# logger -> message fragments dropped: torchao's native kernels built for another Python or GPU (it falls back to
# its Python paths), torch's notice about torchao's enum registration, and diffusers' note that it cannot import
# torchao's tensor classes for checkpoints serialized with torchao (the engine never loads such files).
QUIET = {
    "torchao": ("Failed to load ",),
    "torch.utils._pytree": ("is an Enum subclass and is now natively supported",),
    "diffusers.quantizers.torchao.torchao_quantizer": ("Unable to import `torchao` Tensor objects",),
}


# warnings.warn messages from inside the libraries: diffusers' config loader passes huggingface_hub an argument
# the hub has deprecated (nothing to change on our side); pyproject.toml's pytest filters list the same.
QUIET_WARNINGS = ("The `local_dir_use_symlinks` argument is deprecated",)


class _DropMessages:
    def __init__(self, fragments: tuple):
        self.fragments = fragments

    def filter(self, record) -> bool:
        message = record.getMessage()
        return not any(f in message for f in self.fragments)


class _DropTorchvisionNotice:
    def filter(self, record) -> bool:
        return "requires torchvision" not in record.getMessage()
