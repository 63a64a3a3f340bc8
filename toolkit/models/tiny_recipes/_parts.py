"""What the tiny recipes share: tokenizers built from in-memory vocabularies (transformers 5.x constructors take
``vocab``/``merges``; nothing may be fetched at test time), small text and vision encoders, a KL VAE, and seeding.
Fixtures, not the model: only recipes and tests import this (toolkit/models/tiny.py finds and caches recipes)."""

from __future__ import annotations

import string
from typing import Optional


# ---------------------------------------------------------------------------------------------- tokenizers
def bytes_to_unicode() -> dict:
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

    chars = list(bytes_to_unicode().values())
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
    "{% if add_generation_prompt %}<|im_start|>assistant\n"
    "{% if enable_thinking is defined and enable_thinking is false %}<think>\n\n</think>\n\n{% endif %}{% endif %}"
)


def qwen2_tokenizer(model_max_length: int = 1024):
    """Byte-level Qwen2/Qwen3 tokenizer with the specials and chat template Qwen-family pipelines rely on."""
    from transformers import Qwen2Tokenizer

    chars = list(bytes_to_unicode().values())
    tok = Qwen2Tokenizer(vocab={c: i for i, c in enumerate(chars)}, merges=[], model_max_length=model_max_length)
    tok.add_special_tokens(
        {
            "additional_special_tokens": [
                "<|im_start|>",
                "<|im_end|>",
                "<|vision_start|>",
                "<|vision_end|>",
                "<|image_pad|>",
                "<|video_pad|>",
                "<think>",
                "</think>",
            ]
        }
    )
    tok.chat_template = QWEN_CHAT_TEMPLATE
    return tok


# ---------------------------------------------------------------------------------------------- modules
def seeded(seed: int = 0):
    import torch

    torch.manual_seed(seed)


def drawn_where_zero(module, std: float = 0.02):
    """Weights the class starts at zero (adaLN-Zero gates, a zero final projection) drawn small instead: a tiny
    denoiser that outputs zero leaves its latents as they were, so a sampler or a schedule would change nothing a
    test can see."""
    import torch

    with torch.no_grad():
        for param in module.parameters():
            if not param.any():
                param.normal_(0.0, std)
    return module


def clip_text_encoder(tok, hidden: int = 32, with_projection: bool = False, projection_dim: int = 32, layers: int = 2):
    from transformers import CLIPTextConfig, CLIPTextModel, CLIPTextModelWithProjection

    cfg = CLIPTextConfig(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=2,
        max_position_embeddings=77,
        bos_token_id=tok.bos_token_id,
        eos_token_id=tok.eos_token_id,
        pad_token_id=tok.pad_token_id,
        projection_dim=projection_dim,
        hidden_act="quick_gelu",
    )
    seeded()
    return (CLIPTextModelWithProjection if with_projection else CLIPTextModel)(cfg).eval()


def t5_text_encoder(tok, d_model: int = 32, layers: int = 2, umt5: bool = False):
    from transformers import T5Config, T5EncoderModel, UMT5Config, UMT5EncoderModel

    kw = dict(
        vocab_size=len(tok),
        d_model=d_model,
        d_kv=8,
        d_ff=d_model * 2,
        num_layers=layers,
        num_heads=4,
        relative_attention_num_buckets=8,
        relative_attention_max_distance=16,
        feed_forward_proj="gated-gelu",
        pad_token_id=tok.pad_token_id,
        eos_token_id=tok.eos_token_id,
        decoder_start_token_id=0,
        dropout_rate=0.0,
    )
    seeded()
    return (UMT5EncoderModel(UMT5Config(**kw)) if umt5 else T5EncoderModel(T5Config(**kw))).eval()


def vae_kl(latent_channels: int = 4, blocks: int = 4, ch: int = 32, **kw):
    """Four down blocks, as in production, so ``vae_scale_factor`` is the real 8."""
    from diffusers import AutoencoderKL

    seeded()
    return AutoencoderKL(
        in_channels=3,
        out_channels=3,
        down_block_types=["DownEncoderBlock2D"] * blocks,
        up_block_types=["UpDecoderBlock2D"] * blocks,
        block_out_channels=[ch] * blocks,
        layers_per_block=1,
        latent_channels=latent_channels,
        norm_num_groups=min(32, ch),
        sample_size=64,
        **kw,
    ).eval()


def variant_seed(variant: Optional[str]) -> int:
    """Variants (``tiny:sd1/b``) differ only in the denoiser's seed: two fine-tunes of one base."""
    return 0 if not variant else sum(map(ord, variant))


