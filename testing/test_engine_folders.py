"""The engine's folders are its own: a configured output or assets folder that holds someone's files stops the job
at start with nothing touched; the job folder's defaults are marked even with earlier runs' files in them; and the
assets quota removes only the uploads it wrote (extensions_built_in/inference_engine/folders.py, assets.py)."""

import json
import os
import sqlite3
import subprocess
import sys
import time

import pytest

from extensions_built_in.inference_engine.assets import AssetStore
from extensions_built_in.inference_engine.folders import MARKER, FolderRefused, claim, claim_all, marker_role
from testing.test_engine_http import png_bytes
from toolkit.ui_job_status import create_schema, insert_job

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))


def documents(folder) -> dict:
    """A folder of someone's files, as the review pointed the engine at: name -> bytes. One is named in hex, as
    uploads are, but not as a uuid4, which is what the engine names them."""
    folder.mkdir(parents=True, exist_ok=True)
    files = {"notes.txt": b"my notes", "photo.png": png_bytes(), "0" * 32 + ".png": png_bytes((4, 4))}
    for name, data in files.items():
        (folder / name).write_bytes(data)
    return files


def run_job(tmp_path, engine: dict, timeout: float = 90):
    """``python run.py`` with a Job row, as the UI starts it; (exit code, row, output). An engine that starts is
    stopped once its engine.json is there (exit code None then)."""
    db = str(tmp_path / "aitk_db.db")
    create_schema(db)
    config = {
        "job": "extension",
        "config": {
            "name": "folders",
            "process": [
                {
                    "type": "InferenceEngine",
                    "device": "cpu",
                    "sqlite_db_path": db,
                    "engine": {"job_folder": str(tmp_path / "job"), "warm_up": False, **engine},
                }
            ],
        },
    }
    job_id = insert_job(db, f"folders-{time.monotonic_ns()}", config, job_type="inference", status="running")
    path = tmp_path / "job.json"
    path.write_text(json.dumps(config))
    proc = subprocess.Popen(
        [sys.executable, "run.py", str(path)],
        cwd=ROOT,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
        env={**os.environ, "AITK_JOB_ID": job_id},
    )
    deadline, started = time.monotonic() + timeout, False
    while proc.poll() is None and time.monotonic() < deadline:
        if (tmp_path / "job" / "engine.json").exists():
            started = True
            proc.terminate()
            break
        time.sleep(0.1)
    if proc.poll() is None and not started:
        proc.kill()
    output = proc.communicate(timeout=60)[0]
    with sqlite3.connect(db) as conn:
        conn.row_factory = sqlite3.Row
        row = dict(conn.execute("SELECT * FROM Job WHERE id = ?", (job_id,)).fetchone())
    return (None if started else proc.returncode), row, output


@pytest.mark.parametrize("key", ["output_folder", "assets_folder"])
def test_a_folder_of_someone_elses_files_stops_the_engine_at_start_and_nothing_is_touched(tmp_path, key):
    """The review's attack: engine.output_folder (or engine.assets_folder) pointed at a folder of documents. The
    engine used to serve and delete them through /outputs, and its quota deleted them all on one upload."""
    folder = tmp_path / "Documents"
    files = documents(folder)
    before = {p.name: p.stat().st_mtime_ns for p in folder.iterdir()}
    code, row, output = run_job(tmp_path, {key: str(folder)})
    assert code not in (None, 0), output[-3000:]
    assert row["status"] == "error" and f"engine.{key}" in row["info"] and "not the engine's own" in row["info"], row
    assert {p.name: p.stat().st_mtime_ns for p in folder.iterdir()} == before  # no marker, nothing removed
    assert all((folder / name).read_bytes() == data for name, data in files.items())
    assert not (tmp_path / "job" / "engine.json").exists()


