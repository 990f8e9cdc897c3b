"""Where every file of a study lives under its results folder: one function per kind of file.

Each takes plain names or Snakemake wildcard patterns (``"{model}"``), so that rules and the study
model build the same paths from one place.
"""

from __future__ import annotations

from dataclasses import dataclass

from ..core.subjects import base_model


@dataclass(frozen=True)
class ResultPaths:
    """Paths under one results folder ``root``."""

    root: str

    def data_table(self, corpus: str, split: str) -> str:
        return f"{self.root}/data/{corpus}/{split}.parquet"

    def mentions_table(self, corpus: str, split: str) -> str:
        return f"{self.root}/data/{corpus}/{split}.mentions.parquet"

    def checkpoint_manifest(self, model: str, checkpoint: str) -> str:
        """The one file that stands for a checkpoint of any kind (workflow_scripts.models.checkpoints);
        a subject MODEL@SIGNAL reads its model's."""
        return f"{self.root}/checkpoints/{base_model(model)}/{checkpoint}/checkpoint.json"

    def finetune_metrics(self, model: str, task: str, seed: int | str) -> str:
        return f"{self.root}/finetune/{base_model(model)}/{task}.seed{seed}.metrics.json"

    def annotation(self, corpus: str, split: str) -> str:
        return f"{self.root}/annotation/{corpus}/{split}.parquet"

    def token_table(self, model: str, corpus: str, split: str) -> str:
        """A model's tokens of a split; every signal of the model reads the same (the subject's model's)."""
        return f"{self.root}/tokens/{base_model(model)}/{corpus}/{split}.parquet"

    def dump_dir(self, model: str, checkpoint: str, corpus: str, split: str) -> str:
        return f"{self.root}/attention/{model}/{checkpoint}/{corpus}/{split}"

    def dump_manifest(self, model: str, checkpoint: str, corpus: str, split: str) -> str:
        return f"{self.dump_dir(model, checkpoint, corpus, split)}/manifest.json"

    def analysis(self, stage: str, *parts: str) -> str:
        """A per-job part of a stage's analysis, e.g. analysis('surface', model, checkpoint, 'x.csv')."""
        return "/".join((f"{self.root}/analysis/{stage}", *parts))

    def table(self, name: str) -> str:
        """A study-wide table under tables/ (the files the report and users read)."""
        return f"{self.root}/tables/{name}.csv"

    def figure(self, stage: str, name: str, ext: str) -> str:
        return f"{self.root}/figures/{stage}/{name}.{ext}"

    def page(self, stage: str, name: str) -> str:
        """A self-contained HTML page of a stage, e.g. page('explorer', model)."""
        return f"{self.root}/{stage}/{name}.html"

    def figures(self, stage: str, names: list[str] | tuple[str, ...]) -> list[str]:
        """The PNG and PDF of each named figure of a stage."""
        return [self.figure(stage, name, ext) for name in names for ext in ("png", "pdf")]