# ---------------------------------------------------------------------------------------------- video/audio helpers
# Appended for the video and audio families (wan21_i2v, ltx2, hunyuan_video, ...).
def clip_vision_encoder(hidden: int = 32, image_size: int = 32, patch_size: int = 8, layers: int = 2):
    """Tiny ``CLIPVisionModel`` and a matching ``CLIPImageProcessor`` (resize + centre crop to ``image_size``,
    OpenAI mean/std): the image-encoder pair Wan 2.1 I2V (and IP-Adapter-style families) load."""
    from transformers import CLIPImageProcessor, CLIPVisionConfig, CLIPVisionModel

    cfg = CLIPVisionConfig(
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        projection_dim=hidden,
        num_hidden_layers=layers,
        num_attention_heads=2,
        image_size=image_size,
        patch_size=patch_size,
        hidden_act="quick_gelu",
    )
    seeded()
    encoder = CLIPVisionModel(cfg).eval()
    processor = CLIPImageProcessor(
        size={"shortest_edge": image_size}, crop_size={"height": image_size, "width": image_size}
    )
    return encoder, processor


def gemma_tokenizer(model_max_length: int = 1024):
    """SentencePiece-style Gemma/Gemma3 tokenizer (▁ for spaces, <0xNN> byte fallback, turn and image tokens),
    character-level with no merges."""
    from transformers import GemmaTokenizer

    vocab = {}
    for t in [
        "<pad>",
        "<eos>",
        "<bos>",
        "<unk>",
        "<mask>",
        "<start_of_turn>",
        "<end_of_turn>",
        "<start_of_image>",
        "<end_of_image>",
        "<image_soft_token>",
    ]:
        vocab[t] = len(vocab)
    for b in range(256):
        vocab[f"<0x{b:02X}>"] = len(vocab)
    for ch in "▁" + string.ascii_letters + string.digits + string.punctuation:
        if ch not in vocab:
            vocab[ch] = len(vocab)
    return GemmaTokenizer(vocab=vocab, merges=[], model_max_length=model_max_length)


# ---------------------------------------------------------------------------------------------- image helpers
# Appended for the image families (zimage, flux2_klein_*, qwen_image*, ...).
def qwen3_text_encoder(
    tok, hidden: int = 32, layers: int = 2, heads: int = 2, kv_heads: int = 2, causal_lm: bool = False
):
    """Tiny ``Qwen3Model`` (Z-Image reads ``hidden_states[-2]``) or ``Qwen3ForCausalLM`` (Flux.2 Klein stacks
    three of its hidden states). bos/eos/pad are the tokenizer's, so the config warns about nothing."""
    from transformers import Qwen3Config, Qwen3ForCausalLM, Qwen3Model

    eos = tok.convert_tokens_to_ids("<|im_end|>")
    cfg = Qwen3Config(
        vocab_size=len(tok),
        hidden_size=hidden,
        intermediate_size=hidden * 2,
        num_hidden_layers=layers,
        num_attention_heads=heads,
        num_key_value_heads=kv_heads,
        head_dim=hidden // heads,
        max_position_embeddings=1024,
        tie_word_embeddings=causal_lm,
        bos_token_id=tok.pad_token_id,
        eos_token_id=eos,
        pad_token_id=tok.pad_token_id,
    )
    seeded()
    return (Qwen3ForCausalLM if causal_lm else Qwen3Model)(cfg).eval()


