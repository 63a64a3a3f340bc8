"""Swaps across families that share components in real life: shared = byte-identical = pool hits.

Identity is content (loading.content_digest), so these share exactly when the checkpoints carry the same files,
as the real repos do: Wan 2.1 and Wan 2.2 5B ship the same UMT5-XXL, Qwen-Image and Qwen-Image-Edit the same
Qwen2.5-VL and VAE. Z-Image has no second family here with the same encoder class, so its swap is between two
fine-tunes that share extras (AI Toolkit's extras_name_or_path), the way a user switches Z-Image checkpoints.
"""

from testing.stream_contract import body_for, swap_sequence, upload_test_image


def subfolders(keys):
    return {k.split("|")[1].rsplit("/", 1)[-1] for k in keys}


def test_wan21_and_wan22_5b_share_the_umt5_encoder(harness):
    rows = swap_sequence(harness.client, ["wan21", "wan22_5b", "wan21"])
    for row in rows[1:]:
        assert subfolders(row["shared"]) == {"text_encoder", "tokenizer"}, row
        assert row["hits"] == 2


def test_qwen_image_and_qwen_image_edit_share_text_encoder_and_vae(harness):
    image = upload_test_image(harness.client)["id"]
    bodies = [body_for("qwen_image"), body_for("qwen_image_edit"), body_for("qwen_image")]
    bodies[1]["sample"]["ctrl_img"] = image
    shared_rows = []
    for body in bodies:
        pre = harness.client.health()
        out = harness.client.generate_wait(body)
        assert out["http_status"] == 200, out
        post = harness.client.health()
        shared_rows.append(
            (
                {e["key"] for e in pre["pool"]} & {e["key"] for e in post["pool"]},
                post["counters"]["hits"] - pre["counters"]["hits"],
            )
        )
    for shared, hits in shared_rows[1:]:
        assert {"text_encoder", "vae"} <= subfolders(shared), shared
        assert hits >= 3  # text encoder, tokenizer, vae


def test_zimage_finetunes_sharing_extras_reuse_encoder_and_vae(harness):
    a = body_for("zimage")
    b = body_for("zimage")
    b["model"].update(name_or_path="tiny:zimage/b", extras_name_or_path="tiny:zimage")
    harness.client.generate_wait(a)
    before = harness.client.health()["counters"]
    out = harness.client.generate_wait(b)
    after = harness.client.health()
    assert out["http_status"] == 200
    assert after["counters"]["hits"] - before["hits"] == 3 and after["counters"]["misses"] - before["misses"] == 1
    assert len(after["pool"]) == 4  # A's transformer is gone
