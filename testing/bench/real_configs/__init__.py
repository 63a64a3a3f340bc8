"""Real architecture configs per family: the values of each model's published ``config.json`` that differ from
its tiny checkpoint. Every entry names its source (the model card repository and file).

``PARAMS`` holds each component's published parameter count (billions), which ``testing/test_real_configs.py``
checks the configs against on meta tensors, so a wrong width or depth fails on a CPU, not after GPU time.
"""
from testing.bench.real_configs import audio_hunyuan, image, image_large, video

REAL = {**image.REAL, **image_large.REAL, **video.REAL, **audio_hunyuan.REAL}
PARAMS = {**image.PARAMS, **image_large.PARAMS, **video.PARAMS, **audio_hunyuan.PARAMS}
