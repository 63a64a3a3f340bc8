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
    ("attn1", "self_attn"), ("attn2", "cross_attn"),
    (".to_out.0.", ".o."), (".to_q.", ".q."), (".to_k.", ".k."), (".to_v.", ".v."),
    (".add_k_proj.", ".k_img."), (".add_v_proj.", ".v_img."), (".norm_added_k.", ".norm_k_img."),
    ("ffn.net.0.proj", "ffn.0"), ("ffn.net.2", "ffn.2"),
    ("norm2", "norm__placeholder"), ("norm3", "norm2"), ("norm__placeholder", "norm3"),
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
    renames = (("all_final_layer.2-1.", "final_layer."), ("all_x_embedder.2-1.", "x_embedder."),
               (".attention.to_out.0.", ".attention.out."), (".attention.norm_k.", ".attention.k_norm."),
               (".attention.norm_q.", ".attention.q_norm."))
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
