"""The cluster's ``GET /metrics``: the ingress's own series and every replica's engine series in one scrape.

An operator scrapes one endpoint, as with one engine. The ingress counts what only it sees (requests by the
outcome its client got, a replica's death mid-stream included; time to first byte through the relay; replicas
up); each replica's engine series (extensions_built_in/inference_engine/metrics.py: step and request histograms
per arch, pool counters, VRAM) are fetched at scrape time and re-labelled with ``replica``, so they sum and
split as Prometheus queries expect (``sum by (arch)``, ``by (replica)``).
"""

from __future__ import annotations

from typing import Iterable, Optional

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import GaugeMetricFamily, Metric
from prometheus_client.parser import text_string_to_metric_families
from prometheus_client.registry import Collector

from extensions_built_in.inference_engine.metrics import TTFB_BUCKETS
from extensions_built_in.inference_engine.protocol import ERROR_CODES, read_frames

PREFIX = "aitk_cluster_"


class IngressMetrics:
    def __init__(self):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            PREFIX + "requests",
            "Generations relayed, by the outcome their client got: ok, or the code of the error it got",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in ("ok", *ERROR_CODES):
            self.requests.labels(outcome)
        self.time_to_first_byte = Histogram(
            PREFIX + "time_to_first_byte_seconds",
            "Streamed POST /generate through the ingress: from the request arriving to its first relayed bytes",
            buckets=TTFB_BUCKETS,
            registry=self.registry,
        )

    def finished(self, outcome: str) -> None:
        self.requests.labels(outcome).inc()

    def first_byte(self, seconds: float) -> None:
        self.time_to_first_byte.observe(seconds)

    def exposition(self, replicas: list[tuple[str, Optional[str]]], expected: int) -> tuple[bytes, str]:
        """The ingress's series, replicas up, and each replica's engine series; ``replicas`` is (id, its
        /metrics text, None when it did not answer)."""
        scrape = CollectorRegistry()
        scrape.register(ReplicaSeries(replicas, expected))
        return generate_latest(self.registry) + generate_latest(scrape), CONTENT_TYPE_LATEST


class ReplicaSeries(Collector):
    def __init__(self, replicas: list[tuple[str, Optional[str]]], expected: int):
        self.replicas, self.expected = replicas, expected

    def collect(self) -> Iterable[Metric]:
        up = sum(1 for _, text in self.replicas if text is not None)
        yield GaugeMetricFamily(PREFIX + "replicas_up", "Replicas whose engine answered this scrape", up)
        yield GaugeMetricFamily(PREFIX + "replicas_expected", "Replicas the cluster is configured for", self.expected)
        merged: dict[str, Metric] = {}
        for replica, text in self.replicas:
            for family in text_string_to_metric_families(text or ""):
                into = merged.setdefault(family.name, Metric(family.name, family.documentation, family.type))
                for sample in family.samples:
                    into.add_sample(sample.name, {**sample.labels, "replica": replica}, sample.value)
        yield from merged.values()


def outcome_of_frames(chunk: bytes) -> str:
    """A relayed frame stream's outcome from its last chunk (whole frames, frame_cutter.py): the ``error``
    frame's code, else ``ok`` when it ended well."""
    frames = read_frames(chunk) if chunk else []
    error = next((f for f in reversed(frames) if f.type == "error"), None)
    if error is not None:
        return str(error.header.get("code") or "internal")
    end = frames[-1] if frames else None
    return "ok" if end is not None and end.type == "end" and end.header.get("ok") else "internal"


def outcome_of_json(parsed, status: int) -> str:
    """A ``?wait=1`` answer's outcome: its ``error.code``; a refusal before any run (a 4xx with FastAPI's
    ``detail``, a full queue) is ``bad_request``; else ``ok``."""
    error = parsed.get("error") if isinstance(parsed, dict) else None
    if isinstance(error, dict):
        return str(error.get("code") or "internal")
    if status >= 400:
        return "bad_request" if status < 500 else "internal"
    return "ok"
