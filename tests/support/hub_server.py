"""A Hugging Face hub stand-in on 127.0.0.1 for the tests: the endpoints that ``huggingface_hub`` and ``datasets``
call when ``HF_ENDPOINT`` points at it, over model and dataset repositories the test builds in memory.

It answers as the hub does where the clients read the answer: repository info (``?blobs=true`` adds sizes, git blob
ids and LFS sha256s), trees, paths-info, refs, and ``resolve`` with X-Repo-Commit, ETag, X-Linked-Etag and
X-Linked-Size; an LFS file's ``resolve`` is a 302 to a second server standing in for the hub's CDN (another origin,
so the clients take the file's metadata from the redirect, as they do from the hub). Errors carry the hub's
X-Error-Code (RepoNotFound, RevisionNotFound, EntryNotFound), which the clients turn into their own exceptions.

Every request is recorded as METHOD and path template (``GET /api/models/{repo}/revision/{rev}?blobs``) so that
a test can print which endpoints the real clients used. The servers stop with the context, or by themselves
after ``lifetime_s`` seconds or ``max_requests`` requests, so a test that hangs cannot leave them running.
"""

from __future__ import annotations

import contextlib
import hashlib
import http.server
import json
import re
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import parse_qs, unquote, urlsplit

import yaml

# What the hub's default .gitattributes stores in LFS (the binary formats), and anything large.
LFS_SUFFIXES = (".safetensors", ".bin", ".parquet", ".h5", ".onnx", ".msgpack", ".pt", ".pth", ".ckpt", ".arrow")
LFS_MIN_SIZE = 10 * 1024 * 1024
DATE = "2024-01-01T00:00:00.000Z"


def git_blob_id(content: bytes) -> str:
    """What git (and the hub, and GitHub's contents API, as "sha") names a file by: sha1 of b"blob SIZE\\0" and the
    content."""
    return hashlib.sha1(b"blob %d\0" % len(content) + content).hexdigest()


@dataclass(frozen=True)
class Blob:
    """One file's bytes and the digests the hub lists for it."""

    content: bytes
    lfs: bool

    @property
    def blob_id(self) -> str:  # an LFS file's git blob is its pointer; the hub lists that pointer's id
        return git_blob_id(self.pointer) if self.lfs else git_blob_id(self.content)

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.content).hexdigest()

    @property
    def pointer(self) -> bytes:
        return (f"version https://git-lfs.github.com/spec/v1\noid sha256:{self.sha256}\n"
                f"size {len(self.content)}\n").encode()

    @property
    def etag(self) -> str:  # the hub's ETag: sha256 for an LFS file, the git blob id for any other
        return self.sha256 if self.lfs else self.blob_id


@dataclass
class HubRepo:
    """A repository: commits (sha -> files) and refs (branch and tag names -> sha)."""

    repo_id: str
    kind: str = "model"  # model | dataset
    commits: dict[str, dict[str, Blob]] = field(default_factory=dict)
    refs: dict[str, str] = field(default_factory=dict)
    tags: set[str] = field(default_factory=set)
    # Bytes served instead of a file's own (path -> bytes; an LFS file's by the CDN), under the listed digests and
    # ETag: a file changed after the hub listed it.
    tampered: dict[str, bytes] = field(default_factory=dict)

    def commit(self, files: dict[str, bytes | Path], *, branch: str = "main", tag: str | None = None) -> str:
        """Add a commit holding ``files`` (repo path -> bytes or a local file) on ``branch``; return its sha."""
        blobs = {}
        for path, content in sorted(files.items()):
            data = content.read_bytes() if isinstance(content, Path) else content
            blobs[path] = Blob(data, path.endswith(LFS_SUFFIXES) or len(data) >= LFS_MIN_SIZE)
        sha = hashlib.sha1(json.dumps([self.repo_id, len(self.commits), {p: b.etag for p, b in blobs.items()}])
                           .encode()).hexdigest()
        self.commits[sha] = blobs
        self.refs[branch] = sha
        if tag:
            self.refs[tag] = sha
            self.tags.add(tag)
        return sha

    def resolve(self, revision: str) -> str | None:
        revision = unquote(revision).removeprefix("refs/heads/").removeprefix("refs/tags/")
        if revision in self.refs:
            return self.refs[revision]
        return revision if revision in self.commits else None


def folder_files(folder: Path) -> dict[str, Path]:
    """Every file under ``folder`` by its path relative to it (a repository's content from a local folder)."""
    return {p.relative_to(folder).as_posix(): p for p in sorted(folder.rglob("*")) if p.is_file()}


