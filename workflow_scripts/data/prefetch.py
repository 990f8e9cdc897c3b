"""Filling a mirror (docs/data.md's layout) with every split a study needs, for a run without network.

Each function fetches one source the way the data jobs would (release files through :func:`.fetch.verified_download`,
verified the same way; hub datasets through the same loaders) and writes it where the data jobs look first:
the files of :func:`.registry.mirror_candidates` and the entries' ``mirror_candidates``. What the hub gives is
written in the layout's text formats and read back with the jobs' own readers before it counts as fetched, so
the offline run reads exactly what the hub gave.

``PREFETCH.json`` at the mirror's root records, for every file written, its sha256, where it came from and how
it was checked; a file recorded there whose content still matches, and that came from the source the config
names now (URL, release tag, hub revision), is not fetched again.
"""

from __future__ import annotations

import json
import logging
import tempfile
import zipfile
from dataclasses import dataclass, field
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import pyarrow as pa

from ..core.errors import AtlasError
from ..core.io import atomic_path
from .entries import TaskSpec, TreebankEntry
from .fetch import Fetched, file_digests, not_a_zip, verified_download
from .glue import load_glue_from_hub, parse_glue_tsv
from .registry import GLUE_TASKS, PREFETCH_MANIFEST, mirror_candidates
from .task_files import load_task_from_hub, read_task_file
from .wic import parse_wic_files

log = logging.getLogger(__name__)

MANIFEST = PREFETCH_MANIFEST
GLOVE_MEMBER = "glove.6B.50d.txt"
HUB_WRITTEN = "written from the hub's copy (the datasets library checks its own downloads)"
# The WikiText configurations whose text the mirror layout has a place for (registry.mirror_candidates('wiki')).
WIKI_FILES = {("wikitext-103-raw-v1", "train"): "wikitext-103-raw/wiki.train.raw",
              ("wikitext-2-raw-v1", "train"): "wikitext-2-raw/wiki.train.raw",
              ("wikitext-2-raw-v1", "test"): "wikitext-2-raw/wiki.test.raw"}


class PrefetchError(AtlasError):
    """A source the study needs could not be put into the mirror; the message names it and the fix."""


def read_manifest(path: Path) -> dict[str, dict[str, str]]:
    """The files a prefetch record (``PREFETCH.json``) lists: mirror path -> sha256, source, verified."""
    try:
        files = json.loads(Path(path).read_text(encoding="utf-8"))["files"]
        if not isinstance(files, dict):
            raise ValueError("'files' is not a map of mirror paths")
        for rel, record in files.items():
            if not isinstance(record, dict) or not all(isinstance(record.get(k), str)
                                                       for k in ("sha256", "source", "verified")):
                raise ValueError(f"the record of {rel!r} lacks its sha256, source or verified")
    except (OSError, ValueError, KeyError, TypeError) as exc:
        raise PrefetchError(
            f"{path}: not a readable prefetch record ({type(exc).__name__}: {exc})\nfix: restore it, or move it "
            "away and run the prefetch into a new, empty mirror folder (without its record, a mirror's files are "
            "trusted as your own)") from exc
    return files


def _same_source(recorded: str, expected: str) -> bool:
    """Whether a recorded source is ``expected``: the URL, hub dataset and revision, or the archive it was
    unpacked from (recorded as ARCHIVE_URL!MEMBER)."""
    return recorded == expected or recorded.startswith(expected + "!")


