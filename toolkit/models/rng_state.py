"""The process-wide random generators around one generation."""

from __future__ import annotations


class RngState:
    """The process-wide generators, captured before a request and put back after it: a cancelled request leaves
    them where an uncancelled one would, so the next request with the same seed reproduces it byte for byte."""

    def __init__(self, cpu, cuda):
        self.cpu, self.cuda = cpu, cuda

    @classmethod
    def capture(cls) -> "RngState":
        import torch

        cuda = torch.cuda.get_rng_state_all() if torch.cuda.is_available() else None
        return cls(torch.get_rng_state(), cuda)

    @staticmethod
    def seed(seed: int) -> None:
        """The global generators, for code that draws without the request's generator. Not ``torch.manual_seed``:
        in a process that never started CUDA (a CPU engine) its CUDA half queues itself with a formatted stack of
        the caller, whose linecache checks cost a few percent of a tiny request (``testing/test_models.py``)."""
        import torch

        torch.default_generator.manual_seed(seed)
        if torch.cuda.is_available() and torch.cuda.is_initialized():
            torch.cuda.manual_seed_all(seed)

    def restore(self) -> None:
        import torch

        torch.set_rng_state(self.cpu)
        if self.cuda is not None:
            torch.cuda.set_rng_state_all(self.cuda)
