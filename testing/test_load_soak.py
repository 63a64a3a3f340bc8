"""testing/bench/load_soak.py's readings: the RSS plateau of a soak and the result files checked at its end."""

import os


def test_the_soak_s_rss_growth_is_the_last_engine_s_over_the_last_half_hour():
    from testing.bench.load_soak import rss_growth

    def samples(pid, start, end, rss_at):
        return [{"t": t, "pid": pid, "rss_mb": rss_at(t)} for t in range(start, end + 1, 10)]

    killed = samples(1, 0, 900, lambda t: 900.0)  # a killed engine's samples never count
    flat = killed + samples(2, 920, 3600, lambda t: 500.0 + (3.0 if t > 3000 else 0.0))
    assert rss_growth(flat)["growth_mb"] == 3.0 and rss_growth(flat)["pid"] == 2
    creeping = killed + samples(2, 920, 3600, lambda t: 500.0 + t / 100)
    assert rss_growth(creeping)["growth_mb"] == 16.8  # 0.6 MB a minute, medians 28 minutes apart: over 5 MB
    short = samples(2, 0, 1500, lambda t: 500.0)
    assert rss_growth(short)["growth_mb"] is None and "under 1800" in rss_growth(short)["why"]


def test_the_soak_finds_a_missing_a_half_written_and_a_left_over_result(tmp_path):
    import numpy as np
    from PIL import Image

    from testing.bench.load_soak import check_results

    paths = []
    for i in range(3):
        path = tmp_path / f"r{i}.png"
        Image.fromarray(np.zeros((16, 16, 3), np.uint8)).save(path)
        path.with_suffix(".json").write_text("{}")
        paths.append(str(path))
    assert check_results(paths) == {"results": 3, "missing": [], "broken": [], "temp_files_left": []}
    data = open(paths[1], "rb").read()
    open(paths[1], "wb").write(data[: len(data) // 2])
    os.remove(paths[2])
    (tmp_path / ".tmp").mkdir()
    (tmp_path / ".tmp" / "r9.png").write_bytes(b"x")
    found = check_results(paths)
    assert found["missing"] == [paths[2]] and found["broken"][0].startswith(paths[1])
    (tmp_path / "r0.json.tmp").write_text("{")
    found = check_results(paths)
    assert found["temp_files_left"] == [str(tmp_path / ".tmp" / "r9.png"), str(tmp_path / "r0.json.tmp")]
