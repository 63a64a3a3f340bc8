"""The real engine and HTTP server in one process, for tests and testing/test_inference_engine.py's CLI."""

import time


def wait_for(predicate, timeout, what):
    """``predicate()``'s first truthy value within ``timeout`` seconds, else a failure naming ``what``."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(0.05)
    raise AssertionError(f"timed out waiting for {what}")


def suite_model_roots():
    """The engine's default model roots plus the folder the suite builds its checkpoints in (conftest.py sets
    ``AITK_TEST_MODEL_ROOT``); None outside pytest: the engine's defaults."""
    import os

    from extensions_built_in.inference_engine.model_sources import default_model_roots

    extra = os.environ.get("AITK_TEST_MODEL_ROOT")
    return default_model_roots() + [extra] if extra else None


class EngineHarness:
    """The real engine and HTTP server in this process on an ephemeral port; the engine loop on a thread."""

    TOKEN = "test-token"

    def __init__(self, folder, device="cpu", **engine_options):
        import threading

        from extensions_built_in.inference_engine.client import EngineClient
        from extensions_built_in.inference_engine.engine import Engine
        from extensions_built_in.inference_engine.server import EngineServer
        from extensions_built_in.inference_engine.settings import EngineSettings

        # Off unless a test asks: these engines share the test process, where a frozen heap would hold every
        # other test's objects too (testing/test_gc_heap.py turns it on and thaws after). Compiling is a test's
        # own choice too (testing/test_compile.py): its cost is not every test's.
        engine_options.setdefault("freeze_heap", False)
        engine_options.setdefault("compile", "off")
        # Requests one at a time unless a test asks (testing/test_batching.py): many tests hold the line with one
        # long request and watch the others wait, which requests on the same model would no longer do.
        engine_options.setdefault("max_batch", 1)
        engine_options.setdefault("model_roots", suite_model_roots())
        folders = {"output_folder": str(folder / "outputs"), "assets_folder": str(folder / "assets")}
        self.engine = Engine(EngineSettings(**folders, **engine_options), device)
        self.server = EngineServer(self.engine, self.TOKEN)
        self.port = self.server.start()
        self.url = f"http://127.0.0.1:{self.port}"
        self.stop_event = threading.Event()
        self.thread = threading.Thread(target=self.engine.serve, args=(self.stop_event,), daemon=True)
        self.thread.start()
        self.client = EngineClient(self.url, self.TOKEN, timeout=60, generation_timeout_s=120)

    def close(self):
        self.stop_event.set()
        self.engine.shutdown("test session over")
        self.engine.saver.drain(30)
        self.thread.join(30)
        self.client.close()
        self.server.stop()
