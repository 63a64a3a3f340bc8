"""Map a config's `job:` value to its job class.

Job modules are imported only once their type is asked for, so a plain extension job
never pays for the imports of the others.
"""

import importlib
from typing import Mapping, Optional, Union

from toolkit.config import get_config

JOB_TYPES = {
    "extension": "jobs.ExtensionJob:ExtensionJob",
    "generate": "jobs.GenerateJob:GenerateJob",
}


def get_job(config_path: Union[str, Mapping], name: Optional[str] = None):
    """Load the config and build the job it names."""
    config = get_config(config_path, name)
    job_type = config.get("job")
    if not job_type:
        raise ValueError(f'config file error. Missing "job" key (known job types: {", ".join(JOB_TYPES)})')
    if job_type not in JOB_TYPES:
        raise ValueError(f"Unknown job type {job_type!r}; known job types: {', '.join(JOB_TYPES)}")
    module_name, class_name = JOB_TYPES[job_type].split(":")
    job_class = getattr(importlib.import_module(module_name), class_name)
    return job_class(config)


def run_job(config: Union[str, Mapping], name: Optional[str] = None) -> None:
    """Build, run and clean up one job, for callers that do not need the job object."""
    job = get_job(config, name)
    job.run()
    job.cleanup()
