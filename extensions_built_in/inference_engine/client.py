"""Python client and CLI for the engine.

    python -m extensions_built_in.inference_engine.client generate --arch sd1 --model tiny:sd1 \\
        --prompt "a red circle" --width 64 --height 64 --steps 8 --out output/client

finds the running engine from its engine.json (``--engine``, or the only one under ``output/``), shows a
progress bar, and saves the finished file (and, with ``--save-latents``, a PNG preview per latent frame).
Leaving a ``generate`` loop early closes the connection, which cancels the request on the engine.
"""

from __future__ import annotations

import argparse
import glob
import json
import os
import sys
import time
from typing import Iterator, Optional

import httpx

from extensions_built_in.inference_engine.protocol import Frame, FrameDecoder


class EngineError(RuntimeError):
    def __init__(self, status: int, detail):
        super().__init__(f"HTTP {status}: {detail}")
        self.status, self.detail = status, detail


def find_engine_json(root: str = "output") -> str:
    found = sorted(glob.glob(os.path.join(root, "*", "engine.json")), key=os.path.getmtime, reverse=True)
    if not found:
        raise FileNotFoundError(f"no running engine found (no {root}/*/engine.json); start one or pass --engine")
    return found[0]


class GenerationTimeout(TimeoutError):
    """The whole generation took longer than the caller allowed; the request was cancelled on the engine."""


class EngineClient:
    """``timeout`` bounds connecting and each read of a stream (the engine sends a frame at least every second
    while a request waits, loads or samples, so a silent stream means a dead engine). ``generation_timeout_s``
    bounds a whole generation: a stream that keeps beating but never ends is cancelled and raises
    :class:`GenerationTimeout` instead of hanging its caller."""

    def __init__(
        self, url: str, token: Optional[str] = None, timeout: float = 30.0, generation_timeout_s: Optional[float] = None
    ):
        self.url = url.rstrip("/")
        self.generation_timeout_s = generation_timeout_s
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=self.url, headers=headers, timeout=httpx.Timeout(timeout))

    @classmethod
    def from_engine_json(cls, path: Optional[str] = None, **kwargs) -> "EngineClient":
        with open(path or find_engine_json()) as f:
            info = json.load(f)
        return cls(f"http://{info['host']}:{info['port']}", info["token"], **kwargs)

    def close(self) -> None:
        self.http.close()

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def _json(self, method: str, path: str, **kwargs):
        response = self.http.request(method, path, **kwargs)
        if response.status_code >= 400:
            try:
                detail = response.json().get("detail")
            except ValueError:
                detail = response.text
            raise EngineError(response.status_code, detail)
        return response.json()

    def health(self) -> dict:
        """Everything /health tells; a client without the token gets only ``{"ok": true}``."""
        return self._json("GET", "/health")

    def models(self) -> list:
        return self._json("GET", "/models")

    def queue(self) -> dict:
        return self._json("GET", "/queue")

    def outputs(self, limit: int = 100) -> list:
        return self._json("GET", "/outputs", params={"limit": limit})

    def cancel(self, request_id: str) -> dict:
        return self._json("POST", f"/cancel/{request_id}")

    def unload(self, all: bool = True) -> dict:
        return self._json("POST", "/unload", json={"all": all})

    def upload_asset(self, path: str) -> dict:
        with open(path, "rb") as f:
            return self._json("POST", "/assets", files={"file": (os.path.basename(path), f)})

    def generate_wait(self, body: dict, timeout_s: Optional[float] = None) -> dict:
        """``?wait=1``: nothing is sent until the end, so the read waits for the whole generation."""
        limit = timeout_s or self.generation_timeout_s
        try:
            response = self.http.post(
                "/generate", params={"wait": 1}, json=body, timeout=httpx.Timeout(self.http.timeout.connect, read=limit)
            )
        except httpx.ReadTimeout:
            raise GenerationTimeout(f"no answer from /generate?wait=1 within {limit} s") from None
        return response.json() | {"http_status": response.status_code}

    def submit(self, body: dict) -> dict:
        """``?detach=1``: queued at once and the engine's to finish; ``frames(request_id)`` follows it."""
        return self._json("POST", "/generate", params={"detach": 1}, json=body)

    def frames(self, request_id: str, timeout_s: Optional[float] = None) -> Iterator[Frame]:
        """A submitted (or any recent) request's frames: where it stands, then live to its end. Closing the
        generator early leaves the run going."""
        return self.generate(None, timeout_s, path=f"/requests/{request_id}/frames")

    def generate(
        self, body: Optional[dict], timeout_s: Optional[float] = None, path: str = "/generate"
    ) -> Iterator[Frame]:
        """Yield frames as they arrive. Closing the generator early drops the connection (= cancel)."""
        limit = timeout_s or self.generation_timeout_s
        deadline = time.monotonic() + limit if limit else None
        method = "POST" if body is not None else "GET"
        with self.http.stream(method, path, json=body) as response:
            if response.status_code >= 400:
                response.read()
                raise EngineError(response.status_code, response.json().get("detail"))
            decoder = FrameDecoder()
            for chunk in response.iter_raw():
                yield from decoder.feed(chunk)
                if deadline is not None and time.monotonic() > deadline:
                    if body is not None:  # a run this stream owns; one followed by ``frames`` is left going
                        self.cancel_quietly(response.headers.get("x-request-id"))
                    raise GenerationTimeout(
                        f"the stream of request {response.headers.get('x-request-id')} did not end within {limit} s"
                    )
            decoder.close()

    def grid(self, body: dict, timeout_s: Optional[float] = None) -> Iterator[Frame]:
        """``POST /grid``: the grid's ``start`` (its plan), every cell's frames tagged with ``cell``, then the grid's
        ``result`` (pages, replay body) and ``end``. Closing the generator early cancels the cells still to come."""
        return self.generate(body, timeout_s, path="/grid")

    def submit_grid(self, body: dict) -> dict:
        """``POST /grid?detach=1``: the cells queued at once and the grid the engine's; ``grid_frames`` follows it."""
        return self._json("POST", "/grid", params={"detach": 1}, json=body)

    def grid_frames(self, grid_id: str, timeout_s: Optional[float] = None) -> Iterator[Frame]:
        """A running or recent grid's frames from where it stands; closing the generator leaves it going."""
        return self.generate(None, timeout_s, path=f"/grid/{grid_id}/frames")

    def cancel_grid(self, grid_id: str) -> dict:
        return self._json("POST", f"/grid/{grid_id}/cancel")

    def cancel_quietly(self, request_id: Optional[str]) -> None:
        try:
            if request_id:
                self.cancel(request_id)
        except (EngineError, httpx.HTTPError):
            pass  # already finished, or the engine is gone: either way nothing runs on

    def download(self, result: dict, folder: str) -> str:
        os.makedirs(folder, exist_ok=True)
        name = os.path.basename(result["path"])
        dest = os.path.join(folder, name)
        with self.http.stream("GET", f"/outputs/{name}") as response:
            if response.status_code != 200:
                raise EngineError(response.status_code, f"could not download {name}")
            with open(dest + ".part", "wb") as f:
                for chunk in response.iter_bytes():
                    f.write(chunk)
        os.replace(dest + ".part", dest)
        return dest


