"""Suite-wide settings: offline, and one tiny-checkpoint cache per test session (subprocesses inherit it)."""
import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

os.environ["HF_HUB_OFFLINE"] = "1"  # a test that tries to download fails instead of hanging
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session", autouse=True)
def tiny_cache(tmp_path_factory):
    if not os.environ.get("AITK_TINY_CACHE"):
        os.environ["AITK_TINY_CACHE"] = str(tmp_path_factory.mktemp("tiny_cache"))
    return os.environ["AITK_TINY_CACHE"]


class EngineHarness:
    """The real engine and HTTP server in this process on an ephemeral port; the engine loop on a thread."""

    TOKEN = "test-token"

    def __init__(self, folder):
        import threading

        from extensions_built_in.inference_engine.client import EngineClient
        from extensions_built_in.inference_engine.engine import Engine
        from extensions_built_in.inference_engine.server import EngineServer

        self.engine = Engine("cpu", str(folder / "outputs"), str(folder / "assets"))
        self.server = EngineServer(self.engine, self.TOKEN)
        self.port = self.server.start()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.engine.serve, args=(self.stop_event,), daemon=True)
        self.thread.start()
        self.client = EngineClient(self.url, self.TOKEN, timeout=120)

    def close(self):
        self.stop_event.set()
        self.engine.shutdown("test session over")
        self.thread.join(30)
        self.client.close()
        self.server.stop()


@pytest.fixture(scope="session")
def engine_server(tmp_path_factory, tiny_cache):
    harness = EngineHarness(tmp_path_factory.mktemp("engine"))
    yield harness
    harness.close()
