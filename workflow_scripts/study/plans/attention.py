"""The attention stage's plan: one dump per (subject, checkpoint, corpus, split) the config selects and the study
builds, and the table of dumps."""

from __future__ import annotations

from typing import TYPE_CHECKING

from .declarations import Analysis

if TYPE_CHECKING:
    from ..model import Study

STAGE = "attention"
ANALYSES = (Analysis("attention_dumps", "(subject, checkpoint, corpus, split) x shard", tables=("attention_dumps",),
                     captions=("attention_dumps.rst",), sharded=True),)


def plan(study: Study) -> None:
    attention = study.config["attention"]
    study.dumps = [(subject, checkpoint, corpus, split)
                   for subject in study.subjects for checkpoint in attention["checkpoints"]
                   for corpus, splits in attention["corpora"].items() for split in splits
                   if split in study.splits.get(corpus, [])]
    study.stage_outputs[STAGE] = [study.paths.table(name) for name in ANALYSES[0].tables]
