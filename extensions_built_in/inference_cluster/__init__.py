"""Several engine replicas behind one endpoint on Ray Serve (``process[0].type: InferenceCluster``).

Kept import-light: extension discovery imports every extension package, and nothing here may pull in Ray or torch.
"""

from toolkit.extension import Extension


class InferenceClusterExtension(Extension):
    uid = "InferenceCluster"
    name = "Inference Cluster"

    @classmethod
    def get_process(cls):
        from extensions_built_in.inference_cluster.InferenceCluster import InferenceCluster

        return InferenceCluster


AI_TOOLKIT_EXTENSIONS = [InferenceClusterExtension]