def dataset_card(configs: dict[str, dict[str, str]], features: dict[str, list] | None = None) -> bytes:
    """A dataset repository's README.md whose YAML header names each config's splits and their files, as the hub's
    parquet repositories do (config -> split -> glob); ``features`` (config -> dataset_info features) optional."""
    header: dict = {"configs": [{"config_name": name,
                                 "data_files": [{"split": s, "path": p} for s, p in splits.items()]}
                                for name, splits in configs.items()]}
    if features:
        header["dataset_info"] = [{"config_name": name, "features": f} for name, f in features.items()]
    return ("---\n" + yaml.safe_dump(header, sort_keys=False) + "---\n\nA stand-in served by the tests.\n").encode()


# Routes: (method set, regex, template). {repo} is matched against the served repositories, not by the regex.
_API = re.compile(r"^/api/(?P<type>models|datasets)/(?P<rest>.+)$")
_RESOLVE = re.compile(r"^/(?:(?P<type>datasets)/)?(?P<rest>.+?)/resolve/(?P<tail>.+)$")
_LFS = re.compile(r"^/lfs/(?P<sha>[0-9a-f]{64})$")


class _Handler(http.server.BaseHTTPRequestHandler):
    hub: HubServer
    protocol_version = "HTTP/1.1"

    def log_message(self, *args) -> None:  # the test's output stays readable
        pass

    def do_HEAD(self) -> None:
        self._route("HEAD")

    def do_GET(self) -> None:
        self._route("GET")

    def do_POST(self) -> None:
        self._route("POST")

    # -- answers -----------------------------------------------------------------------------------------------
    def _send(self, status: int, body: bytes = b"", headers: dict[str, str] | None = None,
              content_type: str = "application/json") -> None:
        self.send_response(status)
        self.send_header("Content-Type", content_type)
        for key, value in (headers or {}).items():
            self.send_header(key, value)
        self.send_header("Content-Length", str(len(body)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(body)

    def _json(self, value, headers: dict[str, str] | None = None) -> None:
        self._send(200, json.dumps(value).encode(), headers)

    def _error(self, status: int, code: str, message: str, headers: dict[str, str] | None = None) -> None:
        self._send(status, json.dumps({"error": message}).encode(),
                   {"X-Error-Code": code, "X-Error-Message": message, **(headers or {})})

    def _bytes(self, content: bytes, headers: dict[str, str]) -> None:
        """A file's bytes, or the range a ``Range: bytes=A-B`` header asks for (fsspec reads Parquet in ranges)."""
        ranged = re.fullmatch(r"bytes=(\d*)-(\d*)", self.headers.get("Range", ""))
        headers = {**headers, "Accept-Ranges": "bytes"}
        if not ranged or not any(ranged.groups()):
            return self._send(200, content, headers, "application/octet-stream")
        start, end = ranged.groups()
        first = int(start) if start else max(0, len(content) - int(end))
        last = min(int(end), len(content) - 1) if (end and start) else len(content) - 1
        if first >= len(content):
            return self._send(416, b"", {"Content-Range": f"bytes */{len(content)}"})
        self._send(206, content[first:last + 1], {**headers, "Content-Range": f"bytes {first}-{last}/{len(content)}"},
                   "application/octet-stream")

    # -- routing ------------------------------------------------------------------------------------------------
    def _route(self, method: str) -> None:
        url = urlsplit(self.path)
        query = parse_qs(url.query)
        if not self.hub.count_request():
            return self._error(503, "Overloaded", "the test's hub server is past its request limit")
        try:
            if self.server is self.hub.cdn:
                found = _LFS.match(url.path)
                self.hub.record(method, "cdn:/lfs/{sha256}", query)
                return self._cdn(found.group("sha")) if found else self._error(404, "EntryNotFound", url.path)
            if found := _API.match(url.path):
                return self._api(method, found.group("type")[:-1], found.group("rest"), query)
            if found := _RESOLVE.match(url.path):
                return self._resolve(method, found.group("type"), found.group("rest"), found.group("tail"), query)
            self.hub.record(method, url.path, query)
            self._error(404, "NotFound", f"no such endpoint: {method} {url.path}")
        except (BrokenPipeError, ConnectionResetError):  # the client hung up (it had what it needed)
            pass

    def _repo(self, kind: str, rest: str) -> tuple[HubRepo | None, str]:
        for repo_id, repo in self.hub.repos.items():
            if repo.kind == kind and (rest == repo_id or rest.startswith(repo_id + "/")):
                return repo, rest[len(repo_id):].lstrip("/")
        return None, rest

    def _api(self, method: str, kind: str, rest: str, query: dict) -> None:
        repo, tail = self._repo(kind, rest)
        where = f"/api/{kind}s/{{repo}}"
        if repo is None:
            self.hub.record(method, f"/api/{kind}s/<unknown repo>", query)
            return self._error(404, "RepoNotFound", f"Repository {rest} not found")
        if tail == "refs":
            self.hub.record(method, where + "/refs", query)
            return self._json(self._refs(repo))
        parts = tail.split("/", 1)
        action, arg = (parts[0], parts[1] if len(parts) > 1 else "") if tail else ("", "")
        if action == "paths-info" and method == "POST":
            self.hub.record(method, where + "/paths-info/{rev}", query)
            form = parse_qs(self.rfile.read(int(self.headers.get("Content-Length", 0))).decode())
            return self._tree_answer(repo, arg, form.get("paths", []), listing=False)
        if action == "tree":
            revision, _, path = arg.partition("/")
            self.hub.record(method, where + "/tree/{rev}" + ("/{path}" if path else ""), query)
            return self._tree_answer(repo, revision, [unquote(path)], listing=True,
                                     recursive=query.get("recursive", ["False"])[0].lower() == "true")
        if action in ("", "revision"):
            self.hub.record(method, where + ("/revision/{rev}" if action else ""), query)
            sha = repo.resolve(arg or "main")
            if sha is None:
                return self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(arg)}")
            return self._json(self._info(repo, sha, blobs="blobs" in query))
        self.hub.record(method, where + f"/{action}/...", query)
        self._error(404, "NotFound", f"no such endpoint: {method} /api/{kind}s/{rest}")

    def _info(self, repo: HubRepo, sha: str, *, blobs: bool) -> dict:
        siblings = []
        for path, blob in repo.commits[sha].items():
            entry: dict = {"rfilename": path}
            if blobs:
                entry.update(size=len(blob.content), blobId=blob.blob_id)
                if blob.lfs:
                    entry["lfs"] = {"size": len(blob.content), "sha256": blob.sha256, "pointerSize": len(blob.pointer)}
            siblings.append(entry)
        info = {"_id": sha[:24], "id": repo.repo_id, "author": repo.repo_id.split("/")[0], "sha": sha,
                "lastModified": DATE, "createdAt": DATE, "private": False, "gated": False, "disabled": False,
                "downloads": 0, "likes": 0, "tags": [], "siblings": siblings}
        readme = repo.commits[sha].get("README.md")
        card = re.match(rb"---\n(.*?)\n---", readme.content, re.S) if readme else None
        if card:
            info["cardData"] = yaml.safe_load(card.group(1))
        if repo.kind == "model":
            info.update(modelId=repo.repo_id, library_name="transformers", pipeline_tag=None)
        return info

    def _refs(self, repo: HubRepo) -> dict:
        def ref(name: str, kind: str) -> dict:
            return {"name": name, "ref": f"refs/{kind}/{name}", "targetCommit": repo.refs[name]}

        return {"branches": [ref(n, "heads") for n in repo.refs if n not in repo.tags],
                "tags": [ref(n, "tags") for n in sorted(repo.tags)], "converts": []}

    def _tree_answer(self, repo: HubRepo, revision: str, paths: list[str], *, listing: bool,
                     recursive: bool = False) -> None:
        sha = repo.resolve(revision)
        if sha is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}")
        files = repo.commits[sha]
        folders = {"/".join(p.split("/")[:i]) for p in files for i in range(1, p.count("/") + 1)}

        def entry(path: str) -> dict:
            if path in folders:
                return {"type": "directory", "oid": hashlib.sha1(path.encode()).hexdigest(), "size": 0, "path": path}
            blob = files[path]
            item = {"type": "file", "oid": blob.blob_id, "size": len(blob.content), "path": path}
            if blob.lfs:
                item["lfs"] = {"oid": blob.sha256, "size": len(blob.content), "pointerSize": len(blob.pointer)}
            return item

        if not listing:  # paths-info: the paths that exist, the others left out
            return self._json([entry(p) for p in paths if p in files or p in folders])
        base = paths[0].strip("/")
        if base and base not in folders:
            return self._error(404, "EntryNotFound", f"{base} does not exist on {revision}")
        inside = [p for p in sorted(set(files) | folders) if not base or p.startswith(base + "/")]
        depth = base.count("/") + 1 if base else 0
        self._json([entry(p) for p in inside if recursive or p.count("/") == depth])

    def _resolve(self, method: str, dataset: str | None, rest: str, tail: str, query: dict) -> None:
        kind = "dataset" if dataset else "model"
        prefix = "/datasets" if dataset else ""
        repo, _ = self._repo(kind, rest)
        self.hub.record(method, prefix + "/{repo}/resolve/{rev}/{path}", query)
        if repo is None or rest != repo.repo_id:
            return self._error(404, "RepoNotFound", f"Repository {rest} not found")
        revision, _, path = tail.partition("/")
        sha = repo.resolve(revision)
        if sha is None:
            return self._error(404, "RevisionNotFound", f"Invalid rev id: {unquote(revision)}")
        blob = repo.commits[sha].get(unquote(path))
        if blob is None:
            return self._error(404, "EntryNotFound", f"{unquote(path)} does not exist on {revision}",
                               {"X-Repo-Commit": sha})
        self.hub.record_file(repo.repo_id, sha, unquote(path))
        headers = {"X-Repo-Commit": sha, "ETag": f'"{blob.blob_id}"'}
        if blob.lfs:  # to the CDN, whose address the redirect gives; the metadata is on this answer
            self.hub.lfs[blob.sha256] = (repo, unquote(path), blob)
            headers.update({"X-Linked-Etag": f'"{blob.sha256}"', "X-Linked-Size": str(len(blob.content)),
                            "Location": f"{self.hub.cdn_url}/lfs/{blob.sha256}"})
            return self._send(302, b"", headers)
        self._bytes(repo.tampered.get(unquote(path), blob.content), headers)

    def _cdn(self, sha256: str) -> None:
        if sha256 not in self.hub.lfs:
            return self._error(404, "EntryNotFound", f"no LFS object {sha256}")
        repo, path, blob = self.hub.lfs[sha256]
        self._bytes(repo.tampered.get(path, blob.content), {"ETag": f'"{sha256}"'})