# ---------------------------------------------------------------------------------------------- CLI
def build_body(args) -> dict:
    model = {"arch": args.arch, "name_or_path": args.model}
    if args.dtype:
        model["dtype"] = args.dtype
    sample = {"prompt": args.prompt, "negative_prompt": args.negative, "seed": args.seed}
    for key, value in (
        ("width", args.width),
        ("height", args.height),
        ("num_inference_steps", args.steps),
        ("guidance_scale", args.cfg),
        ("num_frames", args.frames),
        ("fps", args.fps),
        ("duration_s", args.duration),
        ("output_ext", args.ext),
        ("lyrics", args.lyrics),
    ):
        if value is not None:
            sample[key] = value
    return {
        "model": model,
        "sample": sample,
        "stream": {
            "latents": args.latents,
            "every_n_steps": args.every,
            "max_frames": args.max_frames,
            "downsample": args.downsample,
        },
    }


def save_latent_png(frame: Frame, spec: dict, folder: str) -> Optional[str]:
    from PIL import Image

    from extensions_built_in.inference_engine.latent_preview import project_rgb

    if frame.header["layout"] == "BLC":
        return None  # audio latents have no picture; the UI draws a heatmap
    rgb = project_rgb(frame.array(), spec.get("rgb_factors"), spec.get("rgb_bias"))
    path = os.path.join(folder, f"{frame.request_id}_latent_{frame.header['step']:04d}.png")
    Image.fromarray(rgb).save(path)
    return path


