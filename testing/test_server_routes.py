"""The engine's app as assembled by ``create_app`` (extensions_built_in/inference_engine/server.py): the routes it
serves, each a module-level function in its concern's module, reaching the engine of the app that serves it."""

import subprocess
import sys
from pathlib import Path

import pytest
from fastapi.testclient import TestClient

from extensions_built_in.inference_engine import openai_api, server
from extensions_built_in.inference_engine.engine import Engine
from extensions_built_in.inference_engine.server import create_app
from extensions_built_in.inference_engine.settings import EngineSettings

ROOT = Path(__file__).resolve().parent.parent
TOKEN = "t0ken"
PREFIX = "extensions_built_in.inference_engine."

# Every route, by the module that serves it: a route added, moved or dropped shows here.
ROUTES = {
    "catalog_api": {
        ("GET", "/health"),
        ("GET", "/metrics"),
        ("GET", "/models"),
        ("GET", "/loras"),
        ("GET", "/checkpoints"),
        ("GET", "/upscalers"),
    },
    "generation_api": {
        ("POST", "/generate"),
        ("GET", "/requests/{request_id}/frames"),
        ("POST", "/cancel/{request_id}"),
        ("GET", "/queue"),
        ("POST", "/queue/cancel"),
        ("POST", "/queue/{request_id}/move"),
        ("POST", "/unload"),
    },
    "grid_api": {
        ("POST", "/grid"),
        ("POST", "/grid/{grid_id}/cancel"),
        ("GET", "/grid/{grid_id}/frames"),
        ("GET", "/grid/jobs"),
    },
    "outputs_api": {
        ("POST", "/assets"),
        ("GET", "/outputs"),
        ("GET", "/outputs/{name}"),
        ("DELETE", "/outputs/{name}"),
    },
    "openai_api": {
        ("GET", "/v1/models"),
        ("GET", "/v1/models/{model_id:path}"),
        ("POST", "/v1/images/generations"),
        ("POST", "/v1/images/edits"),
    },
}


def engine_in(folder: Path) -> Engine:
    folders = {"output_folder": str(folder / "outputs"), "assets_folder": str(folder / "assets")}
    return Engine(EngineSettings(**folders, compile="off", freeze_heap=False, max_queue=3), "cpu")


@pytest.fixture(scope="module")
def apps(tmp_path_factory):
    return [create_app(engine_in(tmp_path_factory.mktemp(f"engine{i}")), TOKEN) for i in range(2)]


def test_every_route_is_a_module_level_function_of_its_concerns_module(apps):
    served = {}
    for router in (*server.ROUTERS, openai_api.router):
        for route in router.routes:
            fn = route.endpoint
            assert fn.__qualname__ == fn.__name__, f"{route.path}: {fn.__qualname__} is not module-level"
            assert getattr(sys.modules[fn.__module__], fn.__name__) is fn, route.path
            assert sys.modules[fn.__module__].router is router, f"{route.path} is not in its module's router"
            for method in route.methods:
                served.setdefault(fn.__module__.removeprefix(PREFIX), set()).add((method, route.path))
    assert served == ROUTES
    # ... and the app serves those routes, no more, no fewer (the schema lists what FastAPI routes).
    schema = apps[0].openapi()["paths"]
    in_schema = {(method.upper(), path) for path, methods in schema.items() for method in methods}
    assert in_schema == {(m, p.replace(":path", "")) for routes in ROUTES.values() for m, p in routes}


def test_each_app_reaches_its_own_engine(apps):
    """Routes find the engine through the app that serves them (``app.state.engine``), so two apps in one
    process never answer for each other's engine."""
    headers = {"Authorization": f"Bearer {TOKEN}"}
    for i, app in enumerate(apps):
        engine = app.state.engine
        (Path(engine.output_folder) / f"only_in_{i}.png").write_bytes(b"png")
        with TestClient(app, base_url="http://127.0.0.1") as client:
            assert client.get("/health").json() == {"ok": True}  # no token: only the liveness answer
            health = client.get("/health", headers=headers).json()
            assert health["max_queue"] == 3 and health["device"] == "cpu"
            assert client.get("/queue", headers=headers).json() == {"running": None, "sharing": [], "pending": []}
            assert client.get(f"/outputs/only_in_{i}.png", headers=headers).content == b"png"
            assert client.get(f"/outputs/only_in_{1 - i}.png", headers=headers).status_code == 404
            assert client.get("/v1/models", headers=headers).json()["object"] == "list"
            assert client.get("/queue").status_code == 401  # the guards still come first


def test_the_server_and_its_routes_import_no_torch():
    code = (
        "import sys\n"
        "import extensions_built_in.inference_engine.server\n"
        "assert 'torch' not in sys.modules, 'the server imported torch'\n"
    )
    done = subprocess.run([sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stderr[-2000:]