class HubServer:
    """The hub (``url``, for HF_ENDPOINT) and its CDN, serving ``repos``; ``calls`` lists the endpoints used."""

    def __init__(self, repos: list[HubRepo], *, lifetime_s: float = 1200, max_requests: int = 20000) -> None:
        self.repos = {repo.repo_id: repo for repo in repos}
        self.lfs: dict[str, tuple[HubRepo, str, Blob]] = {}
        self.calls: list[str] = []
        self.files: list[tuple[str, str, str]] = []  # (repo, commit, path) of every resolve answered
        self._lock = threading.Lock()
        self._requests, self._max_requests = 0, max_requests
        handler = type("Handler", (_Handler,), {"hub": self})
        self.server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.cdn = http.server.ThreadingHTTPServer(("127.0.0.1", 0), handler)
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}"
        self.cdn_url = f"http://127.0.0.1:{self.cdn.server_address[1]}"
        self._timer = threading.Timer(lifetime_s, self.stop)
        self._timer.daemon = True
        self._stopped = False

    def record(self, method: str, template: str, query: dict) -> None:
        with self._lock:
            self.calls.append(f"{method} {template}" + (f"?{'&'.join(sorted(query))}" if query else ""))

    def record_file(self, repo_id: str, sha: str, path: str) -> None:
        with self._lock:
            self.files.append((repo_id, sha, path))

    def count_request(self) -> bool:
        with self._lock:
            self._requests += 1
            return self._requests <= self._max_requests

    def endpoints(self) -> list[str]:
        """The distinct endpoints called, in the order of their first call."""
        return list(dict.fromkeys(self.calls))

    def start(self) -> HubServer:
        for server in (self.server, self.cdn):
            threading.Thread(target=server.serve_forever, daemon=True).start()
        self._timer.start()
        return self

    def stop(self) -> None:
        with self._lock:
            stopped, self._stopped = self._stopped, True
        if stopped:
            return
        self._timer.cancel()
        for server in (self.server, self.cdn):
            server.shutdown()
            server.server_close()


@contextlib.contextmanager
def serve_hub(repos: list[HubRepo], **limits) -> Iterator[HubServer]:
    """Serve ``repos`` on 127.0.0.1 for the ``with`` block; yield the running :class:`HubServer`."""
    hub = HubServer(repos, **limits).start()
    try:
        yield hub
    finally:
        hub.stop()
