"""The training jobs a compare grid can pick from (``GET /grid/jobs``): each job's saved LoRAs ordered by step, and
the prompts and settings its own training samples used. No torch.

The checkpoints are the LoRA library's entries (``GET /loras``) grouped by their ``job``. The sample settings are
the ``sample`` section of the job's ``config.yaml`` as AI Toolkit writes it (``prompts``, or the newer
``samples: [{prompt: …}]``; ``neg``, ``seed``, ``guidance_scale``, ``sample_steps``, ``width``, ``height``), with
``[trigger]`` replaced by the job's ``trigger_word`` as AI Toolkit does when it samples, and its per-prompt flags
(`` --w 512``) left out: they are the training sampler's, not a prompt. They are what a compare for that job
starts from, so its checkpoints are judged on the prompts the run was watched with.
"""

from __future__ import annotations

import os
import re
from typing import Optional

from extensions_built_in.inference_engine.catalog import job_config

FLAGS = re.compile(r"\s--[a-z_]+(\s+\S+)?", re.IGNORECASE)
MAX_PROMPTS = 32
CHECKPOINT_KEYS = ("path", "name", "step", "tag", "bytes", "mtime", "preview_url", "hash")


def training_jobs(entries: list[dict]) -> list[dict]:
    """One row per job, newest save first: ``job``, ``arch``, ``folder``, ``checkpoints`` (by step) and
    ``sample`` (prompts and settings, or None when the folder has no config)."""
    by_job: dict = {}
    for entry in entries:
        if entry.get("job"):
            by_job.setdefault(entry["job"], []).append(entry)
    rows = []
    for job, saves in by_job.items():
        saves = sorted(saves, key=lambda e: (e.get("step") is None, e.get("step") or 0, e["path"]))
        folder = os.path.dirname(saves[-1]["path"])
        rows.append(
            {
                "job": job,
                "arch": next((e.get("arch") for e in saves if e.get("arch")), None),
                "folder": folder,
                "newest": max(e.get("mtime") or 0 for e in saves),
                "checkpoints": [{k: e.get(k) for k in CHECKPOINT_KEYS} for e in saves],
                "trigger_words": saves[-1].get("trigger_words") or [],
                "sample": sample_settings(job_config(folder)),
            }
        )
    rows.sort(key=lambda r: -r["newest"])
    return rows


def sample_settings(config: Optional[dict]) -> Optional[dict]:
    try:
        process = config["config"]["process"][0]
    except (TypeError, KeyError, IndexError):
        return None
    sample = process.get("sample") if isinstance(process, dict) else None
    if not isinstance(sample, dict):
        return None
    trigger = str(process.get("trigger_word") or "")
    raw = sample.get("prompts")
    if not isinstance(raw, list):
        raw = [s.get("prompt") for s in sample.get("samples") or [] if isinstance(s, dict)]
    prompts = [clean_prompt(p, trigger) for p in raw if isinstance(p, str) and p.strip()][:MAX_PROMPTS]
    settings = {
        "prompts": prompts,
        "negative_prompt": sample.get("neg"),
        "seed": sample.get("seed"),
        "guidance_scale": sample.get("guidance_scale"),
        "num_inference_steps": sample.get("sample_steps"),
        "width": sample.get("width"),
        "height": sample.get("height"),
    }
    return {k: v for k, v in settings.items() if v not in (None, "")}


def clean_prompt(prompt: str, trigger: str) -> str:
    prompt = FLAGS.sub("", prompt)
    return prompt.replace("[trigger]", trigger).strip()
