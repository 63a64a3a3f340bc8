"""Z-Image L2P (Latent-to-Pixel, arXiv 2605.12013; weights zhen-nan/L2P): Z-Image's transformer moved to pixel space.

What differs from diffusers' ``ZImageTransformer2DModel`` (the facts are AI Toolkit's ZImageL2PModel,
extensions_built_in/diffusion_models/z_image/z_image_l2p_model.py in ostris/ai-toolkit, whose module names the
published weights use):

- the input is RGB, patchified 16x16 (``in_channels`` 3, ``all_patch_size`` [16]): ``all_x_embedder.16-1`` takes
  768 values a token, and the token grid is the latent model's (1024 px: 64 x 64);
- the final layer is gone; ``local_decoder``, a small four-level U-Net, takes the noisy pixels and, at its
  bottleneck, the trunk's image tokens as a feature map (one token per 16x16 block), and predicts the pixels'
  velocity itself.

The trunk, the caption path, the timestep embedding and the call are Z-Image's, so ZImagePipeline drives it with
an identity decoder in place of its VAE (toolkit/models/pixel_decoder.py). The published file ships no config: its
shape is Z-Image(-Turbo)'s transformer config moved to pixels, as AI Toolkit builds it (``load_config``).
"""

from __future__ import annotations

import torch
from diffusers import ZImageTransformer2DModel
from diffusers.configuration_utils import register_to_config
from diffusers.models.modeling_outputs import Transformer2DModelOutput
from torch import nn

PIXEL_SHAPE = {"in_channels": 3, "all_patch_size": [16], "all_f_patch_size": [1]}
# The trunk's final layer, which L2P replaces: a file that still carries it (AI Toolkit drops it on save) loads
# without it.
DEAD_PREFIXES = ("all_final_layer.",)


