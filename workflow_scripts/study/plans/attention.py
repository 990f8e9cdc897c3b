"""The attention stage's plan: one dump per (subject, checkpoint, corpus, split) the config selects and the study
builds, and the table of dumps."""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, ClassVar

from ...attention.shards import shard_stem
from ...core.errors import ConfigError
from ...core.subjects import split_subject
from ...core.table_names import ATTENTION_DUMPS
from ..annotation import annotation_settings
from .declarations import Analysis, StagePlan, declared_tables

if TYPE_CHECKING:
    from ..model import Study

STAGE = "attention"
# The report's category of the stage's outputs.
REPORT_CATEGORY = "Attention"
ANALYSES = (Analysis(ATTENTION_DUMPS, "(subject, checkpoint, corpus, split) x shard", tables=(ATTENTION_DUMPS,),
                     captions=("attention_dumps.rst",), sharded=True),)


@dataclass(frozen=True, eq=False, kw_only=True)
class Plan(StagePlan):
    """The attention stage's plan (``STUDY.attention``), with the input and params functions of rules/attention.smk."""

    analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
    stage: ClassVar[str] = STAGE
    report_category: ClassVar[str] = REPORT_CATEGORY

    dumps: list[tuple[str, str, str, str]]    # (subject, checkpoint, corpus, split)
    # Those of ``dumps`` only a fine-tuned checkpoint's role analyses read (roles.finetuned)
    role_dumps: list[tuple[str, str, str, str]]

    @property
    def bos_models(self) -> list[str]:
        """The study's models whose entry sets prepend_bos (rules/attention.smk's bos_ token-table rules)."""
        config = self.study.config
        return [model for model in self.study.models if config["models"][model].get("prepend_bos") is not None]

    @property
    def shard_stems(self) -> list[str]:
        """The ``shard`` wildcard's values, shard-IIII-of-NNNN for N = attention.num_shards: the jobs that run
        per shard of a dump (extraction, and the analyses that sum over its examples)."""
        count = self.study.config[STAGE]["num_shards"]
        return [shard_stem(index, count) for index in range(count)]

    # --- the input and params functions of rules/attention.smk ------------------------------------------------

    def data_table(self, wc: Any) -> str:
        """The data table of the job's corpus and split."""
        return self.paths.data_table(wc.corpus, wc.split)

    def _annotation(self, wc: Any) -> dict[str, Any]:
        """How the job's corpus is annotated (study/annotation.py)."""
        return annotation_settings(self.study.config, self.study.corpora, wc.corpus)

    def annotator(self, wc: Any) -> str:
        """A params function: who annotates the job's corpus (its entry's annotator, or annotation.annotator)."""
        return self._annotation(wc)["annotator"]

    def spacy_model(self, wc: Any) -> Any:
        """A params function: the spaCy model that annotates the job's corpus."""
        return self._annotation(wc)["spacy_model"]

    def stanza_dir(self, wc: Any) -> Any:
        """A params function: the folder of the stanza models that annotate the job's corpus."""
        return self._annotation(wc)["stanza_dir"]

    def stanza_models(self, wc: Any) -> Any:
        """A params function: the stanza models that annotate the job's corpus."""
        return self._annotation(wc)["stanza_models"]

    def pretokenized(self, wc: Any) -> bool:
        """A params function: whether the job's corpus is annotated on its own words."""
        return self._annotation(wc)["pretokenized"]

    def pretrained_checkpoint(self, wc: Any) -> str:
        """The manifest of the job's model's pretrained checkpoint (its tokenizer makes the token table)."""
        return self.paths.checkpoint_manifest(wc.model, "pretrained")

    def max_length(self, wc: Any) -> Any:
        """A params function: the job's model's max_length (its entry's)."""
        return self.study.config["models"][wc.model]["max_length"]

    def max_examples(self, wc: Any) -> Any:
        """A params function: the cap on the job's corpus's examples (attention.max_examples; None: no cap)."""
        return self.study.config[STAGE]["max_examples"].get(wc.corpus)

    def prepend_bos(self, wc: Any) -> Any:
        """A params function: the job's model's prepend_bos (its entry's)."""
        return self.study.config["models"][wc.model]["prepend_bos"]

    def checkpoint_manifest(self, wc: Any) -> str:
        """The manifest of the job's checkpoint of its subject's model."""
        return self.paths.checkpoint_manifest(wc.model, wc.checkpoint)

    def token_table(self, wc: Any) -> str:
        """The token table of the job's subject on its corpus and split."""
        return self.paths.token_table(wc.model, wc.corpus, wc.split)

    def shard_index(self, wc: Any) -> int:
        """A params function: the index of the job's shard among the dump's (``shard`` wildcard)."""
        return self.shard_stems.index(wc.shard)

    def signal(self, wc: Any) -> str:
        """A params function: the job's subject's signal (MODEL@SIGNAL; docs/signals.md)."""
        return split_subject(wc.model)[1]


