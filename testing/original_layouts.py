"""Test fixtures: a diffusers state dict written back in the layout its authors ship, so tests can build
single-file checkpoints offline from tiny models. Each function is the inverse of the diffusers converter named
in its docstring; ``testing/test_single_file.py`` checks that the converter maps its output back exactly."""

import torch

# Wan: diffusers name -> original name, applied in order (convert_wan_transformer_to_diffusers in reverse). The
# image embedder's norms come before the blocks' norm2/norm3 swap; the swap goes through a placeholder.
WAN_TO_ORIGINAL = (
    ("condition_embedder.time_embedder.linear_1", "time_embedding.0"),
    ("condition_embedder.time_embedder.linear_2", "time_embedding.2"),
    ("condition_embedder.text_embedder.linear_1", "text_embedding.0"),
    ("condition_embedder.text_embedder.linear_2", "text_embedding.2"),
    ("condition_embedder.time_proj", "time_projection.1"),
    ("condition_embedder.image_embedder.norm1", "img_emb.proj.0"),
    ("condition_embedder.image_embedder.ff.net.0.proj", "img_emb.proj.1"),
    ("condition_embedder.image_embedder.ff.net.2", "img_emb.proj.3"),
    ("condition_embedder.image_embedder.norm2", "img_emb.proj.4"),
    ("attn1", "self_attn"),
    ("attn2", "cross_attn"),
    (".to_out.0.", ".o."),
    (".to_q.", ".q."),
    (".to_k.", ".k."),
    (".to_v.", ".v."),
    (".add_k_proj.", ".k_img."),
    (".add_v_proj.", ".v_img."),
    (".norm_added_k.", ".norm_k_img."),
    ("ffn.net.0.proj", "ffn.0"),
    ("ffn.net.2", "ffn.2"),
    ("norm2", "norm__placeholder"),
    ("norm3", "norm2"),
    ("norm__placeholder", "norm3"),
)


def wan_original_name(key: str) -> str:
    """A Wan diffusers parameter (or LoRA) name as Wan-AI's code names it."""
    if key == "scale_shift_table":
        return "head.modulation"
    if key.startswith("proj_out."):
        return key.replace("proj_out.", "head.head.", 1)
    key = key.replace(".scale_shift_table", ".modulation")
    for new, old in WAN_TO_ORIGINAL:
        key = key.replace(new, old)
    return key


def wan_original(state: dict) -> dict:
    """Wan 2.1/2.2 transformer as Wan-AI releases it (inverse of ``convert_wan_transformer_to_diffusers``), with
    ComfyUI's ``model.diffusion_model.`` prefix."""
    return {f"model.diffusion_model.{wan_original_name(key)}": value for key, value in state.items()}


def z_image_original(state: dict) -> dict:
    """Z-Image transformer as Tongyi-MAI releases it (inverse of
    ``convert_z_image_transformer_checkpoint_to_diffusers``): fused ``attention.qkv``, ``out``, ``q_norm``."""
    renames = (
        ("all_final_layer.2-1.", "final_layer."),
        ("all_x_embedder.2-1.", "x_embedder."),
        (".attention.to_out.0.", ".attention.out."),
        (".attention.norm_k.", ".attention.k_norm."),
        (".attention.norm_q.", ".attention.q_norm."),
    )
    out = {}
    for key, value in state.items():
        if ".attention.to_k." in key or ".attention.to_v." in key:
            continue
        if key.endswith(".attention.to_q.weight"):
            base = key[: -len("to_q.weight")]
            out[f"{base}qkv.weight"] = torch.cat([value, state[f"{base}to_k.weight"], state[f"{base}to_v.weight"]])
            continue
        for new, old in renames:
            key = key.replace(new, old)
        out[key] = value
    return out


LDM_RESNET = (
    ("norm1", "in_layers.0"),
    ("conv1", "in_layers.2"),
    ("norm2", "out_layers.0"),
    ("conv2", "out_layers.3"),
    ("time_emb_proj", "emb_layers.1"),
    ("conv_shortcut", "skip_connection"),
)
LDM_FIXED = {
    "time_embedding.linear_1": "time_embed.0",
    "time_embedding.linear_2": "time_embed.2",
    "conv_in": "input_blocks.0.0",
    "conv_norm_out": "out.0",
    "conv_out": "out.2",
    "add_embedding.linear_1": "label_emb.0.0",
    "add_embedding.linear_2": "label_emb.0.2",
}