@dataclass
class Mirror:
    """The mirror being filled, and its record of what the prefetch wrote (``PREFETCH.json``)."""

    root: Path
    files: dict[str, dict[str, str]] = field(default_factory=dict)

    @classmethod
    def open(cls, root: str | Path) -> Mirror:
        root = Path(root).resolve()
        root.mkdir(parents=True, exist_ok=True)
        manifest = root / MANIFEST
        return cls(root, read_manifest(manifest) if manifest.is_file() else {})

    def holding(self, candidates: list[list[str]], sources: dict[str, str]) -> tuple[list[str], str] | None:
        """The first candidate file set the mirror already holds, with why it is trusted; None when it holds
        none whole, or a file the prefetch wrote came from another source than ``sources`` (mirror path ->
        the URL or hub dataset the config names now) or has changed since (it is fetched again)."""
        for candidate in candidates:
            if not all((self.root / rel).is_file() for rel in candidate):
                continue
            recorded = [rel for rel in candidate if rel in self.files]
            moved = [f"{rel} (from {self.files[rel]['source']}, now {sources[rel]})" for rel in recorded
                     if rel in sources and not _same_source(self.files[rel]["source"], sources[rel])]
            if moved:
                log.warning("the source changed since the prefetch wrote %s: fetching it again", ", ".join(moved))
                return None
            changed = [rel for rel in recorded
                       if file_digests(self.root / rel)["sha256"] != self.files[rel]["sha256"]]
            if changed:
                log.warning("%s changed since the prefetch wrote it: fetching it again", ", ".join(changed))
                return None
            why = "verified: sha256 as the prefetch recorded" if len(recorded) == len(candidate) else \
                "already in the mirror (not written by a prefetch: kept as it is)"
            return candidate, why
        return None

    def record(self, rel: str, source: str, verified: str) -> None:
        self.files[rel] = {"sha256": file_digests(self.root / rel)["sha256"], "source": source, "verified": verified,
                           "fetched": datetime.now(UTC).isoformat(timespec="seconds")}

    def save(self) -> None:
        with atomic_path(self.root / MANIFEST) as tmp:
            tmp.write_text(json.dumps({"files": dict(sorted(self.files.items()))}, indent=1) + "\n",
                           encoding="utf-8")


@dataclass(frozen=True)
class Step:
    """One line of the prefetch's summary."""

    what: str
    status: str  # 'fetched' or 'present'
    detail: str


def _unreachable(what: str, where: str, exc: BaseException, fix: str) -> PrefetchError:
    return PrefetchError(f"{what}: {where} could not be fetched: {type(exc).__name__}: {exc}\nfix: {fix}")


def _download(url: str, destination: Path, sha256: str | None, config_key: str, what: str,
              url_key: str, blob_api_url: str | None = None) -> Fetched:
    """``verified_download`` (verified as the data jobs verify), with an error naming the URL and the fix."""
    try:
        return verified_download(url, destination, sha256=sha256, config_key=config_key, blob_api_url=blob_api_url)
    except AtlasError:
        raise  # a checksum mismatch: its own message names both digests and the fix
    except Exception as exc:
        raise _unreachable(what, url, exc, f"run the prefetch where {url} is reachable (the login node), or point "
                                           f"config key '{url_key}' at a copy that is (a local HTTP server "
                                           "serving the release files works)") from exc


def fetch_treebank(mirror: Mirror, entry: TreebankEntry, split: str, *, ud_release: str, ud_url: str,
                   ud_api_url: str | None) -> Step:
    """A 'ud' or 'url' treebank's split, each file downloaded into the mirror and checked."""
    candidates, urls = entry.mirror_candidates(split), entry.urls(split, ud_release, ud_url)
    held = mirror.holding(candidates, dict(zip(candidates[0], urls)))
    if held:
        return Step(f"{entry.name}/{split}", "present", held[1])
    url_key = "data.ud_url" if entry.source == "ud" else f"treebanks.{entry.name}.url"
    for url, name, rel, api in zip(urls, entry.splits[split], candidates[0],
                                   entry.checksum_urls(split, ud_release, ud_api_url)):
        key = f"treebanks.{entry.name}.sha256: {name}"
        fetched = _download(url, mirror.root / rel, entry.sha256.get(name), key, f"treebank {entry.name!r}", url_key,
                            api)
        mirror.record(rel, url, fetched.verified)
    return Step(f"{entry.name}/{split}", "fetched", ", ".join(candidates[0]) + f" ({fetched.verified})")


