"""The cluster as a job process: Ray, the engine replicas on Ray Serve, the ingress, engine.json.

To the UI and to clients it is an engine job: the same Job-row handling, the same engine.json (host, port, token,
pid, url, output_folder) in its job folder, the same HTTP API, the same stop path. So it is an
``InferenceEngine`` whose ``run`` starts replicas instead of an engine: every replica runs a real engine job
(replica.py) with this job's ``engine:`` settings, and the ingress (ingress.py) answers for all of them.

Stopping (Job.stop, SIGINT, SIGTERM): engine.json goes first; each replica stops its engine, whose streams end
with its own ``error`` frame (relayed to the clients); the ingress stops; Serve removes the replicas; Ray stops
if this job started it.
"""

from __future__ import annotations

import asyncio
import math
import os
import secrets
import signal
import time

from extensions_built_in.inference_cluster.engine_process import STOP_GRACE_S, TOOLKIT_ROOT
from extensions_built_in.inference_engine.InferenceEngine import (
    InferenceEngine,
    _raise_keyboard_interrupt,
    uninterruptible,
)

DEPLOYMENT = "EngineReplica"
ROUTER_CLASS = "extensions_built_in.inference_cluster.router.ResidencyRouter"
MAX_ONGOING_REQUESTS = 1024  # streams, waits and reads at once per replica; the engine's max_queue bounds the work
ROUTER_READY_S = 60.0


