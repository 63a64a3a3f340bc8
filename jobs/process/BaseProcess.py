"""Base of every process: one `config.process[i]` entry of a job."""

import json
from copy import deepcopy
from typing import Any, Callable, Mapping, Optional


class BaseProcess:
    def __init__(self, process_id: int, job, config: Mapping):
        self.process_id = process_id
        self.job = job
        self.config = config
        self.raw_process_config = config
        self.name = self.get_conf("name", self.job.name)
        self.meta = deepcopy(self.job.meta)
        self.performance_log_every = self.get_conf("performance_log_every", 0)
        # The job log is often all a user has; it should show what actually ran.
        print(json.dumps(self.config, indent=4))

    def get_conf(
        self,
        key: str,
        default: Any = None,
        required: bool = False,
        as_type: Optional[Callable[[Any], Any]] = None,
    ) -> Any:
        """Read `a.b.c` from this process entry; an explicit null counts as missing."""
        value: Any = self.config
        for part in key.split("."):
            if not isinstance(value, Mapping) or part not in value:
                value = None
                break
            value = value[part]
        if value is not None:
            return as_type(value) if as_type is not None else value
        if required:
            raise ValueError(f'config file error. Missing "config.process[{self.process_id}].{key}" key')
        if as_type is not None and default is not None:
            return as_type(default)
        return default

    def run(self) -> None:
        """Subclasses do their work here."""

    def on_error(self, e: BaseException) -> None:
        """Called by run.py with the exception (KeyboardInterrupt included) that ended the job."""

    def add_meta(self, additional_meta: Mapping) -> None:
        self.meta.update(additional_meta)