def fetch_release_members(mirror: Mirror, corpus: str, targets: dict[str, str], *, url: str, sha256: str | None,
                          key: str) -> Step:
    """Files of a release archive (WiC's, GloVe's) into the mirror: ``targets`` maps a mirror path to the
    archive member it is (a member named by its path's ending). The archive is removed once unpacked."""
    held = mirror.holding([list(targets)], dict.fromkeys(targets, url))
    if held:
        return Step(corpus, "present", held[1])
    with tempfile.TemporaryDirectory(dir=mirror.root, prefix=".prefetch-") as folder:
        # A fixed name: the URL's last part may be anything ('..', empty, a query).
        fetched = _download(url, Path(folder) / "archive.zip", sha256, f"{key}.sha256", corpus, f"{key}.url")
        try:
            archive = zipfile.ZipFile(fetched.path)
        except zipfile.BadZipFile as exc:
            raise not_a_zip(url, fetched.path, f"{key}.url", exc) from exc
        with archive:
            names = archive.namelist()
            for rel, member in targets.items():
                found = next((n for n in names if n == member or n.endswith("/" + member)), None)
                if found is None:
                    raise PrefetchError(f"{corpus}: {url} holds no {member} (members: {', '.join(names[:10])} ...); "
                                        f"fix: point config key '{key}.url' at the release archive")
                with atomic_path(mirror.root / rel) as tmp, archive.open(found) as source, open(tmp, "wb") as out:
                    while chunk := source.read(1 << 20):
                        out.write(chunk)
                mirror.record(rel, f"{url}!{found}", f"archive {fetched.verified} (archive sha256 {fetched.sha256})")
    return Step(corpus, "fetched", f"{', '.join(targets)} from {url} (sha256 {fetched.sha256}: {fetched.verified})")


def fetch_wic(mirror: Mirror, splits: list[str], *, url: str, sha256: str | None) -> Step:
    targets = {rel: rel.removeprefix("wic/") for split in splits for rel in mirror_candidates("wic", split)[0]}
    step = fetch_release_members(mirror, "wic", targets, url=url, sha256=sha256, key="data.wic")
    for split in splits:  # read back as the jobs read them: a release the reader refuses is no use offline
        data, gold = (mirror.root / rel for rel in mirror_candidates("wic", split)[0])
        parse_wic_files(data, gold)
    return step


def fetch_glove(mirror: Mirror, *, url: str, sha256: str | None) -> Step:
    held = mirror.holding(mirror_candidates("glove", "vectors"), {f"glove/{GLOVE_MEMBER}": url})
    if held:
        return Step("glove", "present", f"{held[0][0]}: {held[1]}")
    return fetch_release_members(mirror, "glove", {f"glove/{GLOVE_MEMBER}": GLOVE_MEMBER}, url=url, sha256=sha256,
                                 key="data.glove")


def _hub_call(what: str, where: str, load: Any) -> Any:
    try:
        return load()
    except AtlasError:
        raise
    except Exception as exc:
        raise _unreachable(what, where, exc, "run the prefetch where the Hugging Face hub is reachable (the login "
                                             "node; HF_ENDPOINT names another endpoint)") from exc


def _written(mirror: Mirror, rel: str, text: str) -> Path:
    path = mirror.root / rel
    with atomic_path(path) as tmp:
        tmp.write_text(text, encoding="utf-8")
    return path


def _same_examples(written: pa.Table, expected: pa.Table, what: str, path: Path) -> None:
    columns = ["text_a", "text_b", "label"]
    if written.select(columns).to_pylist() != expected.select(columns).to_pylist():
        path.unlink()
        raise PrefetchError(f"{what}: the mirror file {path} does not read back as the hub's examples; it was "
                            "removed (please report this)")


def glue_tsv(task_name: str, table: pa.Table) -> str:
    """A GLUE task's split as the GLUE release's TSV layout that :func:`.glue.parse_glue_tsv` reads."""
    task = GLUE_TASKS[task_name]
    rows = table.to_pylist()
    for row in rows:
        if any("\t" in (row[c] or "") or "\n" in (row[c] or "") for c in ("text_a", "text_b")):
            raise PrefetchError(f"GLUE {task_name}: example {row['source_id']} holds a tab or a line break, which "
                                "the GLUE TSV layout cannot hold")

    def label(value: Any) -> str:
        return repr(float(value)) if task.is_regression else task.labels[value]

    if task.headerless_columns is not None:  # CoLA: source, label, original judgement, sentence
        return "".join(f"hub\t{row['label']}\t\t{row['text_a']}\n" for row in rows)
    header = ["index", task.text_a, *([task.text_b] if task.text_b else []), task.label_column]
    lines = ["\t".join(header)] + ["\t".join([row["source_id"], row["text_a"], *([row["text_b"]] if task.text_b
                                                                                  else []), label(row["label"])])
                                   for row in rows]
    return "\n".join(lines) + "\n"


