"""Processor classes for pipelines whose transformers processors cannot be built without torchvision.

transformers 5 requires torchvision for ``Qwen2VLProcessor`` (its mandatory video processor) and for
``PixtralProcessor`` (``@requires(backends=("torchvision", "torch"))``), while the pipelines below only ever
hand them what these subclasses keep. Both load a real checkpoint's processor folder (the parts they do not
keep are ignored) and build the tiny ones, with or without torchvision installed; tokenising, chat templates
and image processing are transformers' own code.
"""

from transformers import Qwen2VLProcessor, Qwen3VLProcessor
from transformers.processing_utils import ProcessorMixin


class QwenVLImageProcessor(Qwen2VLProcessor):
    """Qwen2-VL processor without the video processor: the Qwen-Image edit pipelines pass text and images."""

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        self.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
        self.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
        self.image_token_id = getattr(tokenizer, "image_token_id", None) or tokenizer.convert_tokens_to_ids(
            self.image_token
        )
        self.video_token_id = getattr(tokenizer, "video_token_id", None) or tokenizer.convert_tokens_to_ids(
            self.video_token
        )
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)


class MistralTextProcessor(ProcessorMixin):
    """The text half of FLUX.2 [dev]'s PixtralProcessor: tokenizer + chat template.

    Flux2Pipeline encodes prompts with ``processor.apply_chat_template`` on structured messages
    (``{"type": "text", ...}`` content), which needs the processor's chat template (Mistral-Small-3.1 keeps
    it there, not on the tokenizer). ``apply_chat_template`` and ``__call__`` are ProcessorMixin's, exactly as
    PixtralProcessor inherits them; text-only prompts never reach its image code. Pixtral's settings in
    ``processor_config.json`` (patch size, image tokens) are accepted and ignored. Not supported: prompt
    upsampling with reference images (``caption_upsample_temperature`` + ``image``)."""

    def __init__(self, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(tokenizer, chat_template=chat_template)


class QwenVLTextProcessor(ProcessorMixin):
    """The text half of a Qwen3-VL processor: tokenizer + chat template.

    Nucleus-Image's pipeline formats its prompt with ``processor.apply_chat_template`` (structured message
    content) and tokenises with ``processor(text=...)``; both are ProcessorMixin's, as Qwen3VLProcessor inherits
    them, and text never reaches the image or video processors that Qwen3VLProcessor cannot build without
    torchvision. A release's processor folder loads (its image and video settings are ignored)."""

    def __init__(self, tokenizer=None, chat_template=None, **kwargs):
        super().__init__(tokenizer, chat_template=chat_template)


class Qwen3VLNoVideoProcessor(Qwen3VLProcessor):
    """Qwen3-VL processor without the video processor: MiniMax-H3's text-to-video and keyframe blocks read its
    token ids (``create_mm_token_type_ids``) and process keyframe images, never videos. A release's processor
    folder loads (its video settings are ignored)."""

    TOKENS = {
        "image": "<|image_pad|>",
        "video": "<|video_pad|>",
        "vision_start": "<|vision_start|>",
        "vision_end": "<|vision_end|>",
    }

    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        for kind, default in self.TOKENS.items():  # as Qwen3VLProcessor.__init__ reads them
            token = getattr(tokenizer, f"{kind}_token", None) or default
            setattr(self, f"{kind}_token", token)
            setattr(self, f"{kind}_token_id", tokenizer.convert_tokens_to_ids(token))
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
