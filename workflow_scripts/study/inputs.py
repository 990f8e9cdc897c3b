"""The input functions of the rules: what a job reads, from its wildcards and the study.

Snakemake calls these with a job's wildcards (anything with attributes ``model``, ``checkpoint``,
``corpus``, ``probe``...). They live here, not in the rule files, so that the rule files hold rules
only (``snakemake --lint``) and the paths a job reads are unit-tested with the rest of the study model.
One section per stage, in the order of ``STAGES``.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from ..models.checkpoints import parse_checkpoint_name

if TYPE_CHECKING:
    from .model import Study


class RuleInputs:
    """Input functions of the rules of one study (``STUDY.inputs``)."""

    def __init__(self, study: Study) -> None:
        self.study = study
        self.paths = study.paths

    # --- data -----------------------------------------------------------------------------------------

    def source_files(self, corpus: str, split: str) -> list[str]:
        """The local files of a split: the mirror's or a local entry's (tracked, so touching one reruns its
        table), or none to download."""
        return [str(p) for p in self.study.corpora.source_files(corpus, split)]

    def task_entry(self, wc: Any) -> dict[str, Any]:
        """A params function: the entry of the job's task (``task`` wildcard), as the job rebuilds it."""
        return self.study.task_spec(wc.task).params()

    def treebank_entry(self, wc: Any) -> dict[str, Any]:
        """A params function: the entry of the job's treebank (``treebank`` wildcard)."""
        return self.study.corpora.treebanks[wc.treebank].params()

    # --- finetune -------------------------------------------------------------------------------------

    def finetune_settings(self, task: str):
        """A params function: the task's run settings for the job's model (its max_length when null)."""
        return lambda wc: self.study.finetune_settings(task, wc.model)

    # --- surface --------------------------------------------------------------------------------------

    def _surface_corpus(self) -> tuple[str, str]:
        surface = self.study.config["surface"]
        return surface["corpus"], surface["split"]

    def surface(self, wc: Any) -> dict[str, str]:
        """Checkpoint, dump and token table of the surface corpus."""
        corpus, split = self._surface_corpus()
        return {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "dump": self.paths.dump_manifest(wc.model, wc.checkpoint, corpus, split),
            "tokens": self.paths.token_table(wc.model, corpus, split),
        }

    def sep_gradient(self, wc: Any) -> dict[str, str]:
        """A fine-tuned checkpoint also reads its own task's dev examples (for its task loss)."""
        corpus, split = self._surface_corpus()
        inputs = {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "tokens": self.paths.token_table(wc.model, corpus, split),
        }
        info = parse_checkpoint_name(wc.checkpoint)
        if info["kind"] == "finetuned":
            inputs["task_data"] = self.paths.data_table(info["task"], self.study.dev_split(info["task"]))
        return inputs

    def checkpoint_task(self, wc: Any) -> dict[str, Any] | None:
        """A params function: the entry of a fine-tuned checkpoint's task (None for pretrained and random)."""
        info = parse_checkpoint_name(wc.checkpoint)
        return self.study.task_spec(info["task"]).params() if info["kind"] == "finetuned" else None

    # --- syntax ---------------------------------------------------------------------------------------

    def _syntax_splits(self) -> tuple[str, str]:
        syntax = self.study.config["syntax"]
        return syntax["select_split"], syntax["score_split"]

    def probe_attention(self, wc: Any) -> dict[str, str]:
        """Probe features of the selection (train) and score splits, their annotation, GloVe for attn_glove."""
        select, score = self._syntax_splits()
        features = self.paths.analysis("syntax", wc.model, wc.checkpoint, "probe_features")
        inputs = {
            "train_maps": f"{features}/{wc.treebank}_{select}.maps.npy",
            "train_index": f"{features}/{wc.treebank}_{select}.index.npz",
            "test_maps": f"{features}/{wc.treebank}_{score}.maps.npy",
            "test_index": f"{features}/{wc.treebank}_{score}.index.npz",
            "train_annotation": self.paths.annotation(wc.treebank, select),
            "test_annotation": self.paths.annotation(wc.treebank, score),
        }
        if wc.probe == "attn_glove":
            inputs["glove"] = self.paths.data_table("glove", "vectors")
        return inputs

    def probe_baseline(self, wc: Any) -> dict[str, str]:
        """Token tables and annotation of both splits (no attention), GloVe for distance_glove."""
        select, score = self._syntax_splits()
        inputs = {
            "train_tokens": self.paths.token_table(wc.model, wc.treebank, select),
            "test_tokens": self.paths.token_table(wc.model, wc.treebank, score),
            "train_annotation": self.paths.annotation(wc.treebank, select),
            "test_annotation": self.paths.annotation(wc.treebank, score),
        }
        if wc.probe == "distance_glove":
            inputs["glove"] = self.paths.data_table("glove", "vectors")
        return inputs

    # --- finetune_effects ------------------------------------------------------------------------------

    def effects_part(self, model: str, checkpoint: str, task: str, name: str) -> str:
        return self.paths.analysis("finetune_effects", model, checkpoint, task, name)

    def effects_model_file(self, model: str, name: str) -> str:
        """A file of the effects stage that belongs to a model (the pattern CNN and its labels)."""
        return self.paths.analysis("finetune_effects", model, name)

    def effects_dump(self, wc: Any) -> dict[str, str]:
        """Checkpoint, dump and token table of a task's dev inputs (``corpus`` is the task)."""
        split = self.study.dev_split(wc.corpus)
        return {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "dump": self.paths.dump_manifest(wc.model, wc.checkpoint, wc.corpus, split),
            "tokens": self.paths.token_table(wc.model, wc.corpus, split),
        }

    def pattern_classes(self, wc: Any) -> dict[str, str]:
        """The rule labeller reads the features; the CNN classifier also the dump and the trained CNN."""
        inputs = {
            "checkpoint": self.paths.checkpoint_manifest(wc.model, wc.checkpoint),
            "features": self.effects_part(wc.model, wc.checkpoint, wc.corpus, "pattern_features.parquet"),
        }
        if self.study.config["finetune_effects"]["classifier"] == "cnn":
            inputs.update(self.effects_dump(wc))
            # Weights in safetensors and their JSON description: neither can run code when read (docs/security.md).
            inputs["cnn"] = self.effects_model_file(wc.model, "pattern_cnn.safetensors")
            inputs["cnn_info"] = self.effects_model_file(wc.model, "pattern_cnn.json")
        return inputs

    def pattern_cnn(self, wc: Any) -> dict[str, Any]:
        """The seeded labels, every dump and token table of the model's parts, and the human labels if any."""
        pairs = self.study.effects_pairs(wc.model)
        inputs: dict[str, Any] = {
            "seeded": self.effects_model_file(wc.model, "pattern_labels_seed.csv"),
            "dumps": [self.paths.dump_manifest(wc.model, c, t, self.study.dev_split(t)) for c, t in pairs],
            "tokens": [self.paths.token_table(wc.model, t, self.study.dev_split(t)) for c, t in pairs],
        }
        human = self.study.config["finetune_effects"]["human_labels"]
        if human:
            inputs["human"] = human
        return inputs

    def pattern_label_features(self, wc: Any) -> list[str]:
        return [self.effects_part(wc.model, c, t, "pattern_features.parquet")
                for c, t in self.study.effects_pairs(wc.model)]

    # --- explorer -------------------------------------------------------------------------------------

    def explorer(self, wc: Any) -> dict[str, Any]:
        """The tables, pattern features, example dumps and token table of the model's page."""
        from .plans.explorer import explorer_inputs

        return explorer_inputs(self.study, wc.model)

    def explorer_layout(self, wc: Any) -> dict[str, Any]:
        """A params function: how the page's input files line up (checkpoints, tasks, the examples' corpus)."""
        from .plans.explorer import explorer_layout

        return explorer_layout(self.study, wc.model)