def fetch_glue(mirror: Mirror, task_name: str, split: str, corpus: str) -> Step:
    candidates = mirror_candidates(task_name, split)
    source = f"hub dataset nyu-mll/glue ({task_name}, {GLUE_TASKS[task_name].splits[split]})"
    held = mirror.holding(candidates, dict.fromkeys(candidates[0], source))
    if held:
        return Step(f"{corpus}/{split}", "present", f"{held[0][0]}: {held[1]}")
    table = _hub_call(f"GLUE {task_name}/{split}", "hub dataset nyu-mll/glue", lambda: load_glue_from_hub(task_name,
                                                                                                        split))
    rel = candidates[0][0]
    path = _written(mirror, rel, glue_tsv(task_name, table))
    _same_examples(parse_glue_tsv(task_name, path), table, f"GLUE {task_name}/{split}", path)
    mirror.record(rel, source, HUB_WRITTEN)
    return Step(f"{corpus}/{split}", "fetched", rel)


def fetch_hub_task(mirror: Mirror, spec: TaskSpec, split: str) -> Step:
    """A hub task's split as JSON Lines: its text fields, and its label as the entry declares it."""
    candidates, hub = spec.mirror_candidates(split), spec.source
    revision = f" @ {hub['revision']}" if hub.get("revision") else ""
    where = f"hub dataset {hub['dataset']} ({hub.get('config')}, {spec.splits[split]}){revision}"
    held = mirror.holding(candidates, dict.fromkeys(candidates[0], where))
    if held:
        return Step(f"{spec.name}/{split}", "present", held[1])
    fields = {"entry": spec.name, "text": list(spec.text), "label": spec.label,
              "kind": "regression" if spec.is_regression else "classification",
              "labels": None if spec.labels is None else list(spec.labels)}
    table = _hub_call(f"task {spec.name!r}", where, lambda: load_task_from_hub(
        dataset=hub["dataset"], config=hub.get("config"), revision=hub.get("revision"), split=spec.splits[split],
        **fields))
    lines = []
    for row in table.to_pylist():
        texts = dict(zip(spec.text, (row["text_a"], row["text_b"])))
        value = row["label"] if spec.labels is None else spec.labels[row["label"]]
        lines.append(json.dumps({"idx": row["source_id"], **texts, spec.label: value}, ensure_ascii=False))
    rel = candidates[0][0]
    path = _written(mirror, rel, "\n".join(lines) + "\n")
    _same_examples(read_task_file(path, fmt="jsonl", **fields), table, f"task {spec.name!r}/{split}", path)
    mirror.record(rel, where, HUB_WRITTEN)
    return Step(f"{spec.name}/{split}", "fetched", rel)


def fetch_wiki(mirror: Mirror, hub: dict[str, str]) -> Step:
    """The WikiText lines the Wikipedia segments are drawn from, one hub row a line (so line numbers, the
    segments' source ids, are the hub rows')."""
    rel = WIKI_FILES.get((hub["config"], hub["split"]))
    source = f"hub dataset {hub['dataset']} ({hub['config']}, {hub['split']})"
    held = mirror.holding(mirror_candidates("wiki", "segments"), {rel: source} if rel else {})
    if held:
        return Step("wiki", "present", f"{held[0][0]}: {held[1]} (the offline run reads it)")
    if rel is None or hub["dataset"] not in ("Salesforce/wikitext", "wikitext"):
        raise PrefetchError(f"wiki: the mirror layout has no place for hub dataset {hub['dataset']} "
                            f"({hub['config']}, {hub['split']}); fix: set data.wiki.hub to Salesforce/wikitext with "
                            f"one of {sorted(WIKI_FILES)}, or put a WikiText file into the mirror by hand")
    from .wiki import hub_lines

    lines = _hub_call("wiki", f"hub dataset {hub['dataset']}", lambda: hub_lines(hub["dataset"], hub["config"],
                                                                                  hub["split"]))
    _written(mirror, rel, "".join(line if line.endswith("\n") else line + "\n" for line in lines))
    mirror.record(rel, source, HUB_WRITTEN)
    return Step("wiki", "fetched", rel)
