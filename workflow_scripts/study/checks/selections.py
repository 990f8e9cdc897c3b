"""What a study selects of its config's corpora and their splits (the config checks and the study model read it)."""

from __future__ import annotations

import logging
from typing import Any

from ...data.corpora import Corpora

log = logging.getLogger(__name__)


def selected_corpora(config: dict[str, Any]) -> list[str]:
    """The corpora the study selects: its tasks and treebanks, and Wikipedia and GloVe where asked for."""
    study = config["study"]
    corpora = [*study["tasks"], *study["treebanks"]]
    if study["wiki"]:
        corpora.append("wiki")
    if study["glove"]:
        corpora.append("glove")
    return corpora


def selected_splits(config: dict[str, Any], corpus: str, corpora: Corpora | None = None) -> list[str]:
    """The splits of ``corpus`` the study builds; offline, only those the mirror holds (a local entry's
    splits are all built: a missing file is an error of the entry's checks)."""
    corpora = corpora or Corpora(config)
    splits = list(corpora.splits(corpus))
    if config["offline"] and not corpora.is_local(corpus):
        kept = [s for s in splits if corpora.source_files(corpus, s)]
        left_out = sorted(set(splits) - set(kept))
        if left_out:
            log.info("offline: %s split(s) %s are not in the mirror and are left out", corpus, left_out)
        splits = kept
    return splits