def _conv_silu(cin: int, cout: int, kernel: int = 3) -> nn.Sequential:
    return nn.Sequential(nn.Conv2d(cin, cout, kernel, padding=kernel // 2), nn.SiLU())


def _up(channels: int) -> nn.Sequential:
    return nn.Sequential(nn.Upsample(scale_factor=2, mode="nearest"), nn.Conv2d(channels, channels, 3, padding=1))


class L2PPixelDecoder(nn.Module):
    """The detail head: four 2x max-pool levels down from the noisy pixels, the trunk's feature map joined at the
    bottleneck (1x1 conv), four nearest-upsampling levels back with skip connections, then a 1x1 conv to RGB."""

    def __init__(self, in_channels: int, cond_channels: int, widths=(64, 128, 256, 512)):
        super().__init__()
        w1, w2, w3, w4 = widths
        self.enc1, self.enc2 = _conv_silu(in_channels, w1), _conv_silu(w1, w2)
        self.enc3, self.enc4 = _conv_silu(w2, w3), _conv_silu(w3, w4)
        self.pool = nn.MaxPool2d(2, stride=2)
        self.bottleneck = _conv_silu(w4 + cond_channels, w4, kernel=1)
        self.up4, self.dec4 = _up(w4), _conv_silu(w4 + w4, w3)
        self.up3, self.dec3 = _up(w3), _conv_silu(w3 + w3, w2)
        self.up2, self.dec2 = _up(w2), _conv_silu(w2 + w2, w1)
        self.up1, self.dec1 = _up(w1), _conv_silu(w1 + w1, w1)
        self.out_conv = nn.Conv2d(w1, in_channels, 1)

    def forward(self, pixels: torch.Tensor, features: torch.Tensor) -> torch.Tensor:
        e1 = self.enc1(pixels)
        e2 = self.enc2(self.pool(e1))
        e3 = self.enc3(self.pool(e2))
        e4 = self.enc4(self.pool(e3))
        low = self.pool(e4)
        if features.shape[-2:] != low.shape[-2:]:
            features = nn.functional.interpolate(features, size=low.shape[-2:], mode="nearest")
        x = self.bottleneck(torch.cat([low, features.to(low.dtype)], dim=1))
        for up, dec, skip in ((self.up4, self.dec4, e4), (self.up3, self.dec3, e3), (self.up2, self.dec2, e2)):
            x = dec(torch.cat([up(x), skip], dim=1))
        x = self.dec1(torch.cat([self.up1(x), e1], dim=1))
        return self.out_conv(x)


class _ImageTokens(nn.Module):
    """Stands where the trunk's final layer was: the tokens go on unchanged (``unpatchify`` makes them a map)."""

    def forward(self, x, c=None, **kwargs):
        return x


class ZImageL2PTransformer2DModel(ZImageTransformer2DModel):
    _skip_layerwise_casting_patterns = ["t_embedder", "cap_embedder", "local_decoder"]

    @register_to_config
    def __init__(
        self,
        all_patch_size=(16,),
        all_f_patch_size=(1,),
        in_channels=3,
        dim=3840,
        n_layers=30,
        n_refiner_layers=2,
        n_heads=30,
        n_kv_heads=30,
        norm_eps=1e-5,
        qk_norm=True,
        cap_feat_dim=2560,
        siglip_feat_dim=None,
        rope_theta=256.0,
        t_scale=1000.0,
        axes_dims=(32, 48, 48),
        axes_lens=(1024, 512, 512),
        decoder_widths=(64, 128, 256, 512),  # the published head's; the tiny checkpoint narrows them
    ) -> None:
        super().__init__(
            all_patch_size=all_patch_size,
            all_f_patch_size=all_f_patch_size,
            in_channels=in_channels,
            dim=dim,
            n_layers=n_layers,
            n_refiner_layers=n_refiner_layers,
            n_heads=n_heads,
            n_kv_heads=n_kv_heads,
            norm_eps=norm_eps,
            qk_norm=qk_norm,
            cap_feat_dim=cap_feat_dim,
            siglip_feat_dim=siglip_feat_dim,
            rope_theta=rope_theta,
            t_scale=t_scale,
            axes_dims=axes_dims,
            axes_lens=axes_lens,
        )
        self.all_final_layer = nn.ModuleDict({key: _ImageTokens() for key in self.all_final_layer})
        self.local_decoder = L2PPixelDecoder(in_channels, dim, tuple(decoder_widths))

    @classmethod
    def load_config(cls, *args, **kwargs):
        """A latent Z-Image config (the published file's, read from extras_name_or_path) moved to pixels."""
        loaded = super().load_config(*args, **kwargs)
        config = loaded[0] if isinstance(loaded, tuple) else loaded
        if config.get("in_channels") != PIXEL_SHAPE["in_channels"]:
            config.update(PIXEL_SHAPE, _class_name=cls.__name__)
        return loaded

    @classmethod
    def from_single_file(cls, path, config=None, subfolder=None, torch_dtype=None, **kwargs):
        """The published file holds the transformer in these module names; a copy that still has the trunk's unused
        final layer (``DEAD_PREFIXES``) loads without it. Anything else missing or extra is refused, naming keys."""
        import os

        from accelerate import init_empty_weights
        from safetensors.torch import load_file

        with init_empty_weights():
            module = cls.from_config(cls.load_config(config, subfolder=subfolder))
        state = {k: v for k, v in load_file(path).items() if not k.startswith(DEAD_PREFIXES)}
        expected = set(module.state_dict())
        missing, extra = sorted(expected - set(state)), sorted(set(state) - expected)
        if missing or extra:
            raise ValueError(
                f"{os.path.basename(path)} is not a Z-Image L2P transformer: {len(missing)} of its keys missing "
                f"{missing[:3]}, {len(extra)} unknown {extra[:3]}"
            )
        if torch_dtype is not None:
            state = {k: v.to(torch_dtype) if v.is_floating_point() else v for k, v in state.items()}
        module.load_state_dict(state, strict=True, assign=True)
        return module.eval()

    def unpatchify(self, x, size, patch_size, f_patch_size, x_pos_offsets=None):
        """Each item's image tokens as a feature map, dim x H/p x W/p (the image tokens lead the unified sequence)."""
        maps = []
        for tokens, (frames, height, width) in zip(x, size):
            grid = (frames // f_patch_size, height // patch_size, width // patch_size)
            count = grid[0] * grid[1] * grid[2]
            maps.append(tokens[:count].view(*grid, tokens.shape[-1])[0].permute(2, 0, 1))
        return maps

    def forward(
        self,
        x,
        t,
        cap_feats,
        return_dict: bool = True,
        controlnet_block_samples=None,
        siglip_feats=None,
        image_noise_mask=None,
        patch_size=None,
        f_patch_size: int = 1,
        joint_attention_kwargs=None,
    ):
        if isinstance(x[0], list):
            raise ValueError("Z-Image L2P takes one image per prompt (no omni inputs)")
        patch_size = patch_size or self.config.all_patch_size[0]  # ZImagePipeline passes none
        noisy = torch.stack([item[:, 0] for item in x])  # C x 1 x H x W items -> B x C x H x W
        features = super().forward(
            x,
            t,
            cap_feats,
            return_dict=False,
            controlnet_block_samples=controlnet_block_samples,
            patch_size=patch_size,
            f_patch_size=f_patch_size,
            joint_attention_kwargs=joint_attention_kwargs,
        )[0]
        out = list(self.local_decoder(noisy, torch.stack(features)).unsqueeze(2).unbind(0))
        return Transformer2DModelOutput(sample=out) if return_dict else (out,)
