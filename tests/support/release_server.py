"""Tiny release files (UD treebank files, the WiC and GloVe zips) served over HTTP on 127.0.0.1 by a thread of
the test, standing in for the release URLs: the prefetch and the downloads reach them as they would the real ones.
"""

from __future__ import annotations

import contextlib
import functools
import http.server
import json
import socket
import threading
import zipfile
from collections.abc import Iterator
from pathlib import Path

from support.hub_server import git_blob_id
from support.mirror import CONLLU

WIC_SPLITS = {"train": 6, "dev": 4, "test": 2}
GLOVE_WORDS = ["the", "dog", "sat", "it", "go", "she", "sees", "big", "house", "."]


def wic_lines(n: int) -> tuple[str, str]:
    data = [f"dog\tN\t1-{i % 2}\tThe dog sat .\t{'dog ran' if i % 2 else 'A dog'} quickly ." for i in range(n)]
    return "\n".join(data) + "\n", "\n".join("T" if i % 2 else "F" for i in range(n)) + "\n"


def glove_text(dim: int = 5) -> str:
    return "".join(w + " " + " ".join(f"{(i * 7 + j) % 11 / 10:.1f}" for j in range(dim)) + "\n"
                   for i, w in enumerate(GLOVE_WORDS))


def free_port() -> int:
    """A port of 127.0.0.1 nothing listens on (an unreachable source's URL)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def write_contents_api(root: Path, repo: str, file: str, answer: dict) -> None:
    """What GitHub's contents API answers for ``repo``/``file``, at api/REPO/FILE (the server drops '?ref=...')."""
    (root / "api" / repo).mkdir(parents=True, exist_ok=True)
    (root / "api" / repo / file).write_text(json.dumps(answer), encoding="utf-8")


def write_releases(root: Path) -> Path:
    """``root`` laid out as the release URLs are: ud/REPO/FILE, WiC_dataset.zip, glove.6B.zip; and the UD files'
    git blob ids as GitHub's contents API gives them, at api/REPO/FILE (data.ud_api_url: BASE/api/{repo}/{file})."""
    ewt = root / "ud" / "UD_English-EWT"
    ewt.mkdir(parents=True)
    for n, split in enumerate(("train", "dev", "test")):
        path = ewt / f"en_ewt-ud-{split}.conllu"
        path.write_text("".join(CONLLU.format(n=n * 10 + i) for i in range(2)), encoding="utf-8")
        write_contents_api(root, "UD_English-EWT", path.name,
                           {"name": path.name, "sha": git_blob_id(path.read_bytes())})
    with zipfile.ZipFile(root / "WiC_dataset.zip", "w") as archive:
        for split, n in WIC_SPLITS.items():
            data, gold = wic_lines(n)
            archive.writestr(f"{split}/{split}.data.txt", data)
            archive.writestr(f"{split}/{split}.gold.txt", gold)
    with zipfile.ZipFile(root / "glove.6B.zip", "w") as archive:
        archive.writestr("glove.6B.50d.txt", glove_text())
        archive.writestr("glove.6B.100d.txt", glove_text(dim=7))
    return root


class _Quiet(http.server.SimpleHTTPRequestHandler):
    requests: list[str]

    def log_message(self, *args) -> None:  # the test's output stays readable
        pass

    def do_GET(self) -> None:
        self.requests.append(self.path)
        super().do_GET()


@contextlib.contextmanager
def running(handler, lifetime_s: float | None = None) -> Iterator[str]:
    """An HTTP server of ``handler`` (a request handler class, or a factory of one) on a free port of 127.0.0.1, in a
    thread of the test; yields its base URL. ``lifetime_s``: it stops by itself after that long (a test that hangs
    still ends)."""
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    stop = threading.Timer(lifetime_s, server.shutdown) if lifetime_s else None
    thread.start()
    if stop is not None:
        stop.daemon = True
        stop.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        if stop is not None:
            stop.cancel()
        server.shutdown()
        server.server_close()
        thread.join(timeout=5)


@contextlib.contextmanager
def serve(root: Path) -> Iterator[tuple[str, list[str]]]:
    """Serve ``root`` on 127.0.0.1 (a free port); yield its base URL and the list of paths requested."""
    requests: list[str] = []
    handler = type("Handler", (_Quiet,), {"requests": requests})
    with running(functools.partial(handler, directory=str(root))) as base:
        yield base, requests
