"""Thin entry points between Snakemake rules and the science functions.

Each rule runs ``rules/scripts/entry.py``, which calls :func:`run`; it looks up
the function registered under the rule's name, sets up logging to the rule's
log file and hands over plain values (paths and params). Nothing below this
module knows about Snakemake.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable
from pathlib import Path
from typing import Any

from .io import setup_logging

ENTRY_POINTS: dict[str, Callable[[Any], None]] = {}


def entry_point(rule: str) -> Callable[[Callable[[Any], None]], Callable[[Any], None]]:
    def register(function: Callable[[Any], None]) -> Callable[[Any], None]:
        ENTRY_POINTS[rule] = function
        return function
    return register


def run(smk: Any) -> None:
    """Run the entry point of ``smk.rule`` (the ``snakemake`` object of a script)."""
    log = setup_logging(smk.log[0] if smk.log else None)
    if smk.params.get("offline", False):
        # Make every Hugging Face library fail fast instead of trying the network.
        os.environ["HF_HUB_OFFLINE"] = "1"
        os.environ["HF_DATASETS_OFFLINE"] = "1"
    try:
        function = ENTRY_POINTS[smk.rule]
    except KeyError:
        raise KeyError(f"rule {smk.rule!r} has no entry point in workflow_scripts.entrypoints") from None
    log.info("rule %s: start (threads=%s)", smk.rule, smk.threads)
    try:
        function(smk)
    except Exception:
        log.exception("rule %s failed", smk.rule)
        raise
    log.info("rule %s: done", smk.rule)


def _mirror_files(smk: Any) -> list[Path]:
    """The mirror files a data rule was given as input (none when it downloads)."""
    files = getattr(smk.input, "mirror", [])
    return [Path(files)] if isinstance(files, str) else [Path(p) for p in files]


@entry_point("glue_table")
def glue_table(smk: Any) -> None:
    from .data.build import build_glue

    build_glue(smk.wildcards.task, smk.wildcards.split, _mirror_files(smk), smk.output[0],
               mirror=smk.params.mirror, offline=smk.params.offline)


@entry_point("wic_table")
def wic_table(smk: Any) -> None:
    from .data.build import build_wic

    build_wic(smk.wildcards.split, _mirror_files(smk), smk.output[0], mirror=smk.params.mirror,
              offline=smk.params.offline, download_dir=smk.params.downloads)


@entry_point("treebank_table")
def treebank_table(smk: Any) -> None:
    from .data.build import build_treebank

    build_treebank(smk.wildcards.treebank, smk.wildcards.split, _mirror_files(smk), smk.output[0],
                   mirror=smk.params.mirror, offline=smk.params.offline,
                   download_dir=smk.params.downloads, ud_tag=smk.params.ud_release)


@entry_point("coreference_mentions")
def coreference_mentions(smk: Any) -> None:
    from .data.build import build_mentions

    build_mentions(smk.wildcards.treebank, smk.wildcards.split, _mirror_files(smk), smk.output[0],
                   mirror=smk.params.mirror, offline=smk.params.offline,
                   download_dir=smk.params.downloads, ud_tag=smk.params.ud_release)


@entry_point("wiki_segments")
def wiki_segments(smk: Any) -> None:
    from .data.build import build_wiki

    build_wiki(_mirror_files(smk), smk.output[0], n_segments=smk.params.n_segments, seed=smk.params.seed,
               max_words=smk.params.max_words, hub=smk.params.hub, mirror=smk.params.mirror,
               offline=smk.params.offline)


@entry_point("glove_vectors")
def glove_vectors(smk: Any) -> None:
    from .data.build import build_glove

    build_glove(_mirror_files(smk), smk.output[0], max_words=smk.params.max_words,
                mirror=smk.params.mirror, offline=smk.params.offline, download_dir=smk.params.downloads)


@entry_point("data_summary")
def data_summary(smk: Any) -> None:
    from .data.build import summarize

    summarize(list(smk.input), smk.output[0])


@entry_point("model_card")
def model_card(smk: Any) -> None:
    from .models import describe_model

    describe_model(smk.wildcards.model, dict(smk.params.entry), smk.output[0], offline=smk.params.offline)


@entry_point("models_table")
def models_table(smk: Any) -> None:
    import json

    import pandas as pd

    from .io import write_csv

    cards = [json.loads(Path(p).read_text()) for p in smk.input]
    frame = pd.DataFrame.from_records(cards).drop(columns=["special_tokens"])
    write_csv(frame, smk.output[0])
    logging.getLogger(__name__).info("%d models", len(frame))


@entry_point("pretrained_checkpoint")
def pretrained_checkpoint(smk: Any) -> None:
    from .checkpoints import make_pretrained
    from .models import model_location

    entry = dict(smk.params.entry)
    make_pretrained(smk.wildcards.model, model_location(smk.wildcards.model, entry),
                    Path(smk.output[0]).parent, revision=entry.get("revision"))


@entry_point("random_checkpoint")
def random_checkpoint(smk: Any) -> None:
    from .checkpoints import make_random
    from .models import model_location

    entry = dict(smk.params.entry)
    make_random(smk.wildcards.model, model_location(smk.wildcards.model, entry), Path(smk.output[0]).parent,
                smk.params.seed, revision=entry.get("revision"), offline=smk.params.offline)
