"""Tiny random-init checkpoints: how tests and the offline demo run every family without downloads.

``tiny:<arch>`` builds the family's tiny pipeline once (its ``build_tiny`` recipe), saves it as an ordinary
diffusers folder in a cache, and from then on it loads through the same ``from_pretrained`` path as a real
model. Recipes keep the production VAE compression (so latent shapes match real models) and shrink widths.
Tokenizers are built from in-memory vocabularies (transformers 5.x constructors take ``vocab``/``merges``), since
nothing may be fetched at test time. Facts behind every number: ref/python-stack.md §3.
"""
from __future__ import annotations

import os
import shutil
import string
import tempfile
from typing import Optional

# Bump when a recipe changes, so stale cached folders are not reused.
RECIPE_VERSION = 1


def cache_root() -> str:
    from toolkit.paths import TOOLKIT_ROOT

    return os.environ.get("AITK_TINY_CACHE") or os.path.join(TOOLKIT_ROOT, ".cache", "tiny")


def tiny_checkpoint(name: str) -> str:
    """Folder of the tiny checkpoint ``name`` (an arch, or ``arch/variant``), built on first use.

    Built into a temp folder and renamed into place, so concurrent processes (one per arch in ``--all``)
    never see a half-written checkpoint."""
    arch, _, variant = name.partition("/")
    folder = os.path.join(cache_root(), f"v{RECIPE_VERSION}", name.replace("/", "__"))
    if os.path.isfile(os.path.join(folder, "model_index.json")):
        return folder
    from toolkit.models.registry import get_model_class

    model_class = get_model_class(arch)
    if not hasattr(model_class, "build_tiny"):
        raise ValueError(f"arch {arch!r} has no tiny recipe")
    os.makedirs(os.path.dirname(folder), exist_ok=True)
    tmp = tempfile.mkdtemp(prefix=".building-", dir=os.path.dirname(folder))
    try:
        pipe = model_class.build_tiny(variant or None)
        pipe.save_pretrained(tmp, safe_serialization=True)
        try:
            os.rename(tmp, folder)
        except OSError:  # another process won the race; its folder is as good as ours
            shutil.rmtree(tmp, ignore_errors=True)
    except BaseException:
        shutil.rmtree(tmp, ignore_errors=True)
        raise
    return folder


# ---------------------------------------------------------------------------------------------- tokenizers
def _bytes_to_unicode() -> dict:
    bs = list(range(ord("!"), ord("~") + 1)) + list(range(ord("¡"), ord("¬") + 1)) + list(range(ord("®"), ord("ÿ") + 1))
    cs = bs[:]
    n = 0
    for b in range(256):
        if b not in bs:
            bs.append(b)
            cs.append(256 + n)
            n += 1
    return dict(zip(bs, [chr(c) for c in cs]))


def clip_tokenizer(model_max_length: int = 77):
    """Character-level CLIP BPE with real CLIP's id layout (byte chars, chars+</w>, then the two specials)."""
    from transformers import CLIPTokenizer

    chars = list(_bytes_to_unicode().values())
    vocab = {c: i for i, c in enumerate(chars)}
    for c in chars:
        vocab[c + "</w>"] = len(vocab)
    vocab["<|startoftext|>"] = len(vocab)
    vocab["<|endoftext|>"] = len(vocab)
    return CLIPTokenizer(vocab=vocab, merges=[], model_max_length=model_max_length)


def t5_tokenizer(model_max_length: int = 512):
    """Unigram T5/UMT5 tokenizer: <pad>=0, </s>=1, <unk>=2, then single characters."""
    from transformers import T5Tokenizer

    pieces = [("<pad>", 0.0), ("</s>", 0.0), ("<unk>", 0.0), ("▁", -2.0)]
    for ch in string.ascii_lowercase + string.ascii_uppercase + string.digits + string.punctuation:
        pieces += [("▁" + ch, -3.0), (ch, -4.0)]
    return T5Tokenizer(vocab=pieces, extra_ids=0, model_max_length=model_max_length)


QWEN_CHAT_TEMPLATE = (
    "{% for message in messages %}<|im_start|>{{ message['role'] }}\n{{ message['content'] }}<|im_end|>\n{% endfor %}"
    "{% if add_generation_prompt %}<|im_start|>assistant\n{% if enable_thinking is defined and enable_thinking is false %}"
    "<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


def qwen2_tokenizer(model_max_length: int = 1024):
    """Byte-level Qwen2/Qwen3 tokenizer with the specials and chat template Qwen-family pipelines rely on."""
    from transformers import Qwen2Tokenizer

    chars = list(_bytes_to_unicode().values())
    tok = Qwen2Tokenizer(vocab={c: i for i, c in enumerate(chars)}, merges=[], model_max_length=model_max_length)
    tok.add_special_tokens({"additional_special_tokens": [
        "<|im_start|>", "<|im_end|>", "<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>",
        "<think>", "</think>"]})
    tok.chat_template = QWEN_CHAT_TEMPLATE
    return tok


# ---------------------------------------------------------------------------------------------- modules
def seeded(seed: int = 0):
    import torch

    torch.manual_seed(seed)


def clip_text_encoder(tok, hidden: int = 32, with_projection: bool = False, projection_dim: int = 32, layers: int = 2):
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    cfg = CLIPTextConfig(vocab_size=len(tok), hidden_size=hidden, intermediate_size=hidden * 2,
                         num_hidden_layers=layers, num_attention_heads=2, max_position_embeddings=77,
                         bos_token_id=tok.bos_token_id, eos_token_id=tok.eos_token_id, pad_token_id=tok.pad_token_id,
                         projection_dim=projection_dim, hidden_act="quick_gelu")
    seeded()
    return (CLIPTextModelWithProjection if with_projection else CLIPTextModel)(cfg).eval()


def t5_text_encoder(tok, d_model: int = 32, layers: int = 2, umt5: bool = False):
    from transformers import T5Config, T5EncoderModel, UMT5Config, UMT5EncoderModel

    kw = dict(vocab_size=len(tok), d_model=d_model, d_kv=8, d_ff=d_model * 2, num_layers=layers, num_heads=4,
              relative_attention_num_buckets=8, relative_attention_max_distance=16, feed_forward_proj="gated-gelu",
              pad_token_id=tok.pad_token_id, eos_token_id=tok.eos_token_id, decoder_start_token_id=0,
              dropout_rate=0.0)
    seeded()
    return (UMT5EncoderModel(UMT5Config(**kw)) if umt5 else T5EncoderModel(T5Config(**kw))).eval()


def vae_kl(latent_channels: int = 4, blocks: int = 4, ch: int = 32, **kw):
    """Four down blocks, as in production, so ``vae_scale_factor`` is the real 8."""
    from diffusers import AutoencoderKL

    seeded()
    return AutoencoderKL(in_channels=3, out_channels=3, down_block_types=["DownEncoderBlock2D"] * blocks,
                         up_block_types=["UpDecoderBlock2D"] * blocks, block_out_channels=[ch] * blocks,
                         layers_per_block=1, latent_channels=latent_channels, norm_num_groups=min(32, ch),
                         sample_size=64, **kw).eval()


def variant_seed(variant: Optional[str]) -> int:
    """Variants (``tiny:sd1/b``) differ only in the denoiser's seed: two fine-tunes of one base."""
    return 0 if not variant else sum(map(ord, variant))
