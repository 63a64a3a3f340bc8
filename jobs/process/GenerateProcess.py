"""``job: generate`` / ``type: to_folder``: load one model, render a list of prompts into a folder, exit.

AI Toolkit's headless generation path; here it also proves the model layer end to end without the engine.
Config keys follow AI Toolkit (``generate.prompts``, ``sample_steps``, ``neg``, ``ext`` ...), plus
``num_frames``/``fps`` for video and ``duration_s``/``lyrics`` for audio families.
"""

import os

from jobs.process.BaseProcess import BaseProcess
from toolkit.config_modules import GenerateImageConfig, ModelConfig, parse_prompt_flags


class GenerateProcess(BaseProcess):
    def __init__(self, process_id, job, config):
        super().__init__(process_id, job, config)
        self.output_folder = self.get_conf("output_folder", required=True)
        self.device = self.get_conf("device", getattr(job, "device", None) or "auto")
        self.model_config = ModelConfig.from_dict(self.get_conf("model", required=True))
        self.generate = self.get_conf("generate", {}) or {}

    def prompts(self) -> list[str]:
        prompts = self.generate.get("prompts") or []
        if isinstance(prompts, str):  # a path to a text file, one prompt a line
            with open(prompts, encoding="utf-8") as f:
                prompts = [line.strip() for line in f if line.strip()]
        if not prompts:
            raise ValueError('config file error. "generate.prompts" must list at least one prompt')
        return list(prompts) * int(self.generate.get("num_repeats", 1))

    def gen_configs(self, model_class) -> list[GenerateImageConfig]:
        """One config per prompt; AI Toolkit's inline flags (``a cat --w 768 --seed 3``) override the job's
        settings for that prompt, as they do in AI Toolkit's sample prompts."""
        g, defaults = self.generate, model_class.defaults
        configs = []
        for line in self.prompts():
            prompt, flags = parse_prompt_flags(line)
            settings = dict(
                negative_prompt=g.get("neg", ""),
                width=g.get("width", defaults.get("width", 512)),
                height=g.get("height", defaults.get("height", 512)),
                num_inference_steps=g.get("sample_steps", defaults.get("num_inference_steps", 25)),
                guidance_scale=g.get("guidance_scale", defaults.get("guidance_scale", 7.5)),
                seed=g.get("seed", -1),
                output_ext=g.get("ext", defaults.get("output_ext", "png")),
                num_frames=g.get("num_frames", defaults.get("num_frames", 1)),
                fps=g.get("fps", defaults.get("fps", 15)),
                duration_s=g.get("duration_s", defaults.get("duration_s")),
                lyrics=g.get("lyrics", ""),
            )
            configs.append(GenerateImageConfig(prompt=prompt, output_folder=self.output_folder, **settings | flags))
        return configs

    def run(self):
        from toolkit.device import resolve_device
        from toolkit.models.registry import get_model_class

        model_class = get_model_class(self.model_config.arch)
        model = model_class(resolve_device(self.device), self.model_config)
        model.load_model()
        os.makedirs(self.output_folder, exist_ok=True)
        configs = self.gen_configs(model_class)
        for i, result in enumerate(model.generate_images(configs)):
            print(f"[{i + 1}/{len(configs)}] seed {configs[i].seed}: {result['path']}", flush=True)
