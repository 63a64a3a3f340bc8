"""Train ``builtin:shapes`` from scratch: a tiny Stable Diffusion 1.x pipeline that draws coloured shapes.

    python -m testing.train_shapes.train --out DIR --minutes 7 --seed 0 --bpe bpe_simple_vocab_16e6.txt.gz

Two phases on one synthetic data set (testing/train_shapes/dataset.py, deterministic from ``--seed``):

1. the VAE (AutoencoderKL, 8x: 64x64x3 <-> 8x8x4), L1 + MSE reconstruction and a small KL term;
2. the UNet (UNet2DConditionModel) and the CLIP text encoder jointly, on the frozen VAE's latents: v-prediction
   on SD1's scaled-linear betas rescaled to zero terminal SNR, 10 % empty captions for classifier-free guidance,
   an EMA of both networks is what ships.

``--minutes`` is a time budget: a short timed warm-up measures each phase's step time and fixes its step count,
so the run is step-bound from then on; the log records the counts, and ``--vae-steps``/``--unet-steps`` replay
them exactly. The real CLIP tokenizer (49408 ids) is built offline from open-clip-torch's BPE file (``--bpe``;
``pip download --no-deps open-clip-torch`` and take ``open_clip/bpe_simple_vocab_16e6.txt.gz``) or copied from a
saved tokenizer folder (``--tokenizer``, default: the shipped one). Output: a diffusers folder
(``StableDiffusionPipeline.save_pretrained``, safetensors, fp16 weights), ``loss.csv``, ``loss.png``,
``train.json`` (settings, step counts, final losses, GPU evaluation) and ``samples.png``.

The shipped toolkit/models/builtin/shapes came from ``--minutes 6.5 --seed 0`` on one H200 (torch 2.11, diffusers
0.42.1): 3047 VAE steps (batch 256) and 2265 UNet+text-encoder steps (batch 512) in 426 s; its log, loss curve
and settings are in docs/training/shapes_*. The same schedule again: ``--vae-steps 3047 --unet-steps 2265``.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

from testing.train_shapes import dataset as D  # noqa: E402
from testing.train_shapes.evaluate import evaluate, grid, plot_losses  # noqa: E402
from testing.train_shapes.schedule import EMA, LossLog, lr_at, plan_steps, sync_device  # noqa: E402
from toolkit.models.tiny import bytes_to_unicode  # noqa: E402

SHIPPED = os.path.join(ROOT, "toolkit", "models", "builtin", "shapes")

VAE_CONFIG = dict(
    in_channels=3,
    out_channels=3,
    down_block_types=("DownEncoderBlock2D",) * 4,
    up_block_types=("UpDecoderBlock2D",) * 4,
    block_out_channels=(16, 32, 64, 64),
    layers_per_block=1,
    latent_channels=4,
    norm_num_groups=8,
    sample_size=64,
)
UNET_CONFIG = dict(
    sample_size=8,
    in_channels=4,
    out_channels=4,
    layers_per_block=1,
    block_out_channels=(64, 128, 128),
    down_block_types=("CrossAttnDownBlock2D",) * 3,
    up_block_types=("CrossAttnUpBlock2D",) * 3,
    cross_attention_dim=64,
    attention_head_dim=4,
    norm_num_groups=32,
)
TEXT_CONFIG = dict(
    hidden_size=64,
    intermediate_size=256,
    num_hidden_layers=3,
    num_attention_heads=4,
    max_position_embeddings=77,
    projection_dim=64,
    hidden_act="quick_gelu",
)
SCHEDULER_CONFIG = dict(
    num_train_timesteps=1000,
    beta_start=0.00085,
    beta_end=0.012,
    beta_schedule="scaled_linear",
    prediction_type="v_prediction",
    rescale_betas_zero_snr=True,
    timestep_spacing="trailing",
    clip_sample=False,
    set_alpha_to_one=False,
    steps_offset=1,
)
CAPTION_MIX = (("full", 0.70), ("colour", 0.15), ("background", 0.05), ("empty", 0.10))


# ---------------------------------------------------------------------------------------------- parts
def make_real_clip_tokenizer(bpe_gz_path: str, model_max_length: int = 77):
    """OpenAI CLIP's BPE (49408 ids, SD1's exact ids) from open_clip's bpe_simple_vocab_16e6.txt.gz (MIT)."""
    import gzip

    from transformers import CLIPTokenizer

    lines = gzip.open(bpe_gz_path).read().decode("utf-8").split("\n")
    merges = [tuple(m.split()) for m in lines[1 : 49152 - 256 - 2 + 1]]
    chars = list(bytes_to_unicode().values())
    vocab = chars + [c + "</w>" for c in chars] + ["".join(m) for m in merges] + ["<|startoftext|>", "<|endoftext|>"]
    return CLIPTokenizer(vocab={t: i for i, t in enumerate(vocab)}, merges=merges, model_max_length=model_max_length)


