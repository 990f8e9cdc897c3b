"""Where every file of a study lives under its results folder: one function per kind of file.

Each takes plain names or Snakemake wildcard patterns (``"{model}"``), so that rules and the study
model build the same paths from one place: no rule file spells a results path by hand
(tests/study/test_rule_paths.py).
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from ..attention.shards import RECORD_DIR
from ..core.subjects import base_model
from ..finetune.tasks import checkpoint_name

# One folder or file name: what every config name that becomes part of a path may be (checks/path_names.py; the
# schema's 'models' propertyNames says the same).
PATH_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._+-]*")


@dataclass(frozen=True)
class ResultPaths:
    """Paths under one results folder ``root``."""

    root: str

    def data_table(self, corpus: str, split: str) -> str:
        return f"{self.root}/data/{corpus}/{split}.parquet"

    def mentions_table(self, corpus: str, split: str) -> str:
        return f"{self.root}/data/{corpus}/{split}.mentions.parquet"

    def log(self, stage: str, name: str) -> str:
        """A job's log, e.g. log('surface', '{model}_{checkpoint}_surface_heads')."""
        return f"{self.root}/logs/{stage}/{name}.log"

    def model_card(self, model: str) -> str:
        """What a model is (rule model_card): the record its checkpoints are made from."""
        return f"{self.root}/models/{model}/model.json"

    def checkpoint_manifest(self, model: str, checkpoint: str) -> str:
        """The one file that stands for a checkpoint of any kind (workflow_scripts.models.checkpoints);
        a subject MODEL@SIGNAL reads its model's."""
        return f"{self.root}/checkpoints/{base_model(model)}/{checkpoint}/checkpoint.json"

    def finetuned_checkpoint(self, model: str, task: str, seed: int | str, step: int | str = "final") -> str:
        """The manifest of a fine-tuning run's checkpoint at save step ``step``, or at its end ('final')."""
        return self.checkpoint_manifest(model, checkpoint_name(task, seed, step))

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

    def dump_shard(self, model: str, checkpoint: str, corpus: str, split: str, shard: str) -> str:
        """One shard of a dump (``shard``: its stem, e.g. the wildcard '{shard}')."""
        return f"{self.dump_dir(model, checkpoint, corpus, split)}/{shard}.parquet"

    def dump_record(self, model: str, checkpoint: str, corpus: str, split: str, shard: str) -> str:
        """The record a shard's job leaves for the gather (workflow_scripts/attention/shards.py)."""
        return f"{self.dump_dir(model, checkpoint, corpus, split)}/{RECORD_DIR}/{shard}.json"

    def analysis(self, stage: str, *parts: str) -> str:
        """A per-job part of a stage's analysis, e.g. analysis('surface', model, checkpoint, 'x.csv')."""
        return "/".join((f"{self.root}/analysis/{stage}", *parts))

    def shard_partial(self, stage: str, *parts: str, shard_group: str = "{shard_group}") -> str:
        """A shard group's sums that a part's job gathers: analysis(stage, *folders, 'shards', NAME.GROUP.parquet)."""
        *folders, name = parts
        return self.analysis(stage, *folders, "shards", f"{name}.{shard_group}.parquet")

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
