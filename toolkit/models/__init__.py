"""Model layer. Importing it installs one log filter and nothing heavy."""
import logging


class _DropTorchvisionNotice(logging.Filter):
    """transformers 5 announces on every pipeline import that image processors fall back without torchvision;
    no pipeline here needs torchvision, and the notice would open every job log and engine request."""

    def filter(self, record: logging.LogRecord) -> bool:
        return "requires torchvision" not in record.getMessage()


logging.getLogger("transformers").addFilter(_DropTorchvisionNotice())