def load_tokenizer(bpe=None, tokenizer_dir=None):
    from transformers import CLIPTokenizer

    if bpe:
        tok = make_real_clip_tokenizer(bpe)
    else:
        folder = tokenizer_dir or os.path.join(SHIPPED, "tokenizer")
        if not os.path.isdir(folder):
            raise SystemExit(
                "no tokenizer: pass --bpe open_clip/bpe_simple_vocab_16e6.txt.gz (pip download --no-deps "
                "open-clip-torch) or --tokenizer DIR"
            )
        tok = CLIPTokenizer.from_pretrained(folder)
    assert len(tok) == 49408 and tok("a photo of a cat").input_ids == [49406, 320, 1125, 539, 320, 2368, 49407]
    return tok


def build_models(tok, seed: int):
    import torch
    from diffusers import AutoencoderKL, DDIMScheduler, UNet2DConditionModel
    from transformers import CLIPTextConfig, CLIPTextModel

    torch.manual_seed(seed)
    vae = AutoencoderKL(**VAE_CONFIG)
    torch.manual_seed(seed + 1)
    te = CLIPTextModel(
        CLIPTextConfig(
            vocab_size=len(tok),
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
            **TEXT_CONFIG,
        )
    )
    torch.manual_seed(seed + 2)
    unet = UNet2DConditionModel(**UNET_CONFIG)
    return vae, te, unet, DDIMScheduler(**SCHEDULER_CONFIG)


# ---------------------------------------------------------------------------------------------- phase 1: VAE
def vae_step_fn(images, batch: int, lr: float, total_ref: list, log: LossLog | None, kl_weight: float = 1e-6):
    import torch

    def make(mods):
        (vae,) = mods
        opt = torch.optim.AdamW(vae.parameters(), lr=lr, weight_decay=0.0, **_fused())
        n = images.shape[0]
        dev = images.device
        vae.train()

        def step(i):
            idx = torch.randint(0, n, (batch,), device=dev)
            x = images[idx].permute(0, 3, 1, 2).float() / 127.5 - 1
            for g in opt.param_groups:
                g["lr"] = lr_at(i, total_ref[0], lr)
            with _autocast(dev):
                post = vae.encode(x).latent_dist
                z = post.sample()
                rec = vae.decode(z).sample.float()
            l1 = (rec - x).abs().mean()
            mse = ((rec - x) ** 2).mean()
            kl = 0.5 * (post.mean.float() ** 2 + post.var.float() - 1 - post.logvar.float()).mean()
            loss = l1 + mse + kl_weight * kl
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(vae.parameters(), 1.0)
            opt.step()
            if log is not None:
                log.add("vae", i, total_ref[0], loss, opt.param_groups[0]["lr"])

        return step

    return make


