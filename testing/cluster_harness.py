"""config/examples/inference_cluster_tiny.yaml run as a job (``python run.py``) in a folder of the caller's, for
testing/test_cluster.py and testing/bench/cluster_bench.py."""

from __future__ import annotations

import json
import os
import signal
import sqlite3
import subprocess
import sys
from pathlib import Path
from typing import Optional

from testing.engine_harness import wait_for

ROOT = Path(__file__).resolve().parents[1]
EXAMPLE = ROOT / "config" / "examples" / "inference_cluster_tiny.yaml"


class ClusterJob:
    """The example's cluster with its job folder (and Job row, given a database) moved under ``tmp``."""

    def __init__(
        self,
        tmp: Path,
        routing: Optional[str] = None,
        db: Optional[str] = None,
        job_id: Optional[str] = None,
        cluster: Optional[dict] = None,
        device: Optional[str] = None,
        engine: Optional[dict] = None,
    ):
        """``cluster``: keys that replace the example's (``replicas``, ``gpus_per_replica``…); ``device`` and
        ``engine`` (settings added to its ``engine:`` block): the replicas' engines' (the benchmark's GPU run)."""
        import yaml

        self.tmp, self.db, self.job_id = Path(tmp), db, job_id
        config = yaml.safe_load(EXAMPLE.read_text())
        process = config["config"]["process"][0]
        self.folder = self.tmp / config["config"]["name"]
        process["engine"]["job_folder"] = str(self.folder)
        process["sqlite_db_path"] = db or str(self.tmp / "aitk_db.db")
        if routing:
            process["cluster"]["routing"] = routing
        process["cluster"].update(cluster or {})
        process["engine"]["model_roots"] = [str(self.tmp)]  # the caller's folder is the replicas' models folder
        process["engine"].update(engine or {})
        if device:
            process["device"] = device
        self.config = config
        self.engine_json = self.folder / "engine.json"
        self.proc: Optional[subprocess.Popen] = None
        self.client = None

    def start(self, timeout: float = 240) -> "ClusterJob":
        from extensions_built_in.inference_engine.client import EngineClient

        config_path = self.tmp / "cluster.json"
        config_path.write_text(json.dumps(self.config))
        self.log = open(self.tmp / "log.txt", "w")
        env = {**os.environ, "PYTHONUNBUFFERED": "1"} | ({"AITK_JOB_ID": self.job_id} if self.job_id else {})
        self.proc = subprocess.Popen(
            [sys.executable, "run.py", str(config_path)], cwd=ROOT, stdout=self.log, stderr=subprocess.STDOUT, env=env
        )
        wait_for(
            lambda: self.engine_json.exists() or self.proc.poll() is not None, timeout, "the cluster's engine.json"
        )
        assert self.proc.poll() is None, (self.tmp / "log.txt").read_text()[-4000:]
        self.info = json.loads(self.engine_json.read_text())
        self.client = EngineClient.from_engine_json(str(self.engine_json), timeout=60, generation_timeout_s=180)
        wait_for(self.replicas_up, 60, "every replica up")
        return self

    def stop(self, timeout: float = 90) -> Optional[int]:
        if self.client is not None:
            self.client.close()
        if self.proc is not None and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait(10)
        if getattr(self, "log", None) is not None:
            self.log.close()
        return self.proc.returncode if self.proc is not None else None

    def health(self) -> dict:
        return self.client.health()

    def replicas_up(self) -> list:
        health = self.health()
        up = [r for r in health["replicas"] if r["ok"]]
        return up if len(up) == health["cluster"]["replicas"] else []

    def replica(self, replica_id: str) -> dict:
        return next(r for r in self.health()["replicas"] if r["id"] == replica_id)

    def holder_of(self, key: str) -> dict:
        return next(r for r in self.health()["replicas"] if r["resident"] == key)

    def engine_client(self, replica: dict):
        """A client straight to one replica's engine (its engine.json), bypassing the cluster."""
        from extensions_built_in.inference_engine.client import EngineClient

        return EngineClient.from_engine_json(
            os.path.join(replica["folder"], "engine.json"), timeout=60, generation_timeout_s=180
        )

    def job_status(self) -> str:
        with sqlite3.connect(self.db) as conn:
            return conn.execute("SELECT status FROM Job WHERE id = ?", (self.job_id,)).fetchone()[0]
