"""Chroma Radiance (lodestones/Chroma1-Radiance): Chroma's transformer in pixel space, with a per-patch NeRF head.

diffusers has no class for it. The facts are AI Toolkit's (extensions_built_in/diffusion_models/chroma/src/radiance.py
and layers.py in ostris/ai-toolkit), whose module tree loads the published file with a strict ``load_state_dict``:

- Chroma's trunk unchanged (19 double and 38 single blocks of 3072, the 5-layer approximator making every block's
  modulation, T5-XXL text through ``txt_in``), here as diffusers' ``ChromaTransformer2DModel`` modules;
- the image enters as 16x16 RGB patches through a strided convolution (``img_in_patch``) instead of ``img_in``;
- no final layer: each patch's trunk output generates, per ``nerf_blocks`` entry, the weights of a small gated MLP
  (``param_generator``) that runs over that patch's 256 pixels, which enter with a DCT-like position code
  (``nerf_image_embedder``); the patches are folded back into the image and a 3x3 convolution
  (``nerf_final_layer_conv``) gives the velocity in RGB.

The published file is in the original (Black Forest Labs) layout: ``from_single_file`` renames the trunk's keys into
diffusers' and keeps the radiance modules' own names. ChromaPipeline samples it unchanged with
``toolkit.models.pixel_decoder.PixelDecoder(8)`` as its VAE: the latents are the image folded 8x8 into 192 channels,
so its 2x2 packing makes one token of each 16x16 patch, 768 values (``in_channels``), and the token grid and
image ids are Flux's at the same size.
"""

from __future__ import annotations

import torch
import torch.nn.functional as F
from diffusers import ChromaTransformer2DModel
from diffusers.configuration_utils import register_to_config
from diffusers.models.modeling_outputs import Transformer2DModelOutput
from torch import nn

FOLD = 8  # PixelDecoder's factor: 8x8 pixels a latent position, 2x2 positions a token


class RMSNorm(nn.Module):
    """RMS norm whose weight keeps the published name, ``scale``."""

    def __init__(self, dim: int):
        super().__init__()
        self.scale = nn.Parameter(torch.ones(dim))

    def forward(self, x):
        return F.rms_norm(x, self.scale.shape, weight=self.scale, eps=1e-6)


class NerfEmbedder(nn.Module):
    """A patch's pixels, each with a 2D cosine code of its place in the patch (frequencies 0..f-1 on both axes,
    damped by 1 / (1 + fx fy)), projected to the NeRF width. Computed in float32, as the original is."""

    def __init__(self, in_channels: int, hidden: int, max_freqs: int):
        super().__init__()
        self.max_freqs = max_freqs
        self.embedder = nn.Sequential(nn.Linear(in_channels + max_freqs**2, hidden))

    def position_code(self, patch: int, device) -> torch.Tensor:
        coords = torch.linspace(0, 1, patch, device=device, dtype=torch.float32)
        y, x = torch.meshgrid(coords, coords, indexing="ij")
        freqs = torch.arange(self.max_freqs, device=device, dtype=torch.float32)
        fx, fy = freqs[None, :, None], freqs[None, None, :]
        code = (
            torch.cos(x.reshape(-1, 1, 1) * fx * torch.pi)
            * torch.cos(y.reshape(-1, 1, 1) * fy * torch.pi)
            / (1 + fx * fy)
        )
        return code.reshape(1, patch * patch, self.max_freqs**2)

    def forward(self, pixels: torch.Tensor) -> torch.Tensor:
        count, positions, _ = pixels.shape
        code = self.position_code(int(positions**0.5), pixels.device).expand(count, -1, -1)
        linear = self.embedder[0]
        x = torch.cat([pixels.float(), code], dim=-1)
        return F.linear(x, linear.weight.float(), linear.bias.float()).to(pixels.dtype)


