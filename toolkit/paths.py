"""Filesystem anchors of the toolkit.

Everything is resolved from the repository root rather than the working directory, so
`python /abs/path/run.py` behaves the same wherever it is started from.
"""

import os

TOOLKIT_ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
CONFIG_ROOT = os.path.join(TOOLKIT_ROOT, "config")

# The UI passes its MODELS_PATH setting through the environment; a blank value means "unset".
MODELS_PATH = os.environ.get("MODELS_PATH", "").strip() or os.path.join(TOOLKIT_ROOT, "models")


def get_path(path: str) -> str:
    """Anchor a relative path at the toolkit root (absolute paths pass through)."""
    if os.path.isabs(path):
        return path
    return os.path.join(TOOLKIT_ROOT, path)
