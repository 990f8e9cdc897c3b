"""Entry points of the data stage (rules/data.smk)."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

from . import entry_point


def _mirror_files(smk: Any) -> list[Path]:
    """The local files a data rule was given as input (the mirror's or the entry's; none when it downloads)."""
    files = getattr(smk.input, "mirror", None) or getattr(smk.input, "files", [])
    return [Path(files)] if isinstance(files, str) else [Path(p) for p in files]


def _field_limit(smk: Any) -> None:
    """The csv readers' longest field (data.max_field_chars): the csv module holds it process-wide."""
    import csv

    csv.field_size_limit(int(smk.params.max_field_chars))


@entry_point("glue_table")
def glue_table(smk: Any) -> None:
    from ..data.build import build_glue

    build_glue(smk.params.glue_task, smk.wildcards.split, _mirror_files(smk), smk.output[0],
               mirror=smk.params.mirror, offline=smk.params.offline, corpus=smk.wildcards.task)


@entry_point("task_table")
def task_table(smk: Any) -> None:
    from ..data.build import build_task
    from ..data.entries import TaskSpec

    _field_limit(smk)
    build_task(TaskSpec.from_params(dict(smk.params.task)), smk.wildcards.split, _mirror_files(smk), smk.output[0],
               offline=smk.params.offline)


@entry_point("wic_table")
def wic_table(smk: Any) -> None:
    from ..data.build import build_wic

    build_wic(smk.wildcards.split, _mirror_files(smk), smk.output[0], mirror=smk.params.mirror,
              offline=smk.params.offline, download_dir=smk.params.downloads, url=smk.params.release["url"],
              sha256=smk.params.release["sha256"])


def _treebank_split(smk: Any, build: Callable[..., None]) -> None:
    """A treebank entry's split built by ``build`` (its table, or its coreference mentions): both read the
    entry's files from the same places."""
    from ..data.entries import TreebankEntry

    build(TreebankEntry.from_params(dict(smk.params.treebank)), smk.wildcards.split, _mirror_files(smk), smk.output[0],
          mirror=smk.params.mirror, offline=smk.params.offline, download_dir=smk.params.downloads,
          ud_tag=smk.params.ud_release, ud_url=smk.params.ud_url, ud_api_url=smk.params.ud_api_url)


@entry_point("treebank_table")
def treebank_table(smk: Any) -> None:
    from ..data.build import build_treebank

    _treebank_split(smk, build_treebank)


@entry_point("coreference_mentions")
def coreference_mentions(smk: Any) -> None:
    from ..data.build import build_mentions

    _treebank_split(smk, build_mentions)


@entry_point("wiki_segments")
def wiki_segments(smk: Any) -> None:
    from ..data.build import build_wiki

    build_wiki(_mirror_files(smk), smk.output[0], n_segments=smk.params.n_segments, seed=smk.params.seed,
               max_words=smk.params.max_words, hub=smk.params.hub, mirror=smk.params.mirror,
               offline=smk.params.offline)


@entry_point("glove_vectors")
def glove_vectors(smk: Any) -> None:
    from ..data.build import build_glove

    build_glove(_mirror_files(smk), smk.output[0], max_words=smk.params.max_words,
                mirror=smk.params.mirror, offline=smk.params.offline, download_dir=smk.params.downloads,
                url=smk.params.release["url"], sha256=smk.params.release["sha256"])


@entry_point("data_summary")
def data_summary(smk: Any) -> None:
    from ..data.build import summarize

    summarize(list(smk.input), smk.output[0])