def run_generate(client: EngineClient, args) -> int:
    from tqdm import tqdm

    bar, spec, result, error = None, {}, None, None
    if args.ctrl_img:
        asset = client.upload_asset(args.ctrl_img)
        args_body = build_body(args)
        args_body["sample"]["ctrl_img"] = asset["id"]
    else:
        args_body = build_body(args)
    os.makedirs(args.out, exist_ok=True)
    for frame in client.generate(args_body):
        h = frame.header
        if frame.type == "start":
            spec = h["latent"]
            print(
                f"request {frame.request_id}: {h['config']['model']['arch']} seed {h['config']['sample']['seed']}",
                file=sys.stderr,
            )
        elif frame.type == "status":
            where = f" (position {h['position']})" if "position" in h else ""
            (bar.set_description(h["stage"]) if bar else print(f"{h['stage']}: {h['message']}{where}", file=sys.stderr))
        elif frame.type == "progress":
            bar = bar or tqdm(total=h["total"], unit="step", desc="sampling")
            bar.update(h["step"] - bar.n)
        elif frame.type == "latent" and args.save_latents:
            save_latent_png(frame, spec, args.out)
        elif frame.type == "result":
            result = h
        elif frame.type == "error":
            error = h
    if bar:
        bar.close()
    if error:
        print(f"error ({error['code']}): {error['message']}", file=sys.stderr)
        return 1
    print(client.download(result, args.out))
    return 0


def run_grid(client: EngineClient, args) -> int:
    """``grid BODY.json``: a line per cell as it ends, then the pages downloaded and their paths printed."""
    with open(args.body, encoding="utf-8") as f:
        body = json.load(f)
    os.makedirs(args.out, exist_ok=True)
    result, error = None, None
    for frame in client.grid(body):
        h = frame.header
        if frame.type == "start" and "grid" in h:
            print(f"grid {frame.request_id}: {len(h['grid']['cells'])} cells", file=sys.stderr)
        elif frame.type in ("result", "error") and "cell" in h:
            outcome = os.path.basename(h["path"]) if frame.type == "result" else f"{h['code']}: {h['message']}"
            print(f"cell {h['cell']} {h['axes']}: {outcome}", file=sys.stderr)
        elif frame.type == "result":
            result = h
        elif frame.type == "error":
            error = h
    if error:
        print(f"error ({error['code']}): {error['message']}", file=sys.stderr)
    for page in (result or {}).get("pages", []):
        print(client.download(page, args.out))
    return 1 if error or result is None else 0


def parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="python -m extensions_built_in.inference_engine.client")
    parser.add_argument("--engine", help="path to engine.json (default: the newest under output/)")
    parser.add_argument("--url", help="engine or proxy URL instead of engine.json")
    parser.add_argument("--token", default=os.environ.get("AITK_ENGINE_TOKEN"))
    sub = parser.add_subparsers(dest="command", required=True)
    for name in ("health", "models", "queue", "outputs"):
        sub.add_parser(name)
    sub.add_parser("cancel").add_argument("request_id")
    g = sub.add_parser("generate")
    g.add_argument("--arch", default="sd1")
    g.add_argument("--model", required=True, help="hub id, local path or tiny:<arch>")
    g.add_argument("--dtype")
    g.add_argument("--prompt", required=True)
    g.add_argument("--negative", default="")
    g.add_argument("--width", type=int)
    g.add_argument("--height", type=int)
    g.add_argument("--steps", type=int)
    g.add_argument("--cfg", type=float)
    g.add_argument("--seed", type=int, default=-1)
    g.add_argument("--frames", type=int)
    g.add_argument("--fps", type=int)
    g.add_argument("--duration", type=float)
    g.add_argument("--lyrics")
    g.add_argument("--ext")
    g.add_argument("--ctrl-img", help="local image, uploaded to /assets first")
    g.add_argument("--latents", default="raw", choices=("raw", "x0", "none"))
    g.add_argument("--every", type=int, default=1, help="stream a latent every N steps")
    g.add_argument("--max-frames", type=int, default=0, help="video: at most this many latent frames")
    g.add_argument("--downsample", type=int, default=1, help="average-pool streamed latents by this factor")
    g.add_argument("--save-latents", action="store_true", help="write a PNG preview per latent frame")
    g.add_argument("--out", default=".", help="folder for the result (and latent previews)")
    grid = sub.add_parser("grid", help="a compare grid: POST /grid with a JSON body (a grid's replay file works)")
    grid.add_argument("body", help="the grid body as a JSON file")
    grid.add_argument("--out", default=".", help="folder for the grid's pages")
    return parser


def main(argv=None) -> int:
    args = parser().parse_args(argv)
    client = EngineClient(args.url, args.token) if args.url else EngineClient.from_engine_json(args.engine)
    with client:
        try:
            if args.command == "generate":
                return run_generate(client, args)
            if args.command == "grid":
                return run_grid(client, args)
            if args.command == "cancel":
                result = client.cancel(args.request_id)
            else:
                result = getattr(client, args.command)()
        except EngineError as e:
            print(e, file=sys.stderr)
            return 1
        print(json.dumps(result, indent=2))
    return 0


if __name__ == "__main__":
    sys.exit(main())