class InferenceCluster(InferenceEngine):
    def __init__(self, process_id, job, config):
        super().__init__(process_id, job, config)
        self.replicas = int(self.get_conf("cluster.replicas", 2))
        self.gpus_per_replica = float(self.get_conf("cluster.gpus_per_replica", 0))
        self.cpus_per_replica = float(self.get_conf("cluster.cpus_per_replica", 1))
        self.routing = str(self.get_conf("cluster.routing", "residency"))
        self.stats_period_s = float(self.get_conf("cluster.stats_period_s", 1.0))
        self.request_s = float(self.get_conf("cluster.typical_request_s", 10.0))
        self.swap_s = float(self.get_conf("cluster.typical_swap_s", 30.0))
        self.start_timeout_s = float(self.get_conf("cluster.start_timeout_s", 600))
        self.ray_address = self.get_conf("ray.address")
        self.ray_num_cpus = self.get_conf("ray.num_cpus")
        self.app_name = f"aitk_{job.name}"
        if self.routing not in ("residency", "random"):
            raise ValueError(f"cluster.routing is 'residency' or 'random', not {self.routing!r}")
        if self.gpus_per_replica == 0:
            self.device_name = "cpu"

    def run(self):
        from ray import serve

        self.claim_folders()  # before a replica is given the output folder or an upload lands (folders.py)
        self.ui.update_status("running", "Starting Ray")
        self.ui.start_stop_watcher()
        started_ray = self.start_ray()
        previous_sigterm = signal.signal(signal.SIGTERM, _raise_keyboard_interrupt)  # after ray.init, which sets one
        os.makedirs(self.job_folder, exist_ok=True)
        replicas = server = None
        try:
            self.ui.update(info=f"Starting {self.replicas} engine replicas")
            replicas = self.deploy()
            server = self.serve_ingress(replicas)
            self.ui.update(info=f"Serving {self.replicas} replicas ({self.routing} routing)")
            while not self.stop_event.is_set():
                time.sleep(0.5)
        finally:
            with uninterruptible(previous_sigterm):
                self.ui.stop_watcher()  # acknowledges the stop: its repeated SIGINTs end, ignored from here on
                self.remove_engine_json()
                if replicas is not None:
                    asyncio.run(replicas.each("stop_engine", timeout=STOP_GRACE_S + 5))
                if server is not None:
                    server.stop()
                self.stop_serve(started_ray, serve)

    def start_ray(self) -> bool:
        """Join ``ray.address``, or start Ray here (then this job also stops it). Replicas import this
        repository's code: it must be at the same path on every node (docs/SCALING.md)."""
        import logging

        import ray

        runtime_env = {"env_vars": worker_env(os.environ)}
        if self.ray_address:
            ray.init(address=self.ray_address, runtime_env=runtime_env, logging_level=logging.WARNING)
            return False
        num_cpus = self.ray_num_cpus or max(os.cpu_count() or 1, math.ceil(self.replicas * self.cpus_per_replica))
        ray.init(num_cpus=num_cpus, include_dashboard=False, runtime_env=runtime_env, logging_level=logging.WARNING)
        return True

    def deploy(self):
        """The replicas (each starts its engine before Serve counts it as running), then the router's view."""
        from ray import serve
        from ray.serve.config import RequestRouterConfig

        from extensions_built_in.inference_cluster.replica import EngineReplica
        from extensions_built_in.inference_cluster.replica_client import ReplicaClient

        serve.start(proxy_location="Disabled", logging_config={"log_level": "WARNING", "enable_access_log": False})
        router = RequestRouterConfig(
            request_router_class=ROUTER_CLASS,
            request_router_kwargs={"policy": self.routing, "request_s": self.request_s, "swap_s": self.swap_s},
            request_routing_stats_period_s=self.stats_period_s,
            request_routing_stats_timeout_s=10,
        )
        deployment = serve.deployment(EngineReplica).options(
            name=DEPLOYMENT,
            num_replicas=self.replicas,
            ray_actor_options=self.replica_resources(),
            max_ongoing_requests=MAX_ONGOING_REQUESTS,
            health_check_period_s=2,
            health_check_timeout_s=30,
            graceful_shutdown_timeout_s=STOP_GRACE_S + 5,
            max_constructor_retry_count=3,
            request_router_config=router,
            logging_config={"log_level": "WARNING", "enable_access_log": False},
        )
        handle = serve.run(deployment.bind(self.replica_settings()), name=self.app_name, route_prefix=None)
        replicas = ReplicaClient(handle)
        asyncio.run(replicas.wait_for_replicas(self.replicas, ROUTER_READY_S))
        return replicas

    def replica_resources(self) -> dict:
        if self.gpus_per_replica:
            return {"num_gpus": self.gpus_per_replica, "num_cpus": self.cpus_per_replica}
        return {"num_cpus": self.cpus_per_replica}

    def replica_settings(self) -> dict:
        """What each replica's engine job gets: this job's ``engine:`` block, outputs in this job's folder (one
        folder for every replica on a machine: file names are request ids, so they never collide)."""
        engine = {k: v for k, v in (self.get_conf("engine") or {}).items() if k != "job_folder"}
        return {
            "name": self.job.name,
            "job_folder": self.job_folder,
            "device": self.device_name,
            "engine": engine | {"output_folder": self.output_folder},
            "start_timeout_s": self.start_timeout_s,
        }

    def serve_ingress(self, replicas):
        from extensions_built_in.inference_cluster.ingress import Cluster, create_ingress_app
        from extensions_built_in.inference_engine.assets import AssetStore
        from extensions_built_in.inference_engine.model_aliases import ModelAliases
        from extensions_built_in.inference_engine.server import LoopbackServer

        settings = self.settings
        assets = AssetStore(
            self.assets_folder, int(settings.assets_max_gb * 1024**3), max_age_s=settings.assets_max_age_hours * 3600
        )
        cluster = Cluster(replicas, assets, ModelAliases(settings.models), self.replicas, self.routing)
        token = secrets.token_urlsafe(32)
        server = LoopbackServer(create_ingress_app(cluster, token), thread_name="cluster-http")
        port = server.start()
        self.write_engine_json(server.host, port, token)
        print(
            f"Inference cluster listening on http://{server.host}:{port} "
            f"({self.replicas} replicas, device {self.device_name}, {self.routing} routing)\n"
            f"  token and endpoint: {self.engine_json}\n"
            f"  outputs: {self.output_folder}\n"
            f"  replicas' engine jobs: {os.path.join(self.job_folder, 'replica-<rank>')}",
            flush=True,
        )
        return server

    def stop_serve(self, started_ray: bool, serve) -> None:
        import ray

        if started_ray:
            serve.shutdown()
            ray.shutdown()
        else:
            serve.delete(self.app_name)


def worker_env(environ) -> dict:
    """What Ray's workers get on top of their environment: this repository first on their import path, then the
    caller's. Ray sets a worker's PYTHONPATH to this value rather than adding to it, so naming the repository
    alone hid whatever the caller's path held: on the GPU machine, where Ray and the engine's packages are
    installed into a folder on PYTHONPATH, no replica could import Ray
    (testing/test_cluster_units.py::test_replicas_import_from_the_callers_path_after_the_repository)."""
    inherited = environ.get("PYTHONPATH")
    return {"PYTHONPATH": os.pathsep.join([TOOLKIT_ROOT, inherited] if inherited else [TOOLKIT_ROOT])}
