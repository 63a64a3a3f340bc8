"""Fit latent -> RGB preview factors for a trained checkpoint's VAE and ship them next to it.

    python -m testing.train_shapes.fit_preview toolkit/models/builtin/shapes

ComfyUI's factor tables are least-squares fits of model-space latents to the images they decode to; this does
the same for our own VAE: encode dataset images, scale by the VAE's scaling_factor (the space the sampler
and the streamed latents live in), average-pool each image to the latent grid, and solve x·F + b = 2·rgb − 1.
The result goes to <checkpoint>/latent_preview.json, which the engine puts in the start frame instead of the
family's table, so live previews of this model show its real colours.
"""

import json
import sys

import numpy as np
import torch

from testing.train_shapes.dataset import render_dataset


def fit(folder: str, n: int = 2048, seed: int = 123) -> dict:
    from diffusers import AutoencoderKL

    vae = AutoencoderKL.from_pretrained(folder, subfolder="vae", torch_dtype=torch.float32).eval()
    images, _ = render_dataset(seed, n)
    x = torch.from_numpy(images).permute(0, 3, 1, 2).float() / 127.5 - 1.0
    with torch.inference_mode():
        latents = torch.cat([vae.encode(x[i : i + 256]).latent_dist.mean for i in range(0, n, 256)])
    latents = latents * vae.config.scaling_factor
    factor = x.shape[-1] // latents.shape[-1]
    target = torch.nn.functional.avg_pool2d(x, factor)  # [-1, 1] per latent cell
    lat = latents.permute(0, 2, 3, 1).reshape(-1, latents.shape[1]).numpy()
    rgb = target.permute(0, 2, 3, 1).reshape(-1, 3).numpy()
    design = np.concatenate([lat, np.ones((len(lat), 1), np.float32)], axis=1)
    solution, *_ = np.linalg.lstsq(design, rgb, rcond=None)
    residual = float(np.abs(design @ solution - rgb).mean() * 127.5)

    def rounded(values):
        return [round(float(v), 4) for v in values]

    return {
        "rgb_factors": [rounded(row) for row in solution[:-1]],
        "rgb_bias": rounded(solution[-1]),
        "source": f"least-squares fit on {n} dataset images (seed {seed}); mean error {residual:.1f}/255",
    }


if __name__ == "__main__":
    folder = sys.argv[1]
    result = fit(folder)
    with open(f"{folder}/latent_preview.json", "w") as f:
        json.dump(result, f, indent=2)
    print(json.dumps(result, indent=2))