def ldm_unet_original(state: dict, layers_per_block: int) -> dict:
    """An SD 1.x / SDXL UNet as Stability's checkpoints hold it, under ``model.diffusion_model.`` (inverse of
    ``convert_ldm_unet_checkpoint``): input/middle/output blocks numbered as LDM numbers them."""
    per = layers_per_block + 1
    with_attention = {int(k.split(".")[1]) for k in state if k.startswith("up_blocks.") and ".attentions." in k}
    out = {}
    for key, value in state.items():
        parts = key.split(".")
        module, param = ".".join(parts[:-1]), parts[-1]
        if module in LDM_FIXED:
            name = LDM_FIXED[module]
        elif parts[0] == "down_blocks":
            block, kind, j, rest = int(parts[1]), parts[2], int(parts[3]), ".".join(parts[4:-1])
            if kind == "downsamplers":
                name = f"input_blocks.{1 + block * per + layers_per_block}.0.op"
            else:
                name = f"input_blocks.{1 + block * per + j}.{_ldm_inner(kind, rest)}"
        elif parts[0] == "mid_block":
            kind, j, rest = parts[1], int(parts[2]), ".".join(parts[3:-1])
            name = f"middle_block.{1 if kind == 'attentions' else 2 * j}.{_ldm_inner(kind, rest)[2:]}"
        elif parts[0] == "up_blocks":
            block, kind, j, rest = int(parts[1]), parts[2], int(parts[3]), ".".join(parts[4:-1])
            if kind == "upsamplers":
                name = f"output_blocks.{block * per + layers_per_block}.{2 if block in with_attention else 1}.conv"
            else:
                name = f"output_blocks.{block * per + j}.{_ldm_inner(kind, rest)}"
        else:
            raise KeyError(f"no LDM name for {key}")
        out[f"model.diffusion_model.{name}.{param}"] = value
    return out


def _ldm_inner(kind: str, rest: str) -> str:
    """``0.<resnet part>`` or ``1.<attention part>``, the slot inside an LDM block."""
    if kind == "attentions":
        return f"1.{rest}"
    for new, old in LDM_RESNET:
        if rest == new:
            return f"0.{old}"
    raise KeyError(f"no LDM name for resnet part {rest}")


# FLUX.1 in Black Forest Labs' layout: diffusers module -> BFL module (convert_flux_transformer_checkpoint_to_diffusers
# in reverse). q, k, v (and the single blocks' MLP input) are fused back into one tensor, the final norm's halves
# swapped back to (shift, scale).
FLUX_FIXED = {
    "time_text_embed.timestep_embedder.linear_1": "time_in.in_layer",
    "time_text_embed.timestep_embedder.linear_2": "time_in.out_layer",
    "time_text_embed.text_embedder.linear_1": "vector_in.in_layer",
    "time_text_embed.text_embedder.linear_2": "vector_in.out_layer",
    "time_text_embed.guidance_embedder.linear_1": "guidance_in.in_layer",
    "time_text_embed.guidance_embedder.linear_2": "guidance_in.out_layer",
    "context_embedder": "txt_in",
    "x_embedder": "img_in",
    "proj_out": "final_layer.linear",
    "norm_out.linear": "final_layer.adaLN_modulation.1",
}
FLUX_DOUBLE = {
    "norm1.linear": "img_mod.lin",
    "norm1_context.linear": "txt_mod.lin",
    "attn.norm_q": "img_attn.norm.query_norm",
    "attn.norm_k": "img_attn.norm.key_norm",
    "attn.norm_added_q": "txt_attn.norm.query_norm",
    "attn.norm_added_k": "txt_attn.norm.key_norm",
    "ff.net.0.proj": "img_mlp.0",
    "ff.net.2": "img_mlp.2",
    "ff_context.net.0.proj": "txt_mlp.0",
    "ff_context.net.2": "txt_mlp.2",
    "attn.to_out.0": "img_attn.proj",
    "attn.to_add_out": "txt_attn.proj",
}
FLUX_SINGLE = {
    "norm.linear": "modulation.lin",
    "attn.norm_q": "norm.query_norm",
    "attn.norm_k": "norm.key_norm",
    "proj_out": "linear2",
}
FLUX_FUSED = {
    ("transformer_blocks", "img_attn.qkv"): ("attn.to_q", "attn.to_k", "attn.to_v"),
    ("transformer_blocks", "txt_attn.qkv"): ("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"),
    ("single_transformer_blocks", "linear1"): ("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"),
}


