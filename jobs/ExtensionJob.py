"""`job: extension`: run processes provided by extension packages."""

from typing import List

from jobs.BaseJob import BaseJob
from toolkit.extension import get_all_extensions_process_dict, get_extension_failures


class ExtensionJob(BaseJob):
    def __init__(self, config):
        super().__init__(config)
        self.device = self.get_conf("device", "cpu")
        self.process_dict = get_all_extensions_process_dict()
        self.extension_failures = get_extension_failures()
        self.load_processes(self.process_dict)

    def unknown_process_message(self, process_type: str, index: int, known: List[str]) -> str:
        """Name broken extensions: the uid asked for is most likely in one of them."""
        message = super().unknown_process_message(process_type, index, known)
        if self.extension_failures:
            failed = "; ".join(str(f) for f in self.extension_failures)
            message += f". Extensions that failed to load: {failed}"
        return message

    def run(self) -> None:
        super().run()
        count = len(self.process)
        print(f"Running {count} process{'' if count == 1 else 'es'}")
        for process in self.process:
            process.run()
