"""Base of every job: holds the parsed config and builds its processes."""

import importlib
from collections import OrderedDict
from typing import Any, Dict, List, Mapping, Union

ProcessRef = Union[type, str]


def resolve_process_class(ref: ProcessRef) -> type:
    """Turn a process_dict value into a class.

    Accepts a class, a "module:Class" string, or (as AI Toolkit does) a bare class name
    that lives in `jobs.process.<Name>`; strings keep heavy process modules unimported
    until a config actually uses them.
    """
    if not isinstance(ref, str):
        return ref
    if ":" in ref:
        module_name, class_name = ref.split(":", 1)
    else:
        module_name, class_name = f"jobs.process.{ref}", ref
    return getattr(importlib.import_module(module_name), class_name)


class BaseJob:
    def __init__(self, config: Mapping):
        if not config:
            raise ValueError("config is required")
        self.raw_config = config
        self.config = config["config"]
        self.job = config["job"]
        self.process: List[Any] = []
        self.name = self.get_conf("name", required=True)
        self.meta = config.get("meta") or OrderedDict()

    def get_conf(self, key: str, default=None, required: bool = False):
        """Top-level `config.<key>` only; processes have the dotted variant."""
        if key in self.config:
            return self.config[key]
        if required:
            raise ValueError(f'config file error. Missing "config.{key}" key')
        return default

    def run(self) -> None:
        print("")
        print("#############################################")
        print(f"#  Running job: {self.name}")
        print("#############################################")
        print("")

    def unknown_process_message(self, process_type: str, index: int, known: List[str]) -> str:
        """Error text for an unknown `type`; subclasses add what they know about the cause."""
        return (
            f'config file error. Unknown process type "{process_type}" in config.process[{index}]; '
            f"known types: {', '.join(sorted(known)) or '(none)'}"
        )

    def load_processes(self, process_dict: Dict[str, ProcessRef]) -> None:
        """Build `config.process` entries as `ProcessClass(process_id, job, entry)`."""
        entries = self.config.get("process")
        if not entries:
            raise ValueError('config file error. "config.process" must be a non-empty list')
        self.process = []
        for i, entry in enumerate(entries):
            if not isinstance(entry, Mapping) or "type" not in entry:
                raise ValueError(f'config file error. Missing "config.process[{i}].type" key')
            process_type = entry["type"]
            if process_type not in process_dict:
                raise ValueError(self.unknown_process_message(process_type, i, list(process_dict)))
            process_class = resolve_process_class(process_dict[process_type])
            self.process.append(process_class(i, self, entry))

    def cleanup(self) -> None:
        """Hook for subclasses that hold resources; the base job holds none."""
