"""An image-only Qwen2-VL processor for the Qwen-Image edit pipelines.

``transformers.Qwen2VLProcessor`` also requires a video processor, which cannot be built (or loaded) without
torchvision; the edit pipelines only ever pass images. This subclass takes the image processor and tokenizer
and nothing else, so it loads a real checkpoint's ``processor`` folder (its video config is ignored) and builds
the tiny one, with or without torchvision installed. Everything else is Qwen2VLProcessor's own code.
"""
from transformers import Qwen2VLProcessor
from transformers.processing_utils import ProcessorMixin


class QwenVLImageProcessor(Qwen2VLProcessor):
    def __init__(self, image_processor=None, tokenizer=None, chat_template=None, **kwargs):
        self.image_token = getattr(tokenizer, "image_token", None) or "<|image_pad|>"
        self.video_token = getattr(tokenizer, "video_token", None) or "<|video_pad|>"
        self.image_token_id = getattr(tokenizer, "image_token_id", None) or tokenizer.convert_tokens_to_ids(self.image_token)
        self.video_token_id = getattr(tokenizer, "video_token_id", None) or tokenizer.convert_tokens_to_ids(self.video_token)
        ProcessorMixin.__init__(self, image_processor, tokenizer, chat_template=chat_template)