def plan(study: Study) -> Plan:
    attention = study.config["attention"]
    dumps = [(subject, checkpoint, corpus, split)
             for subject in study.subjects for checkpoint in attention["checkpoints"]
             for corpus, splits in attention["corpora"].items() for split in splits
             if split in study.splits.get(corpus, [])]
    added = [dump for dump in role_dumps(study, dumps) if dump not in dumps]
    dumps += added
    if attention["max_dump_gb"] is not None:
        check_dump_budget(study, dumps, attention["max_dump_gb"])
    return Plan(study=study, dumps=dumps, role_dumps=added,
                outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)])


def role_dumps(study: Study, dumps: list[tuple[str, str, str, str]]) -> list[tuple[str, str, str, str]]:
    """The dumps a fine-tuned checkpoint's per-head analyses read (roles.finetuned, docs/roles.md), of its attention
    weights only, where its model's pretrained checkpoint has the same analysis: the surface corpus's dump for
    ``surface``, each syntax treebank's score split for ``dependency`` (its heads selected and scored there). The
    coreference windows' dump is read through the syntax stage's rules, as the pretrained checkpoint's is."""
    surface, syntax = study.config["surface"], study.config["syntax"]
    planned = set(dumps)
    added = []
    for model, checkpoint in study.finetune.role_analysed("surface"):
        if (model, "pretrained", surface["corpus"], surface["split"]) in planned:
            added.append((model, checkpoint, surface["corpus"], surface["split"]))
    treebanks = [t for t in syntax["treebanks"] if t in study.config["study"]["treebanks"]]
    for model, checkpoint in study.finetune.role_analysed("dependency"):
        for treebank in treebanks:
            if all((model, "pretrained", treebank, split) in planned
                   for split in (syntax["select_split"], syntax["score_split"])):
                added.append((model, checkpoint, treebank, syntax["score_split"]))
    return added


def check_dump_budget(study: Study, dumps: list[tuple[str, str, str, str]], budget_gb: float) -> None:
    """Refuse, before any job, a dump whose size on disk (as the plan sizes it: estimates/sizes.py) exceeds the budget,
    naming the keys that bound it; a dump of a model whose layers and heads nothing local says is a note."""
    from ...core.subjects import base_model
    from ..estimates.sizes import BYTES_PER_VALUE, model_shape, size_dump

    per_value = BYTES_PER_VALUE[study.config[STAGE]["compression"]]
    shapes = {model: model_shape(study, model, network=False) for model in study.models}
    unsized = set()
    for dump in dumps:
        shape = shapes[base_model(dump[0])]
        size = size_dump(study, dump, shape.layers_heads, causal=shape.causal)
        values, how = ((size.values, size.values_basis) if size.values is not None
                       else (size.values_max, "every example at max_length"))
        if values is None:
            unsized.add(base_model(dump[0]))
            continue
        gigabytes = values * per_value / 1e9
        if gigabytes > budget_gb:
            model, checkpoint, corpus, split = dump
            raise ConfigError(
                f"config key 'attention.max_dump_gb': the dump of {model} {checkpoint} on {corpus}/{split} would take "
                f"{gigabytes:,.1f} GB ({size.examples:,} examples, {how}), over the budget of {budget_gb:g} GB. "
                f"It is bounded by 'attention.max_examples.{corpus}', 'models.{base_model(model)}.max_length', "
                "'attention.corpora', 'attention.checkpoints' and 'attention.compression'; lower one of them or raise "
                "'attention.max_dump_gb'")
    for model in sorted(unsized):
        study.notes.append(f"attention.max_dump_gb: the dumps of {model!r} are not checked: nothing local says its "
                           "layers and heads (its config.json is not in the hub cache or a local folder)")
