"""Prometheus metrics of one engine, served as ``GET /metrics`` (docs/PROTOCOL.md "Metrics").

A registry per engine, not prometheus_client's global one: one process may run several engines (the tests do),
and each scrape must show its own engine only. Requests are counted when their stream ends
(``FrameStream.on_finish``): every outcome passes there, a cancel while queued and the engine stopping included,
which no single place in the engine's own code sees. What the engine counts already (the pool's counters, the
queue, memory) is read when scraped rather than counted twice.

Neither torch nor HTTP here: the server asks for ``exposition()``, ``vram_stats`` imports torch only when
called, on the scrape's worker thread.
"""

from __future__ import annotations

import time
from typing import Optional

from prometheus_client import CONTENT_TYPE_LATEST, CollectorRegistry, Counter, Histogram, generate_latest
from prometheus_client.core import CounterMetricFamily, GaugeMetricFamily
from prometheus_client.registry import Collector

from extensions_built_in.inference_engine.protocol import ERROR_CODES
from toolkit.device import vram_stats

PREFIX = "aitk_engine_"
# Bucket bounds span what the engine serves: a small model's step on a fast GPU to a streamed video step, first
# bytes in milliseconds to a loaded server's seconds, a 64² image to an hour spent in a queue or on a video.
TTFB_BUCKETS = (0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0)
STEP_BUCKETS = (0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0)
REQUEST_BUCKETS = (0.25, 0.5, 1.0, 2.5, 5.0, 10.0, 30.0, 60.0, 120.0, 300.0, 600.0, 1800.0, 3600.0)
POOL_COUNTERS = {
    "hits": "Components the pool served without loading them",
    "misses": "Components the pool had to load",
    "evictions": "Pool entries dropped from memory (before a load, after a request, idle, /unload)",
    "parked": "Pool entries moved off the GPU into pinned host RAM instead of dropped (engine.keep_in_ram_gb)",
    "ram_hits": "Pool hits on entries parked in host RAM, moved back to the GPU",
}


class EngineMetrics:
    def __init__(self, pool, queue, batching=None):
        self.registry = CollectorRegistry()
        self.requests = Counter(
            PREFIX + "requests",
            "Finished requests by outcome: ok, or the code of their error frame",
            ["outcome"],
            registry=self.registry,
        )
        for outcome in ("ok", *ERROR_CODES):  # every series exists from the start, so rate() sees the first one
            self.requests.labels(outcome)
        self.time_to_first_byte = Histogram(
            PREFIX + "time_to_first_byte_seconds",
            "Streamed POST /generate: from the handler receiving the request to its first frame bytes",
            buckets=TTFB_BUCKETS,
            registry=self.registry,
        )
        self.step_seconds = Histogram(
            PREFIX + "step_seconds",
            "A request's median denoising step (result timings.step_s), observed once per request that sampled",
            ["arch"],
            buckets=STEP_BUCKETS,
            registry=self.registry,
        )
        self.request_seconds = Histogram(
            PREFIX + "request_seconds",
            "A whole request, from being queued to its end frame",
            ["arch", "outcome"],
            buckets=REQUEST_BUCKETS,
            registry=self.registry,
        )
        self.registry.register(EngineState(pool, queue, batching))

    def track(self, req) -> None:
        """Count ``req`` when its stream ends, whichever way it ends."""
        req.stream.on_finish = lambda ok, code: self.request_finished(
            req.model_class.arch, "ok" if ok else code, time.time() - req.created, req.timings.get("step_s")
        )

    def request_finished(self, arch: str, outcome: str, seconds: float, step_s: Optional[float]) -> None:
        self.requests.labels(outcome).inc()
        self.request_seconds.labels(arch, outcome).observe(seconds)
        if step_s is not None:
            self.step_seconds.labels(arch).observe(step_s)

    def first_byte(self, seconds: float) -> None:
        self.time_to_first_byte.observe(seconds)

    def exposition(self) -> tuple[bytes, str]:
        """The scrape's body and content type. Reads torch's CUDA counters: call it off the event loop."""
        return generate_latest(self.registry), CONTENT_TYPE_LATEST


class EngineState(Collector):
    """Values the engine keeps anyway, read at each scrape. On a CPU there is no VRAM, and its two gauges are
    left out rather than reported as 0, which would read as an idle GPU."""

    def __init__(self, pool, queue, batching=None):
        self.pool, self.queue, self.batching = pool, queue, batching  # batching: Engine.batching_stats

    def collect(self):
        yield GaugeMetricFamily(
            PREFIX + "queue_depth", "Requests waiting in line (not the running one)", len(self.queue)
        )
        yield GaugeMetricFamily(PREFIX + "busy", "1 while a request runs, else 0", int(self.queue.running is not None))
        yield GaugeMetricFamily(
            PREFIX + "running_requests",
            "Requests running now (more than one while they share steps)",
            len(self.queue.running_items()),
        )
        if self.batching is not None:
            stats = self.batching()
            calls = CounterMetricFamily(
                PREFIX + "denoiser_calls", "Denoiser calls by how many requests each carried", labels=["requests"]
            )
            for size, count in stats["calls_by_size"].items():
                calls.add_metric([size], count)
            yield calls
            yield GaugeMetricFamily(
                PREFIX + "batched_share",
                "Share of requests' denoiser calls that ran with another's",
                stats["shared_share"],
            )
        counters = dict(self.pool.counters)
        for name, text in POOL_COUNTERS.items():
            yield CounterMetricFamily(f"{PREFIX}pool_{name}", text, counters[name])
        yield GaugeMetricFamily(
            PREFIX + "resident_bytes", "Bytes of the modules in the pool", self.pool.resident_bytes()
        )
        vram = vram_stats()
        if vram is not None:
            yield GaugeMetricFamily(
                PREFIX + "vram_bytes_in_use", "GPU bytes this process's tensors hold now", vram["allocated"]
            )
            yield GaugeMetricFamily(
                PREFIX + "vram_bytes_peak", "Peak GPU bytes allocated during the latest request", vram["peak_allocated"]
            )
