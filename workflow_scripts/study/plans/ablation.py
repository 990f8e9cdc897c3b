"""The causal head checks' plan (stage ``ablation``, docs/ablation.md).

Two analyses, on the study's models (never a signal subject: ablation acts on the model, not on a reading
of its attention):

- head disabling: every fine-tuned run of ``ablation.tasks`` (all fine-tuned tasks when null) has its final
  checkpoint scored on its task's dev examples with each head disabled alone (``disabling_runs``);
- found heads: with ``ablation.found_heads``, each model whose pretrained checkpoint has syntax analyses on
  the syntax treebank gets its best dependency and coreference heads ablated, against a random head of the
  same layer, in the ablated tasks' final checkpoints and in the attention-only probe (``found_heads_models``).

It reads the plans of the fine-tuning and syntax stages (their runs and targets).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...core.errors import ConfigError
from ...core.table_names import COREF_BEST, DEPENDENCY_BEST, FOUND_HEADS, HEAD_DISABLING
from ...finetune.tasks import checkpoint_name
from ...models.cards import undeclared_attention
from .declarations import Analysis, StagePlan, analysis_named

if TYPE_CHECKING:
    from ..model import Study

STAGE = "ablation"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Causal head checks"
PRETRAINED = "pretrained"
# A model's head-disabling figure, by this name in its rule (rules/ablation.smk) too.
DISABLING_FIGURE = "head_disabling_{model}"
ANALYSES = (
    # Within a head-disabling part rows stay in its order: mode (the config's order), then layer, then head.
    Analysis(HEAD_DISABLING, "(model, task, seed) of a fine-tuned run", tables=(HEAD_DISABLING,),
             figures=(DISABLING_FIGURE,),
             captions=("ablation_head_disabling.rst", "ablation_head_disabling_figure.rst"),
             stack_key=("model", "checkpoint")),
    Analysis(FOUND_HEADS, "model", tables=(FOUND_HEADS,), captions=("ablation_found_heads.rst",), stack_key=("model",)),
)


def ablation_tasks(study: Study) -> list[str]:
    """The fine-tuned tasks whose final checkpoints are ablated (``ablation.tasks``; null = every one)."""
    requested = study.config[STAGE]["tasks"]
    finetuned = study.finetune.tasks
    if requested is None:
        return list(finetuned)
    for task in requested:
        if task not in finetuned:
            raise ConfigError(f"config key 'ablation.tasks': {task!r} is not a task this study fine-tunes "
                              f"({', '.join(finetuned) or 'none'}); remove it, or fine-tune it "
                              "('study.tasks', 'finetune.tasks')")
    return [task for task in finetuned if task in requested]


def plan(study: Study) -> Plan:
    """The fine-tuned runs whose heads are disabled, the models whose found heads are ablated, and the outputs."""
    tasks = ablation_tasks(study)
    disabling_runs = [(m, t, s) for m, t, s in study.finetune.runs if t in tasks]
    treebank = study.syntax_treebank
    found_heads_models = ([m for m in study.models if (m, PRETRAINED, treebank) in study.syntax.targets]
                          if study.config[STAGE]["found_heads"] else [])
    check_families(study, [m for m, _, _ in disabling_runs] + found_heads_models)
    disabling, found = analysis_named(ANALYSES, HEAD_DISABLING), analysis_named(ANALYSES, FOUND_HEADS)
    outputs = []
    if disabling_runs:
        outputs += [study.paths.table(name) for name in disabling.tables]
        disabled = sorted({m for m, _, _ in disabling_runs}, key=study.models.index)
        outputs += study.paths.figures(STAGE, [figure.format(model=model) for model in disabled
                                               for figure in disabling.figures])
    if found_heads_models:
        outputs += [study.paths.table(name) for name in found.tables]
    return Plan(study=study, disabling_runs=disabling_runs, found_heads_models=found_heads_models, outputs=outputs)


def check_families(study: Study, ablated_models: list[str]) -> None:
    """Refuse, before any job, to ablate a model whose family does not say where its attention is
    (models/families.py), when its config.json is local; a hub model not in the local cache is refused by its job."""
    for model in dict.fromkeys(ablated_models):
        model_type = undeclared_attention(model, study.config["models"][model])
        if model_type is not None:
            raise ConfigError(f"config key 'ablation': head ablation acts inside each layer's attention, whose layout "
                              f"workflow_scripts/models/families.py does not declare for model {model!r} (model "
                              f"type {model_type!r}). Set ablation.tasks to [] and ablation.found_heads to false, "
                              f"leave {model!r} out of study.models, or declare its family there "
                              "(docs/contributing.md)")


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The causal head checks' plan (``STUDY.ablation``), with the input and params functions of rules/ablation.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    disabling_runs: list[tuple[str, str, int]]   # (model, task, seed) of a fine-tuned run
    found_heads_models: list[str]

    def stacked_parts(self, wc: Any) -> list[str]:
        """The parts a stacked table (``table`` wildcard) stacks: one per disabled run, or one per model whose found
        heads are ablated."""
        if wc.table == FOUND_HEADS:
            return [self.found_heads_part(m) for m in self.found_heads_models]
        return [self.disabling_part(m, t, s) for m, t, s in self.disabling_runs]

    def disabling_part(self, model: str, task: str, seed: int | str) -> str:
        return self.paths.analysis(STAGE, model, f"{task}.seed{seed}", "disabling.csv")

    def found_heads_part(self, model: str) -> str:
        return self.paths.analysis(STAGE, model, f"{FOUND_HEADS}.csv")

    def dev_table(self, wc: Any) -> str:
        """The data table of the job's task's dev split (``task`` wildcard)."""
        return self.paths.data_table(wc.task, self.study.dev_split(wc.task))

    def run_settings(self, wc: Any) -> dict[str, Any]:
        """A params function: the run settings of the job's task for its model (its max_length when null)."""
        return self.study.finetune_settings(wc.task, wc.model).params()

    def found_heads_runs(self, model: str) -> list[tuple[str, int]]:
        """(task, seed) of the model's ablated fine-tuned runs, in the study's order."""
        return [(t, s) for m, t, s in self.disabling_runs if m == model]

    def found_heads(self, wc: Any) -> dict[str, Any]:
        """The found-heads job's inputs: the syntax tables, the checkpoints, the dev tables and the probe's data."""
        study, paths, model = self.study, self.paths, wc.model
        syntax = study.config["syntax"]
        treebank, select, score = study.syntax_treebank, syntax["select_split"], syntax["score_split"]
        features = study.syntax.probe_features  # the attention probe's features, where the syntax stage wrote them
        runs = self.found_heads_runs(model)
        inputs: dict[str, Any] = {
            DEPENDENCY_BEST: paths.table(DEPENDENCY_BEST),
            "pretrained": paths.checkpoint_manifest(model, PRETRAINED),
            "finetuned": [paths.checkpoint_manifest(model, checkpoint_name(t, s, "final")) for t, s in runs],
            "dev": [paths.data_table(t, study.dev_split(t)) for t, _ in runs],
            "train_maps": features(model, PRETRAINED, f"{treebank}_{select}.maps.npy"),
            "train_index": features(model, PRETRAINED, f"{treebank}_{select}.index.npz"),
            "train_annotation": paths.annotation(treebank, select),
            "test_tokens": paths.token_table(model, treebank, score),
            "test_annotation": paths.annotation(treebank, score),
        }
        if study.syntax.coref_pairs:
            inputs[COREF_BEST] = paths.table(COREF_BEST)
        return inputs

    def found_heads_tasks(self, wc: Any) -> list[dict[str, Any]]:
        """A params function: the entries of the tasks of the model's ablated runs."""
        return [self.study.task_spec(t).params() for t, _ in self.found_heads_runs(wc.model)]

    def found_heads_settings(self, wc: Any) -> list[dict[str, Any]]:
        """A params function: the run settings of the tasks of the model's ablated runs."""
        runs = self.found_heads_runs(wc.model)
        return [self.study.finetune_settings(task, wc.model).params() for task, _ in runs]
