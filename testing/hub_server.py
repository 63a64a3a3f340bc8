"""A local folder served the way huggingface.co serves a model repository, for tests that must see what the
engine fetches from the hub without the network: ``huggingface_hub`` talks to it over HTTP through
``HF_ENDPOINT`` exactly as it talks to the real hub (repo info, the file tree, HEAD and GET of
``/{repo}/resolve/{revision}/{path}``), and every request is recorded.

    with FakeHub({"org/tiny-sd1": folder}) as hub:
        env = {"HF_ENDPOINT": hub.url, "HF_HUB_CACHE": cache}
        ...
        hub.fetched("org/tiny-sd1")   # the repo paths whose contents were downloaded
"""

from __future__ import annotations

import hashlib
import json
import os
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlparse

COMMIT = "0123456789abcdef0123456789abcdef01234567"
LFS_FROM = 1024  # files this large are LFS files (the hub's threshold is larger; tiny checkpoints are small)


class FakeHub:
    def __init__(self, repos: dict[str, str]):
        self.repos = {repo: _index(folder) for repo, folder in repos.items()}
        self.requests: list[tuple[str, str]] = []
        self._server = ThreadingHTTPServer(("127.0.0.1", 0), _handler(self))
        self.url = f"http://127.0.0.1:{self._server.server_address[1]}"

    def __enter__(self) -> "FakeHub":
        threading.Thread(target=self._server.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc) -> None:
        self._server.shutdown()
        self._server.server_close()

    def fetched(self, repo: str) -> list[str]:
        """Repo paths whose bytes were sent (GET of a resolve URL)."""
        prefix = f"/{repo}/resolve/"
        return sorted(
            {p[len(prefix) :].split("/", 1)[1] for m, p in self.requests if m == "GET" and p.startswith(prefix)}
        )


def _index(folder: str) -> dict:
    """path in repo -> (file on disk, size, etag, is LFS). Etags are what the hub sends: the sha256 of an LFS file,
    the git blob id of the others."""
    files = {}
    for root, _, names in os.walk(folder):
        for name in names:
            path = os.path.join(root, name)
            data = open(path, "rb").read()
            lfs = len(data) >= LFS_FROM
            etag = (
                hashlib.sha256(data).hexdigest() if lfs else hashlib.sha1(b"blob %d\0" % len(data) + data).hexdigest()
            )
            files[os.path.relpath(path, folder).replace(os.sep, "/")] = (path, len(data), etag, lfs)
    return files


def _handler(hub: FakeHub):
    class Handler(BaseHTTPRequestHandler):
        def log_message(self, *args) -> None:
            pass

        def do_HEAD(self) -> None:
            self._serve(body=False)

        def do_GET(self) -> None:
            self._serve(body=True)

        def _serve(self, body: bool) -> None:
            path = unquote(urlparse(self.path).path)
            hub.requests.append((self.command, path))
            if path.startswith("/api/models/"):
                return self._api(path[len("/api/models/") :])
            parts = path.lstrip("/").split("/", 4)  # org, name, "resolve", revision, path
            repo = "/".join(parts[:2])
            if len(parts) == 5 and parts[2] == "resolve" and repo in hub.repos and parts[4] in hub.repos[repo]:
                return self._file(hub.repos[repo][parts[4]], body)
            self._json({"error": "Entry not found"}, 404)

        def _api(self, rest: str) -> None:
            org, name, *tail = rest.split("/")
            files = hub.repos.get(f"{org}/{name}")
            if files is None:
                return self._json({"error": "Repository not found"}, 404)
            if tail[:1] == ["tree"]:  # tree/{revision}[/{path}]
                under = "/".join(tail[2:])
                return self._json(
                    [_tree_entry(p, f) for p, f in sorted(files.items()) if not under or p.startswith(under + "/")]
                )
            siblings = [
                {
                    "rfilename": p,
                    "size": size,
                    "blobId": etag,
                    **({"lfs": {"size": size, "sha256": etag, "pointerSize": 134}} if lfs else {}),
                }
                for p, (_, size, etag, lfs) in sorted(files.items())
            ]
            self._json({"id": f"{org}/{name}", "sha": COMMIT, "siblings": siblings})

        def _file(self, entry, body: bool) -> None:
            path, size, etag, lfs = entry
            self.send_response(200)
            self.send_header("X-Repo-Commit", COMMIT)
            self.send_header("ETag", f'"{etag}"')
            if lfs:
                self.send_header("X-Linked-Etag", f'"{etag}"')
                self.send_header("X-Linked-Size", str(size))
            self.send_header("Content-Length", str(size))
            self.end_headers()
            if body:
                with open(path, "rb") as f:
                    self.wfile.write(f.read())

        def _json(self, data, status: int = 200) -> None:
            raw = json.dumps(data).encode()
            self.send_response(status)
            self.send_header("Content-Type", "application/json")
            self.send_header("Content-Length", str(len(raw)))
            if status == 404:
                self.send_header("X-Error-Code", "EntryNotFound")
            self.end_headers()
            self.wfile.write(raw)

    return Handler


def _tree_entry(path: str, entry) -> dict:
    _, size, etag, lfs = entry
    out = {"type": "file", "path": path, "size": size, "oid": etag}
    if lfs:
        out["lfs"] = {"oid": etag, "size": size, "pointerSize": 134}
    return out