def qwen25_vl_text_encoder(tok, hidden: int = 16, layers: int = 2):
    """Tiny ``Qwen2_5_VLForConditionalGeneration`` (Qwen-Image's text encoder; the edit pipelines also run its
    vision tower on the control image). Vision/image token ids point at the tiny tokenizer's specials."""
    from transformers import Qwen2_5_VLConfig, Qwen2_5_VLForConditionalGeneration

    ids = {
        t: tok.convert_tokens_to_ids(t)
        for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>", "<|video_pad|>", "<|im_end|>")
    }
    cfg = Qwen2_5_VLConfig(
        text_config=dict(
            hidden_size=hidden,
            intermediate_size=hidden,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=2,
            vocab_size=len(tok),
            rope_theta=1e6,
            # mrope sections sum to head_dim / 2 (16 / 2 heads = 8 -> 4)
            rope_scaling={"mrope_section": [1, 1, 2], "rope_type": "default", "type": "default"},
            bos_token_id=tok.pad_token_id,
            eos_token_id=ids["<|im_end|>"],
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(depth=1, hidden_size=16, intermediate_size=16, num_heads=2, out_hidden_size=hidden),
        vocab_size=len(tok),
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
        image_token_id=ids["<|image_pad|>"],
        video_token_id=ids["<|video_pad|>"],
    )
    seeded()
    return Qwen2_5_VLForConditionalGeneration(cfg).eval()


def qwen2_vl_processor(tok, max_pixels: int = 56 * 56):
    """The edit pipelines' processor: Qwen2-VL image processing (14 px patches, 2x2 merge) + the tokenizer.
    ``max_pixels`` keeps the tiny vision tower's input to a few patches whatever the control image's size."""
    from transformers import Qwen2VLImageProcessor

    from toolkit.models.processors import QwenVLImageProcessor

    image_processor = Qwen2VLImageProcessor(min_pixels=28 * 28, max_pixels=max_pixels)
    return QwenVLImageProcessor(image_processor=image_processor, tokenizer=tok)


def glm4_tokenizer(model_max_length: int = 1024):
    """Byte-level BPE like GLM-4's (CogView4), whose post-processor prefixes ``[gMASK]<sop>``: so an empty
    negative prompt still encodes to tokens, as with the real tokenizer. Loads back through AutoTokenizer."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    specials = [
        "<|endoftext|>",
        "[MASK]",
        "[gMASK]",
        "[sMASK]",
        "<sop>",
        "<eop>",
        "<|system|>",
        "<|user|>",
        "<|assistant|>",
        "<|observation|>",
    ]
    for t in specials:
        vocab[t] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.TemplateProcessing(
        single="[gMASK] <sop> $A",
        pair="[gMASK] <sop> $A $B",
        special_tokens=[("[gMASK]", vocab["[gMASK]"]), ("<sop>", vocab["<sop>"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        pad_token="<|endoftext|>",
        eos_token="<|endoftext|>",
        additional_special_tokens=specials[1:],
        padding_side="left",
        model_max_length=model_max_length,
    )


def llama3_bos_tokenizer(model_max_length: int = 128):
    """Llama 3-style fast tokenizer for HiDream's fourth text encoder: byte-level, prefixes
    ``<|begin_of_text|>`` like the real one, eos ``<|eot_id|>`` (HiDreamImagePipeline pads with the eos token).
    Loads back through AutoTokenizer. (``llama3_tokenizer`` below is the video families' Qwen2-class one.)"""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers, processors
    from transformers import PreTrainedTokenizerFast

    vocab = {c: i for i, c in enumerate(bytes_to_unicode().values())}
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    for t in specials:
        vocab[t] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    backend.post_processor = processors.TemplateProcessing(
        single="<|begin_of_text|> $A",
        pair="<|begin_of_text|> $A $B",
        special_tokens=[("<|begin_of_text|>", vocab["<|begin_of_text|>"])],
    )
    return PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<|begin_of_text|>",
        eos_token="<|eot_id|>",
        additional_special_tokens=specials[1:],
        model_max_length=model_max_length,
    )


def llama3_tokenizer(words=(), model_max_length: int = 1024):
    """Byte-level BPE like Llama 3 (tiktoken-style pieces, ``Ġ`` for a leading space) with Llama 3's header and
    turn specials. Text is split into bytes except the strings in ``words``, which become single tokens (merged
    left to right): that lets a family match the token count a real prompt template has."""
    from transformers import Qwen2Tokenizer

    b2u = bytes_to_unicode()
    vocab = {c: i for i, c in enumerate(b2u.values())}
    merges = []
    for word in words:
        piece = "".join(b2u[b] for b in word.encode())
        for i in range(1, len(piece)):
            if piece[: i + 1] not in vocab:
                vocab[piece[: i + 1]] = len(vocab)
                merges.append((piece[:i], piece[i]))
    specials = ["<|begin_of_text|>", "<|end_of_text|>", "<|start_header_id|>", "<|end_header_id|>", "<|eot_id|>"]
    for s in specials:
        vocab[s] = len(vocab)
    tok = Qwen2Tokenizer(
        vocab=vocab,
        merges=merges,
        unk_token="<|end_of_text|>",
        bos_token="<|begin_of_text|>",
        eos_token="<|eot_id|>",
        pad_token="<|end_of_text|>",
        model_max_length=model_max_length,
    )
    tok.add_special_tokens({"additional_special_tokens": specials[2:]})
    return tok


MISTRAL_CHAT_TEMPLATE = (
    "{{ bos_token }}{% for message in messages %}"
    "{% if message['content'] is string %}{% set text = message['content'] %}"
    "{% else %}{% set text = message['content'] | selectattr('type', 'equalto', 'text') | map(attribute='text')"
    " | join('') %}{% endif %}"
    "{% if message['role'] == 'system' %}[SYSTEM_PROMPT]{{ text }}[/SYSTEM_PROMPT]"
    "{% elif message['role'] == 'user' %}[INST]{{ text }}[/INST]"
    "{% elif message['role'] == 'assistant' %}{{ text }}{{ eos_token }}{% endif %}{% endfor %}"
)


def mistral_text_processor(model_max_length: int = 1024):
    """FLUX.2 [dev]'s processor, text half: a byte-level tokenizer with Mistral's control tokens at their real
    ids ([INST]=3, [IMG]=10, <pad>=11, [SYSTEM_PROMPT]=17) and a Mistral-Small-3.1-style chat template that
    reads structured message content."""
    from tokenizers import Tokenizer, decoders, models, pre_tokenizers
    from transformers import PreTrainedTokenizerFast

    from toolkit.models.processors import MistralTextProcessor

    specials = [
        "<unk>",
        "<s>",
        "</s>",
        "[INST]",
        "[/INST]",
        "[AVAILABLE_TOOLS]",
        "[/AVAILABLE_TOOLS]",
        "[TOOL_RESULTS]",
        "[/TOOL_RESULTS]",
        "[TOOL_CALLS]",
        "[IMG]",
        "<pad>",
        "[IMG_BREAK]",
        "[IMG_END]",
        "[PREFIX]",
        "[MIDDLE]",
        "[SUFFIX]",
        "[SYSTEM_PROMPT]",
        "[/SYSTEM_PROMPT]",
    ]
    vocab = {t: i for i, t in enumerate(specials)}
    for c in bytes_to_unicode().values():
        vocab[c] = len(vocab)
    backend = Tokenizer(models.BPE(vocab=vocab, merges=[]))
    backend.pre_tokenizer = pre_tokenizers.ByteLevel(add_prefix_space=False, use_regex=True)
    backend.decoder = decoders.ByteLevel()
    tok = PreTrainedTokenizerFast(
        tokenizer_object=backend,
        bos_token="<s>",
        eos_token="</s>",
        unk_token="<unk>",
        pad_token="<pad>",
        additional_special_tokens=specials[3:],
        model_max_length=model_max_length,
    )
    return MistralTextProcessor(tokenizer=tok, chat_template=MISTRAL_CHAT_TEMPLATE)


def mistral3_text_encoder(tok, hidden: int = 16, layers: int = 31):
    """Tiny ``Mistral3ForConditionalGeneration`` (FLUX.2 [dev]'s text encoder; the Pixtral vision tower is built
    but text-only prompts never run it). 31 layers: the pipeline stacks hidden states 10, 20 and 30."""
    from transformers import Mistral3Config, Mistral3ForConditionalGeneration

    cfg = Mistral3Config(
        text_config=dict(
            model_type="mistral",
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=1,
            head_dim=hidden // 2,
            max_position_embeddings=1024,
            bos_token_id=tok.bos_token_id,
            eos_token_id=tok.eos_token_id,
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(
            model_type="pixtral",
            hidden_size=16,
            intermediate_size=32,
            num_hidden_layers=1,
            num_attention_heads=2,
            head_dim=8,
            image_size=32,
            patch_size=16,
        ),
        image_token_index=tok.convert_tokens_to_ids("[IMG]"),
        spatial_merge_size=2,
    )
    seeded()
    return Mistral3ForConditionalGeneration(cfg).eval()


def qwen3_vl(tok, hidden: int = 16, layers: int = 2, kv_heads: int = 2, causal_lm: bool = False):
    """A Qwen3-VL text encoder (``Qwen3VLModel``, or ``Qwen3VLForConditionalGeneration`` with ``causal_lm``): the
    text stack with interleaved M-RoPE (sections summing to half the head width) and a one-block vision tower that
    text prompts never run. Krea 2, Ideogram 4 and Nucleus-Image encode with it; ``tok`` is ``qwen2_tokenizer()``."""
    from transformers import Qwen3VLConfig, Qwen3VLForConditionalGeneration, Qwen3VLModel

    ids = {t: tok.convert_tokens_to_ids(t) for t in ("<|vision_start|>", "<|vision_end|>", "<|image_pad|>")}
    cfg = Qwen3VLConfig(
        text_config=dict(
            vocab_size=len(tok),
            hidden_size=hidden,
            intermediate_size=hidden * 2,
            num_hidden_layers=layers,
            num_attention_heads=2,
            num_key_value_heads=kv_heads,
            head_dim=hidden // 2,
            rope_parameters=dict(
                rope_type="default", rope_theta=5000000.0, mrope_section=[2, 1, 1], mrope_interleaved=True
            ),
            pad_token_id=tok.pad_token_id,
        ),
        vision_config=dict(
            depth=1,
            hidden_size=16,
            intermediate_size=16,
            num_heads=2,
            out_hidden_size=hidden,
            deepstack_visual_indexes=[0],
        ),
        image_token_id=ids["<|image_pad|>"],
        vision_start_token_id=ids["<|vision_start|>"],
        vision_end_token_id=ids["<|vision_end|>"],
    )
    seeded()
    return (Qwen3VLForConditionalGeneration if causal_lm else Qwen3VLModel)(cfg).eval()