def test_the_job_folders_defaults_are_the_engines_even_with_earlier_files_and_an_empty_folder_is_claimed(tmp_path):
    """An engine that ran before folders were marked must start as it did; an empty configured folder becomes the
    engine's (marked), and stays its own for the next start."""
    earlier = documents(tmp_path / "job" / "outputs")
    uploads = tmp_path / "uploads"
    uploads.mkdir()
    for attempt in (1, 2):
        code, row, output = run_job(tmp_path, {"assets_folder": str(uploads)})
        assert code is None, (attempt, output[-3000:])
        assert marker_role(str(tmp_path / "job" / "outputs")) == "outputs"
        assert marker_role(str(uploads)) == "assets"
        assert all((tmp_path / "job" / "outputs" / n).read_bytes() == data for n, data in earlier.items())


def test_claim_takes_absent_empty_or_marked_folders_and_refuses_the_rest(tmp_path):
    absent, empty = tmp_path / "absent" / "outputs", tmp_path / "empty"
    empty.mkdir()
    claim(str(absent), "outputs")
    claim(str(empty), "assets")
    assert marker_role(str(absent)) == "outputs" and marker_role(str(empty)) == "assets"
    (absent / "result.png").write_bytes(b"x")
    claim(str(absent), "outputs")  # its own, files and all
    with pytest.raises(FolderRefused, match="engine's outputs folder"):
        claim(str(absent), "assets")  # another role's folder
    documents(tmp_path / "docs")
    with pytest.raises(FolderRefused, match="not the engine's own"):
        claim(str(tmp_path / "docs"), "outputs")
    assert not (tmp_path / "docs" / MARKER).exists()
    (tmp_path / "a_file").write_text("x")
    with pytest.raises(FolderRefused, match="not a folder"):
        claim(str(tmp_path / "a_file"), "assets")
    (tmp_path / "garbled").mkdir()
    (tmp_path / "garbled" / MARKER).write_text("not json")
    with pytest.raises(FolderRefused, match="not the engine's own"):
        claim(str(tmp_path / "garbled"), "outputs")  # a marker the engine did not write is no marker
    shared = str(tmp_path / "shared")
    with pytest.raises(FolderRefused, match="one folder"):
        claim_all({"outputs": (shared, False), "assets": (shared, False)})
    assert not os.path.exists(shared)


def test_the_quota_removes_only_the_uploads_it_wrote(tmp_path):
    """In the engine's own assets folder, a user's files beside the uploads (and a hex name store never gives)
    stay, however old, while expired uploads go."""
    folder = tmp_path / "assets"
    store = AssetStore(str(folder), max_bytes=10 * len(png_bytes()), max_age_s=1)
    old = store.store(png_bytes())
    theirs = documents(folder)
    (folder / ".hidden").write_text("x")
    for name in [*theirs, ".hidden", os.path.basename(old["path"])]:
        os.utime(folder / name, (time.time() - 3600, time.time() - 3600))
    new = store.store(png_bytes())  # everything old is expired: only the upload goes
    assert not os.path.exists(old["path"]) and os.path.exists(new["path"])
    assert all((folder / name).read_bytes() == data for name, data in theirs.items()) and (folder / ".hidden").exists()
    assert store.usage()["files"] == 1  # the quota counts uploads only
    for _ in range(12):  # a full quota makes room among uploads, never among the user's files
        store.store(png_bytes())
    assert all((folder / name).read_bytes() == data for name, data in theirs.items())
    assert store.usage()["files"] == 10


def test_an_upload_over_http_leaves_the_users_files_in_the_engines_own_folder(tmp_path, tiny_cache):
    """The review's upload, through the real server: the engine's own assets folder with a tiny age limit."""
    from testing.engine_harness import EngineHarness

    h = EngineHarness(tmp_path, assets_max_age_hours=1e-6)
    try:
        folder = tmp_path / "assets"
        files = documents(folder)
        image = tmp_path / "upload.png"
        image.write_bytes(png_bytes())
        time.sleep(0.1)
        first = h.client.upload_asset(str(image))
        time.sleep(0.1)
        second = h.client.upload_asset(str(image))
        assert not os.path.exists(first["path"]) and os.path.exists(second["path"])  # the quota ran
        assert all((folder / n).read_bytes() == d for n, d in files.items())
    finally:
        h.close()