# ---------------------------------------------------------------------------------------------- phase 2: UNet + TE
class Captions:
    """Every caption variant of every image, tokenized once; a batch draws a variant per image."""

    def __init__(self, samples, tok, device):
        import torch

        table, index = {}, {}

        def idx(text):
            if text not in index:
                index[text] = len(table)
                table[text] = tok(
                    text, padding="max_length", max_length=tok.model_max_length, truncation=True
                ).input_ids
            return index[text]

        self.empty = idx("")
        variants = [[idx(t) for t in D.caption_variants(s)] + [self.empty] for s in samples]
        self.variants = torch.tensor(variants, device=device)  # n x 4: full, colour, background, empty
        self.ids = torch.tensor(list(table.values()), device=device)  # unique captions x 77
        self.texts = list(table)
        self.probs = torch.tensor([p for _, p in CAPTION_MIX], device=device)

    def draw(self, idx):
        import torch

        choice = torch.multinomial(self.probs, idx.shape[0], replacement=True)
        return self.variants[idx, choice]


def unet_step_fn(
    lat_mean,
    lat_std,
    scale: float,
    captions: Captions,
    scheduler,
    batch: int,
    lr: float,
    total_ref: list,
    log: LossLog | None,
    ema_decay: float,
    ema_ref: list,
):
    import torch

    dev = lat_mean.device
    acp = scheduler.alphas_cumprod.to(dev)

    def make(mods):
        unet, te = mods
        opt = torch.optim.AdamW(
            [{"params": unet.parameters()}, {"params": te.parameters()}], lr=lr, weight_decay=0.01, **_fused()
        )
        n = lat_mean.shape[0]
        unet.train()
        te.train()
        ema_ref[:] = [EMA([unet, te], ema_decay)]

        def step(i):
            idx = torch.randint(0, n, (batch,), device=dev)
            x0 = (lat_mean[idx] + lat_std[idx] * torch.randn_like(lat_mean[idx])) * scale
            cap = captions.draw(idx)
            t = torch.randint(0, acp.shape[0], (batch,), device=dev)
            a = acp[t].view(-1, 1, 1, 1)
            noise = torch.randn_like(x0)
            xt = a.sqrt() * x0 + (1 - a).sqrt() * noise
            target = a.sqrt() * noise - (1 - a).sqrt() * x0  # v
            for g in opt.param_groups:
                g["lr"] = lr_at(i, total_ref[0], lr)
            with _autocast(dev):
                emb = te(captions.ids)[0][cap]  # every caption once (~170), no device sync
                pred = unet(xt, t, emb).sample.float()
            loss = ((pred - target) ** 2).mean()
            opt.zero_grad(set_to_none=True)
            loss.backward()
            torch.nn.utils.clip_grad_norm_(list(unet.parameters()) + list(te.parameters()), 1.0)
            opt.step()
            ema_ref[0].update(i)
            if log is not None:
                log.add("unet", i, total_ref[0], loss, opt.param_groups[0]["lr"])

        return step

    return make


def _autocast(device):
    import torch

    if device.type == "cuda":
        return torch.autocast("cuda", dtype=torch.bfloat16)
    import contextlib

    return contextlib.nullcontext()


def _fused() -> dict:
    import torch

    return {"fused": True} if torch.cuda.is_available() else {}


