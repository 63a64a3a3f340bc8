"""The resident inference engine, as an AI Toolkit extension job (``process[0].type: InferenceEngine``).

Kept import-light: extension discovery imports every extension package, and nothing here may pull in torch.
"""

from toolkit.extension import Extension


class InferenceEngineExtension(Extension):
    uid = "InferenceEngine"
    name = "Inference Engine"

    @classmethod
    def get_process(cls):
        from extensions_built_in.inference_engine.InferenceEngine import InferenceEngine

        return InferenceEngine


AI_TOOLKIT_EXTENSIONS = [InferenceEngineExtension]
