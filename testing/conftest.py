"""Suite-wide settings: offline, and one tiny-checkpoint cache per test session (subprocesses inherit it)."""

import os
import sys

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if ROOT not in sys.path:
    sys.path.insert(0, ROOT)

os.environ["HF_HUB_OFFLINE"] = "1"  # a test that tries to download fails instead of hanging
# Tests run the engine, its server and a client as threads of one process (and subprocesses beside it) on
# 2 cores: torch's intra-op threads then spin against each other (measured: 13x slower). One thread each.
os.environ.setdefault("OMP_NUM_THREADS", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")


@pytest.fixture(scope="session", autouse=True)
def tiny_cache(tmp_path_factory):
    if not os.environ.get("AITK_TINY_CACHE"):
        os.environ["AITK_TINY_CACHE"] = str(tmp_path_factory.mktemp("tiny_cache"))
    return os.environ["AITK_TINY_CACHE"]


@pytest.fixture(scope="session", autouse=True)
def suite_model_root(tmp_path_factory):
    """Checkpoints the tests build (single files, copies of tiny ones) live in pytest's temp folders: the engines
    this process starts take that folder as a model root beside the defaults (testing/engine_harness.py), as an
    operator lists the folder their checkpoints live in."""
    os.environ.setdefault("AITK_TEST_MODEL_ROOT", str(tmp_path_factory.getbasetemp()))
    return os.environ["AITK_TEST_MODEL_ROOT"]


@pytest.fixture(scope="session")
def engine_server(tmp_path_factory, tiny_cache):
    from testing.engine_harness import EngineHarness

    harness = EngineHarness(tmp_path_factory.mktemp("engine"))
    yield harness
    harness.close()


@pytest.fixture()
def harness(tmp_path, tiny_cache):
    """A fresh engine of the test's own (its pool, queue and outputs start empty), closed after the test."""
    from testing.engine_harness import EngineHarness

    h = EngineHarness(tmp_path)
    yield h
    h.close()