class NerfGLUBlock(nn.Module):
    """A gated MLP over one patch's pixels whose three matrices come from the trunk's token for that patch
    (columns normalised), with a residual around it."""

    def __init__(self, trunk_width: int, hidden: int, mlp_ratio: int):
        super().__init__()
        self.mlp_ratio = mlp_ratio
        self.param_generator = nn.Linear(trunk_width, 3 * hidden * hidden * mlp_ratio)
        self.norm = RMSNorm(hidden)

    def forward(self, x: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
        count, _, hidden = x.shape
        inner = hidden * self.mlp_ratio
        gate, value, out = self.param_generator(token).chunk(3, dim=-1)
        gate = F.normalize(gate.view(count, hidden, inner), dim=-2)
        value = F.normalize(value.view(count, hidden, inner), dim=-2)
        out = F.normalize(out.view(count, inner, hidden), dim=-2)
        h = self.norm(x)
        return x + torch.bmm(F.silu(torch.bmm(h, gate)) * torch.bmm(h, value), out)


class NerfFinalLayerConv(nn.Module):
    def __init__(self, hidden: int, out_channels: int):
        super().__init__()
        self.norm = RMSNorm(hidden)
        self.conv = nn.Conv2d(hidden, out_channels, kernel_size=3, padding=1)


class _PassTokens(nn.Module):
    """Where Chroma's input projection and final norm and projection were: the radiance modules do their work."""

    def forward(self, x, *args, **kwargs):
        return x


def tokens_to_pixels(tokens: torch.Tensor, rows: int, cols: int) -> torch.Tensor:
    """ChromaPipeline's packed tokens (B, rows x cols, 768) -> the image, B x 3 x 16 rows x 16 cols."""
    b, _, width = tokens.shape
    folded = tokens.view(b, rows, cols, width // 4, 2, 2).permute(0, 3, 1, 4, 2, 5)
    return F.pixel_shuffle(folded.reshape(b, width // 4, rows * 2, cols * 2), FOLD)


def pixels_to_tokens(pixels: torch.Tensor) -> torch.Tensor:
    """The inverse: the image folded 8x8 (``pixel_unshuffle``), then packed 2x2 as ChromaPipeline packs latents."""
    folded = F.pixel_unshuffle(pixels, FOLD)
    b, c, h, w = folded.shape
    packed = folded.view(b, c, h // 2, 2, w // 2, 2).permute(0, 2, 4, 1, 3, 5)
    return packed.reshape(b, (h // 2) * (w // 2), c * 4)


class ChromaRadianceTransformer2DModel(ChromaTransformer2DModel):
    # Chroma's own output shape: the radiance head has none to configure (and the published file no config)
    ignore_for_config = ["patch_size", "out_channels"]
    _skip_layerwise_casting_patterns = ["pos_embed", "norm", "nerf_image_embedder"]

    @register_to_config
    def __init__(
        self,
        pixel_patch: int = 16,
        in_channels: int = 768,  # one token: a 16x16 RGB patch (what ChromaPipeline packs and steps)
        num_layers: int = 19,
        num_single_layers: int = 38,
        attention_head_dim: int = 128,
        num_attention_heads: int = 24,
        joint_attention_dim: int = 4096,
        axes_dims_rope: tuple = (16, 56, 56),
        approximator_num_channels: int = 64,
        approximator_hidden_dim: int = 5120,
        approximator_layers: int = 5,
        nerf_hidden_size: int = 64,
        nerf_mlp_ratio: int = 4,
        nerf_depth: int = 4,
        nerf_max_freqs: int = 8,
    ):
        if in_channels != 3 * pixel_patch**2 or pixel_patch != 2 * FOLD:
            raise ValueError(f"Chroma Radiance takes 16x16 RGB patches, 768 values a token (got {in_channels})")
        super().__init__(
            in_channels=in_channels,
            num_layers=num_layers,
            num_single_layers=num_single_layers,
            attention_head_dim=attention_head_dim,
            num_attention_heads=num_attention_heads,
            joint_attention_dim=joint_attention_dim,
            axes_dims_rope=axes_dims_rope,
            approximator_num_channels=approximator_num_channels,
            approximator_hidden_dim=approximator_hidden_dim,
            approximator_layers=approximator_layers,
        )
        self.x_embedder, self.norm_out, self.proj_out = _PassTokens(), _PassTokens(), _PassTokens()
        self.img_in_patch = nn.Conv2d(3, self.inner_dim, kernel_size=pixel_patch, stride=pixel_patch)
        self.nerf_image_embedder = NerfEmbedder(3, nerf_hidden_size, nerf_max_freqs)
        self.nerf_blocks = nn.ModuleList(
            NerfGLUBlock(self.inner_dim, nerf_hidden_size, nerf_mlp_ratio) for _ in range(nerf_depth)
        )
        self.nerf_final_layer_conv = NerfFinalLayerConv(nerf_hidden_size, 3)

    @classmethod
    def load_config(cls, *args, **kwargs):
        """A latent Chroma config (Chroma1-HD's, from extras_name_or_path: the published file has none) with the
        radiance input; the trunk's widths and depths are the config's."""
        loaded = super().load_config(*args, **kwargs)
        config = loaded[0] if isinstance(loaded, tuple) else loaded
        if config.get("in_channels") != 768:
            config.update(in_channels=768, _class_name=cls.__name__)
            for key in ("patch_size", "out_channels"):
                config.pop(key, None)
        return loaded

    @classmethod
    def from_single_file(cls, path, config=None, subfolder=None, torch_dtype=None, **kwargs):
        """The published file, in the original layout: the trunk renamed (``original_to_diffusers``), the radiance
        modules as they are; anything missing or left over is refused, naming keys."""
        import os

        from accelerate import init_empty_weights
        from safetensors.torch import load_file

        with init_empty_weights():
            module = cls.from_config(cls.load_config(config, subfolder=subfolder))
        state = original_to_diffusers(load_file(path))
        expected = set(module.state_dict())
        missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
        if missing or extra:
            raise ValueError(
                f"{os.path.basename(path)} is not a Chroma Radiance transformer: {len(missing)} of its keys missing "
                f"{missing[:3]}, {len(extra)} unknown {extra[:3]}"
            )
        if torch_dtype is not None:
            state = {k: v.to(torch_dtype) if v.is_floating_point() else v for k, v in state.items()}
        module.load_state_dict(state, strict=True, assign=True)
        return module.eval()

    def forward(
        self,
        hidden_states: torch.Tensor,
        encoder_hidden_states: torch.Tensor = None,
        timestep: torch.Tensor = None,
        img_ids: torch.Tensor = None,
        txt_ids: torch.Tensor = None,
        attention_mask: torch.Tensor = None,
        joint_attention_kwargs=None,
        return_dict: bool = True,
        **kwargs,
    ):
        ids = img_ids[0] if img_ids.ndim == 3 else img_ids
        rows, cols = (int(n) + 1 for n in ids[:, 1:].amax(dim=0).tolist())  # the token grid, from the image ids
        pixels = tokens_to_pixels(hidden_states, rows, cols)
        embedded = self.img_in_patch(pixels.to(self.img_in_patch.weight.dtype)).flatten(2).transpose(1, 2)
        tokens = super().forward(
            embedded,
            encoder_hidden_states=encoder_hidden_states,
            timestep=timestep,
            img_ids=img_ids,
            txt_ids=txt_ids,
            attention_mask=attention_mask,
            joint_attention_kwargs=joint_attention_kwargs,
            return_dict=False,
            **kwargs,
        )[0]
        out = pixels_to_tokens(self.nerf_head(tokens, pixels.to(tokens.dtype)))
        return Transformer2DModelOutput(sample=out) if return_dict else (out,)

    def nerf_head(self, tokens: torch.Tensor, pixels: torch.Tensor) -> torch.Tensor:
        """The trunk's tokens (B, N, width) and the noisy image -> the velocity image, B x 3 x H x W."""
        b, c, height, width = pixels.shape
        patch, count = self.config.pixel_patch, tokens.shape[1]
        patches = F.unfold(pixels, patch, stride=patch).transpose(1, 2)  # B x N x (3 x 16 x 16), channel first
        x = self.nerf_image_embedder(patches.reshape(b * count, c, patch * patch).transpose(1, 2))
        trunk = tokens.reshape(b * count, -1)
        for block in self.nerf_blocks:
            x = block(x, trunk)
        x = self.nerf_final_layer_conv.norm(x)  # (B N) x 256 x hidden
        x = x.transpose(1, 2).reshape(b, count, -1).transpose(1, 2)
        x = F.fold(x, (height, width), patch, stride=patch)
        return self.nerf_final_layer_conv.conv(x)


# The original layout's names for the trunk, and diffusers' (the renames diffusers' own Chroma single-file converter
# makes, loaders/single_file_utils.py convert_chroma_transformer_checkpoint_to_diffusers, without its fixed 3072
# width: fused projections are split by the width read from the file).
_RENAMES = (
    ("txt_in.", "context_embedder."),
    ("distilled_guidance_layer.layers.{}.in_layer.", "distilled_guidance_layer.layers.{}.linear_1."),
    ("distilled_guidance_layer.layers.{}.out_layer.", "distilled_guidance_layer.layers.{}.linear_2."),
    ("distilled_guidance_layer.norms.{}.scale", "distilled_guidance_layer.norms.{}.weight"),
    ("double_blocks.{}.img_attn.norm.query_norm.scale", "transformer_blocks.{}.attn.norm_q.weight"),
    ("double_blocks.{}.img_attn.norm.key_norm.scale", "transformer_blocks.{}.attn.norm_k.weight"),
    ("double_blocks.{}.txt_attn.norm.query_norm.scale", "transformer_blocks.{}.attn.norm_added_q.weight"),
    ("double_blocks.{}.txt_attn.norm.key_norm.scale", "transformer_blocks.{}.attn.norm_added_k.weight"),
    ("double_blocks.{}.img_attn.proj.", "transformer_blocks.{}.attn.to_out.0."),
    ("double_blocks.{}.txt_attn.proj.", "transformer_blocks.{}.attn.to_add_out."),
    ("double_blocks.{}.img_mlp.0.", "transformer_blocks.{}.ff.net.0.proj."),
    ("double_blocks.{}.img_mlp.2.", "transformer_blocks.{}.ff.net.2."),
    ("double_blocks.{}.txt_mlp.0.", "transformer_blocks.{}.ff_context.net.0.proj."),
    ("double_blocks.{}.txt_mlp.2.", "transformer_blocks.{}.ff_context.net.2."),
    ("single_blocks.{}.norm.query_norm.scale", "single_transformer_blocks.{}.attn.norm_q.weight"),
    ("single_blocks.{}.norm.key_norm.scale", "single_transformer_blocks.{}.attn.norm_k.weight"),
    ("single_blocks.{}.linear2.", "single_transformer_blocks.{}.proj_out."),
)
_SPLITS = {  # fused projections -> their parts (the single blocks' fourth part is the MLP's input)
    "double_blocks.{}.img_attn.qkv.": ("attn.to_q.", "attn.to_k.", "attn.to_v."),
    "double_blocks.{}.txt_attn.qkv.": ("attn.add_q_proj.", "attn.add_k_proj.", "attn.add_v_proj."),
    "single_blocks.{}.linear1.": ("attn.to_q.", "attn.to_k.", "attn.to_v.", "proj_mlp."),
}


def original_to_diffusers(state: dict) -> dict:
    """Original-layout Chroma Radiance weights -> this module's names. ComfyUI's ``model.diffusion_model.`` prefix is
    dropped; keys this does not know are returned as they are (the caller refuses what does not match)."""
    import re

    state = {k.removeprefix("model.diffusion_model."): v for k, v in state.items()}
    width = state["txt_in.weight"].shape[0]
    out = {}
    for key, value in state.items():
        index = re.match(r"^(?:double_blocks|single_blocks|distilled_guidance_layer\.(?:layers|norms))\.(\d+)\.", key)
        n = index.group(1) if index else None
        generic = key.replace(f".{n}.", ".{}.", 1) if n is not None else key
        split = next((s for s in _SPLITS if generic.startswith(s)), None)
        if split:
            suffix = generic[len(split) :]
            target = "transformer_blocks" if key.startswith("double") else "single_transformer_blocks"
            parts = _SPLITS[split]
            sizes = [width] * 3 + ([value.shape[0] - 3 * width] if len(parts) == 4 else [])
            for name, piece in zip(parts, torch.split(value, sizes, dim=0)):
                out[f"{target}.{n}.{name}{suffix}"] = piece
            continue
        for old, new in _RENAMES:
            if generic.startswith(old):
                key = new.format(n) + generic[len(old) :]
                break
        out[key] = value
    return out