# ---------------------------------------------------------------------------------------------- main
def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="python -m testing.train_shapes.train", description=__doc__.split("\n\n")[0])
    ap.add_argument("--out", required=True)
    ap.add_argument("--minutes", type=float, default=7.0, help="training time budget for both phases")
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--vae-fraction", type=float, default=0.3)
    ap.add_argument("--vae-steps", type=int, help="replay: fixed VAE steps instead of the time budget")
    ap.add_argument("--unet-steps", type=int, help="replay: fixed UNet steps instead of the time budget")
    ap.add_argument("--images", type=int, default=150_000, help="data set size (indices 0..N-1 of --seed)")
    ap.add_argument("--vae-batch", type=int, default=256)
    ap.add_argument("--unet-batch", type=int, default=512)
    ap.add_argument("--vae-lr", type=float, default=1e-3)
    ap.add_argument("--unet-lr", type=float, default=4e-4)
    ap.add_argument("--ema", type=float, default=0.999)
    ap.add_argument("--bpe", help="open_clip's bpe_simple_vocab_16e6.txt.gz")
    ap.add_argument("--tokenizer", help="a saved CLIP tokenizer folder (default: the shipped one)")
    ap.add_argument("--device", default="cuda" if _has_cuda() else "cpu")
    ap.add_argument("--workers", type=int, default=os.cpu_count() or 1)
    ap.add_argument("--eval-seeds", type=int, default=2, help="seeds per evaluation prompt after training (0: none)")
    ap.add_argument("--save-dtype", default="float16", choices=("float16", "float32"))
    args = ap.parse_args(argv)

    import torch
    from diffusers import StableDiffusionPipeline

    t_start = time.monotonic()
    torch.backends.cuda.matmul.allow_tf32 = True
    torch.backends.cudnn.allow_tf32 = True
    torch.backends.cudnn.benchmark = True
    dev = torch.device(args.device)
    os.makedirs(args.out, exist_ok=True)
    log = LossLog()
    info = {
        "args": vars(args),
        "torch": torch.__version__,
        "device": torch.cuda.get_device_name() if dev.type == "cuda" else "cpu",
    }

    tok = load_tokenizer(args.bpe, args.tokenizer)
    vae, te, unet, scheduler = build_models(tok, args.seed)
    vae, te, unet = vae.to(dev), te.to(dev), unet.to(dev)
    info["params"] = {
        k: sum(p.numel() for p in m.parameters()) for k, m in (("vae", vae), ("text_encoder", te), ("unet", unet))
    }
    print(f"params {info['params']}", flush=True)

    t = time.monotonic()
    images_np, samples = D.render_dataset(args.seed, args.images, workers=args.workers)
    images = torch.from_numpy(images_np).to(dev)
    info["render_s"] = round(time.monotonic() - t, 1)
    print(f"rendered {len(samples)} images in {info['render_s']} s", flush=True)
    budget = args.minutes * 60

    # ---- phase 1: VAE
    total = [args.vae_steps or 0]
    if not args.vae_steps:
        total[0], per = plan_steps(
            vae_step_fn(images, args.vae_batch, args.vae_lr, [10_000], None), [vae], budget * args.vae_fraction
        )
        print(f"vae: {per * 1000:.1f} ms/step -> {total[0]} steps", flush=True)
    torch.manual_seed(args.seed + 10)
    step = vae_step_fn(images, args.vae_batch, args.vae_lr, total, log)([vae])
    t = time.monotonic()
    for i in range(total[0]):
        step(i)
    sync_device()
    info["vae"] = {
        "steps": total[0],
        "batch": args.vae_batch,
        "seconds": round(time.monotonic() - t, 1),
        "final_loss": log.last("vae"),
    }
    vae.eval().requires_grad_(False)

    # ---- latents of the whole data set (posterior mean and std), and the scaling factor
    means, stds = [], []
    with torch.no_grad(), _autocast(dev):
        for a in range(0, images.shape[0], 2048):
            x = images[a : a + 2048].permute(0, 3, 1, 2).float() / 127.5 - 1
            post = vae.encode(x).latent_dist
            means.append(post.mean.float())
            stds.append(post.std.float())
            if a == 0:
                rec = vae.decode(post.mean).sample.float()
                info["vae"]["recon_mae_255"] = float((rec - x).abs().mean() * 127.5)
    lat_mean, lat_std = torch.cat(means), torch.cat(stds)
    scale = float(1.0 / lat_mean.std())
    vae.register_to_config(scaling_factor=scale)
    info["vae"]["scaling_factor"] = scale
    info["vae"]["latent_channel_means"] = [round(float(v), 4) for v in (lat_mean * scale).mean((0, 2, 3))]
    print(f"vae done: {info['vae']}", flush=True)
    del images

    # ---- phase 2: UNet + text encoder
    captions = Captions(samples, tok, dev)
    info["unique_captions"] = len(captions.texts)
    total = [args.unet_steps or 0]
    if not args.unet_steps:
        left = budget - (time.monotonic() - t_start) + info["render_s"]  # rendering is not training time
        total[0], per = plan_steps(
            unet_step_fn(
                lat_mean,
                lat_std,
                scale,
                captions,
                scheduler,
                args.unet_batch,
                args.unet_lr,
                [10_000],
                None,
                args.ema,
                [],
            ),
            [unet, te],
            max(30.0, left),
        )
        print(f"unet: {per * 1000:.1f} ms/step -> {total[0]} steps", flush=True)
    torch.manual_seed(args.seed + 20)
    ema_ref = []
    step = unet_step_fn(
        lat_mean, lat_std, scale, captions, scheduler, args.unet_batch, args.unet_lr, total, log, args.ema, ema_ref
    )([unet, te])
    t = time.monotonic()
    for i in range(total[0]):
        step(i)
    sync_device()
    ema_ref[0].copy_to()
    unet.eval().requires_grad_(False)
    te.eval().requires_grad_(False)
    info["unet"] = {
        "steps": total[0],
        "batch": args.unet_batch,
        "seconds": round(time.monotonic() - t, 1),
        "final_loss": log.last("unet"),
        "ema": args.ema,
    }
    info["train_seconds"] = round(time.monotonic() - t_start, 1)
    print(f"unet done: {info['unet']}", flush=True)

    # ---- save first (the evaluation may fail; the weights must not be lost)
    model_dir = os.path.join(args.out, "shapes")
    pipe = StableDiffusionPipeline(
        vae=vae,
        text_encoder=te,
        tokenizer=tok,
        unet=unet,
        scheduler=scheduler,
        safety_checker=None,
        feature_extractor=None,
        image_encoder=None,
        requires_safety_checker=False,
    )
    save_dtype = getattr(torch, args.save_dtype)
    pipe.to(save_dtype)
    pipe.save_pretrained(model_dir, safe_serialization=True)
    pipe.to(torch.float32)
    log.write_csv(os.path.join(args.out, "loss.csv"))
    plot_losses(log.rows, os.path.join(args.out, "loss.png"))
    _write_json(os.path.join(args.out, "train.json"), info)
    print(f"saved {model_dir} at {time.monotonic() - t_start:.0f} s", flush=True)

    # ---- evaluation (same scoring as testing/test_builtin_shapes.py)
    if args.eval_seeds:
        try:
            pipe.set_progress_bar_config(disable=True)
            acc, rows, imgs = evaluate(pipe, seeds=tuple(range(args.eval_seeds)))
            info["eval"] = {
                "accuracy": acc,
                "n": len(rows),
                "cfg": 5.0,
                "steps": 25,
                "misses": [r for r in rows if not (r["shape_ok"] and r["colour_ok"])][:20],
            }
            grid(imgs[:18]).save(os.path.join(args.out, "samples.png"))
            print(f"eval: {acc}", flush=True)
        except Exception as e:  # noqa: BLE001
            info["eval_error"] = repr(e)
            print(f"evaluation failed: {e!r}", flush=True)
    info["total_seconds"] = round(time.monotonic() - t_start, 1)
    _write_json(os.path.join(args.out, "train.json"), info)
    return 0


def _write_json(path, obj):
    with open(path, "w") as f:
        json.dump(obj, f, indent=2, default=str)


def _has_cuda() -> bool:
    try:
        import torch

        return torch.cuda.is_available()
    except ImportError:
        return False


if __name__ == "__main__":
    sys.exit(main())
