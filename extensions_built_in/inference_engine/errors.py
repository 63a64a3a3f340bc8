"""The engine's refusals of server-thread calls, which the server answers with an HTTP status (409).

Apart from engine.py so that both sides name them without one reaching into the other's module.
"""


class OutputInUse(RuntimeError):
    """A result a queued or running request reads as a control image cannot be deleted yet."""


class EngineBusy(RuntimeError):
    """Main-thread work (``/unload``) cannot run while a generation does."""
