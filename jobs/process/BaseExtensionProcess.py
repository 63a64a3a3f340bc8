"""Base class for processes provided by extensions."""

from collections import OrderedDict

from jobs.process.BaseProcess import BaseProcess


class BaseExtensionProcess(BaseProcess):
    def __init__(self, process_id: int, job, config: OrderedDict):
        super().__init__(process_id, job, config)
        self.progress_bar = None

    def run(self) -> None:
        super().run()