def flux_bfl_original(state: dict) -> dict:
    """A FLUX.1 transformer as Black Forest Labs ship ``flux1-dev.safetensors``."""
    out = {}
    blocks = {
        (kind, int(key.split(".")[1]))
        for key in state
        for kind in ("transformer_blocks", "single_transformer_blocks")
        if key.startswith(kind + ".")
    }
    for kind, i in sorted(blocks):
        prefix = f"{'double_blocks' if kind == 'transformer_blocks' else 'single_blocks'}.{i}."
        renames = FLUX_DOUBLE if kind == "transformer_blocks" else FLUX_SINGLE
        for (fused_kind, fused), parts in FLUX_FUSED.items():
            if fused_kind == kind:
                for param in ("weight", "bias"):
                    out[f"{prefix}{fused}.{param}"] = torch.cat([state[f"{kind}.{i}.{p}.{param}"] for p in parts])
        for new, old in renames.items():
            for param in ("weight", "bias"):
                if f"{kind}.{i}.{new}.{param}" in state:
                    name = f"{old}.scale" if "norm." in old and param == "weight" else f"{old}.{param}"
                    out[prefix + name] = state[f"{kind}.{i}.{new}.{param}"]
    for new, old in FLUX_FIXED.items():
        for param in ("weight", "bias"):
            if f"{new}.{param}" in state:
                value = state[f"{new}.{param}"]
                if new == "norm_out.linear":
                    scale, shift = value.chunk(2, dim=0)
                    value = torch.cat([shift, scale])
                out[f"{old}.{param}"] = value
    return out


def ldm_unet_module(module: str, state: dict, layers_per_block: int) -> str:
    """The LDM name of one UNet module (``down_blocks.1.attentions.0.proj_in`` -> ``input_blocks.4.1.proj_in``
    at SDXL's depth), as ``ldm_unet_original`` names its parameters; ``state`` tells which up blocks attend."""
    probe = {k: v for k, v in state.items() if k.startswith("up_blocks.") and ".attentions." in k}
    probe[f"{module}.weight"] = None
    name = next(k for k, v in ldm_unet_original(probe, layers_per_block).items() if v is None)
    return name[len("model.diffusion_model.") : -len(".weight")]


# diffusers' Flux-style block modules -> Black Forest Labs' (fused ones list their parts in order), for LoRAs.
BFL_LORA_DOUBLE = {
    "img_attn.qkv": ("attn.to_q", "attn.to_k", "attn.to_v"),
    "txt_attn.qkv": ("attn.add_q_proj", "attn.add_k_proj", "attn.add_v_proj"),
    "img_attn.proj": ("attn.to_out.0",),
    "txt_attn.proj": ("attn.to_add_out",),
    "img_mlp.0": ("ff.net.0.proj",),
    "img_mlp.2": ("ff.net.2",),
    "txt_mlp.0": ("ff_context.net.0.proj",),
    "txt_mlp.2": ("ff_context.net.2",),
}
BFL_LORA_SINGLE = {"linear1": ("attn.to_q", "attn.to_k", "attn.to_v", "proj_mlp"), "linear2": ("proj_out",)}


# FLUX.2's diffusers blocks name their MLPs linear_in/linear_out and fuse the single blocks' layers already.
FLUX2_LORA_DOUBLE = {
    **BFL_LORA_DOUBLE,
    "img_mlp.0": ("ff.linear_in",),
    "img_mlp.2": ("ff.linear_out",),
    "txt_mlp.0": ("ff_context.linear_in",),
    "txt_mlp.2": ("ff_context.linear_out",),
}
FLUX2_LORA_SINGLE = {"linear1": ("attn.to_qkv_mlp_proj",), "linear2": ("attn.to_out",)}


def bfl_lora(state: dict, double=BFL_LORA_DOUBLE, single=BFL_LORA_SINGLE) -> dict:
    """A diffusers PEFT LoRA over Flux-style blocks written as AI Toolkit writes Chroma's and FLUX.2's:
    ``diffusion_model.`` + Black Forest Labs' names, a fused layer's parts stacked in B over one shared A (the
    parts must share it)."""
    out = {}
    blocks = {(k.split(".")[0], int(k.split(".")[1])) for k in state}
    for kind, i in sorted(blocks):
        bfl = "double_blocks" if kind == "transformer_blocks" else "single_blocks"
        table = double if kind == "transformer_blocks" else single
        for fused, parts in table.items():
            names = [f"{kind}.{i}.{p}" for p in parts]
            if f"{names[0]}.lora_A.weight" not in state:
                continue
            a = state[f"{names[0]}.lora_A.weight"]
            assert all(torch.equal(state[f"{n}.lora_A.weight"], a) for n in names), "fused parts must share A"
            out[f"diffusion_model.{bfl}.{i}.{fused}.lora_A.weight"] = a
            out[f"diffusion_model.{bfl}.{i}.{fused}.lora_B.weight"] = torch.cat(
                [state[f"{n}.lora_B.weight"] for n in names]
            )
    return out
