"""`job: generate`: render prompts to a folder with the `to_folder` process."""

from jobs.BaseJob import BaseJob

# A name, not a class: the generation stack is imported only when a generate job runs.
process_dict = {"to_folder": "GenerateProcess"}


class GenerateJob(BaseJob):
    def __init__(self, config):
        super().__init__(config)
        self.device = self.get_conf("device", "cpu")
        self.load_processes(process_dict)

    def run(self) -> None:
        super().run()
        count = len(self.process)
        print(f"Running {count} process{'' if count == 1 else 'es'}")
        for process in self.process:
            process.run()
