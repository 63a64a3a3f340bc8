"""One answer from every replica's answer, for the routes that speak for the whole cluster.

Each keeps the engine's shape where a client reads it (the UI's engine strip reads ``ok``, ``busy``, ``queue``,
``device``, ``active``; its page follows ``queue.running``) and adds the per-replica detail beside it.
"""

from __future__ import annotations

from collections import Counter

from extensions_built_in.inference_cluster.model_key import resident_key


def health(answers: list[tuple[str, object]], expected: int, routing: str) -> dict:
    """``answers``: ``(replica id, describe() or the exception)``."""
    replicas = [_replica_health(rid, answer) for rid, answer in answers]
    up = [r for r in replicas if r["ok"]]
    devices = {r.get("device") for r in up}
    counters: Counter = Counter()
    for r in up:
        counters.update({k: v for k, v in (r.get("counters") or {}).items() if isinstance(v, (int, float))})
    return {
        "ok": bool(up),
        "busy": any(r["busy"] for r in up),
        "queue": sum(r["queue"] for r in up),
        "active": next((r["active"] for r in up if r["active"]), None),
        "device": devices.pop() if len(devices) == 1 else ("mixed" if devices else None),
        "counters": dict(counters),
        "vram": None,  # per replica below: one card's numbers would misread the cluster's
        "cluster": {"replicas": expected, "up": len(up), "routing": routing},
        "replicas": replicas,
    }


def _replica_health(rid: str, answer) -> dict:
    if isinstance(answer, BaseException):
        return {"id": rid, "ok": False, "error": f"{type(answer).__name__}: {answer}", "busy": False, "queue": 0}
    active = answer.get("active")
    return {
        "id": rid,
        "ok": bool(answer.get("ok")),
        "resident": resident_key(active),
        "active": {"arch": active["arch"], "name_or_path": active["name_or_path"]} if active else None,
        "busy": bool(answer.get("busy")),
        "queue": int(answer.get("queue") or 0),
        "device": answer.get("device"),
        "vram": answer.get("vram"),
        "counters": answer.get("counters"),
        "pool": answer.get("pool"),
        "resident_bytes": answer.get("resident_bytes"),
        "engine_pid": answer.get("engine_pid"),
        "worker_pid": answer.get("worker_pid"),
        "node_id": answer.get("node_id"),
        "folder": answer.get("folder"),
        "measured": answer.get("measured"),  # run_s and swap_s medians, what the swap rule uses
        "batching": answer.get("batching"),  # each replica batches its own line (inference_engine/batching.py)
    }


def queue(answers: list[tuple[str, dict]]) -> dict:
    """The engine's ``{running, pending}`` (rows tagged with their ``replica``; ``position`` is the place in that
    replica's line), plus ``replicas``: each one's own."""
    per_replica, running, pending = [], [], []
    for rid, q in answers:
        own_running = dict(q["running"], replica=rid) if q.get("running") else None
        own_pending = [dict(row, replica=rid) for row in q.get("pending") or []]
        per_replica.append({"replica": rid, "running": own_running, "pending": own_pending})
        running += [own_running] if own_running else []
        pending += own_pending
    running.sort(key=lambda row: row.get("created") or 0)
    pending.sort(key=lambda row: row.get("created") or 0)
    return {"running": running[0] if running else None, "pending": pending, "replicas": per_replica}


def outputs(answers: list[list], limit: int) -> list:
    """Newest first, each file once (replicas on one machine share their output folder)."""
    seen, merged = set(), []
    for entry in sorted((e for listing in answers for e in listing), key=lambda e: -(e.get("mtime") or 0)):
        if entry.get("name") not in seen:
            seen.add(entry.get("name"))
            merged.append(entry)
    return merged[:limit]


def unload(answers: list[tuple[str, int, dict]]) -> tuple[int, dict]:
    """200 with every replica's unloaded keys when any replica unloaded; else the first refusal as it came."""
    done = [(rid, body) for rid, status, body in answers if status == 200]
    if not done:
        rid, status, body = answers[0] if answers else ("", 503, {"detail": "no replica is up"})
        return status, body
    return 200, {
        "unloaded": [key for _, body in done for key in body.get("unloaded", [])],
        "resident_bytes": sum(body.get("resident_bytes") or 0 for _, body in done),
        "replicas": {rid: status for rid, status, _ in answers},
    }
