"""Hand-built study tables of a 2-layer x 2-head model "tiny", whose every number the report tests know.

The dependency and probe tables hold two treebanks: ewt, the one the report reads (``syntax_treebank``), and
ptb (unlabelled: `all` only), whose numbers (all 0.99, probes 0.95) and input protocol (``text``) differ from
ewt's so that a test sees at once when the report reads a row of the wrong treebank.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pandas as pd
import pytest

from workflow_scripts.report import summary
from workflow_scripts.report.items import StudyContext
from workflow_scripts.report.registry import report_tables

MODEL = "tiny"

# (relation, direction, checkpoint, select split) -> (accuracy, head label, n); every row is scored on dev.
DEPENDENCY = {
    ("all", "dependent_to_head", "pretrained", "dev"): (0.40, "2-1", 100),
    ("all", "dependent_to_head", "pretrained", "train"): (0.38, "2-2", 100),
    ("all", "dependent_to_head", "random", "dev"): (0.05, "1-1", 100),
    ("all", "dependent_to_head", "random", "train"): (0.04, "1-1", 100),
    ("det", "either", "pretrained", "dev"): (0.90, "2-1", 50),
    ("det", "either", "pretrained", "train"): (0.85, "1-2", 50),
    ("det", "either", "random", "dev"): (0.10, "1-1", 50),
    ("det", "either", "random", "train"): (0.08, "2-2", 50),
    ("det", "dependent_to_head", "pretrained", "dev"): (0.88, "2-3", 50),
    ("case", "either", "pretrained", "dev"): (0.70, "1-2", 20),
    ("case", "either", "pretrained", "train"): (0.65, "1-2", 20),
    ("case", "either", "random", "dev"): (0.12, "2-2", 20),
}
# ptb's rows: the relation `all` only, another accuracy, another input protocol.
PTB_ACCURACY, PTB_UAS, PTB_INPUTS = 0.99, 0.95, "text"
# (checkpoint, select documents, score documents) -> (accuracy of the best head, head label, mentions), every type.
COREF_HEADS = {("pretrained", "all", "all"): (0.60, "1-2", 40), ("pretrained", "a", "b"): (0.50, "2-1", 30),
               ("pretrained", "b", "a"): (0.70, "1-2", 10), ("random", "all", "all"): (0.02, "1-1", 40),
               ("random", "a", "b"): (0.02, "1-1", 30), ("random", "b", "a"): (0.02, "2-2", 10)}


def _csv(path: Path, rows: list[dict]) -> Path:
    path.parent.mkdir(parents=True, exist_ok=True)
    pd.DataFrame(rows).to_csv(path, index=False)
    return path


def _dependency(folder: Path, inputs: str | None, treebanks: bool) -> Path:
    rows = []
    ptb = {key: (PTB_ACCURACY, "1-1", 30) for key in DEPENDENCY if key[0] == "all"}
    for treebank, values in (("ewt", DEPENDENCY), ("ptb", ptb if treebanks else {})):
        rows += _dependency_rows(values, treebank if treebanks else None,
                                 PTB_INPUTS if inputs and treebank == "ptb" else inputs)
    return _csv(folder / "dependency_best.csv", rows)


def _dependency_rows(values: dict, treebank: str | None, inputs: str | None) -> list[dict]:
    rows = []
    for (relation, direction, checkpoint, select), (accuracy, label, n) in values.items():
        control = values.get((relation, direction, "random", select)) if checkpoint == "pretrained" else None
        rows.append({"model": MODEL, "checkpoint": checkpoint, **({"treebank": treebank} if treebank else {}),
                     "relation": relation, "paper_label": "",
                     "direction": direction, "select_split": select, "score_split": "dev",
                     "layer": int(label[0]) - 1, "head": int(label[-1]) - 1, "head_label": label,
                     "head_direction": "dependent_to_head", "accuracy": accuracy, "n": n, "baseline_offset": 1,
                     "baseline_direction": "dependent_to_head", "baseline_accuracy": 0.3,
                     # 1/B (B = 1000): no resample reached 0; an older table's 0 reads the same.
                     "p_vs_baseline": 0.001 if select == "train" else 0.0,
                     "control_checkpoint": "random" if control else "",
                     "control_head_label": control[1] if control else "",
                     "control_accuracy": control[0] if control else None,
                     "p_vs_control": 0.034 if control else None, "ci_low": accuracy - 0.05,
                     "ci_high": accuracy + 0.05, **({"input_protocol": inputs} if inputs else {})})
    return rows


def _coref(folder: Path, inputs: str | None) -> Path:
    rows = []
    for (checkpoint, select, score), (head_accuracy, label, n) in COREF_HEADS.items():
        for mention in ("all", "pronoun", "proper", "nominal"):
            for method, accuracy in (("head", head_accuracy), ("nearest_mention", 0.3), ("head_word_match", 0.5)):
                controlled = method == "head" and checkpoint == "pretrained"
                rows.append({"model": MODEL, "checkpoint": checkpoint, "select_documents": select,
                             "score_documents": score, "method": method, "mention_type": mention,
                             "head_label": label if method == "head" else "", "accuracy": accuracy, "n": n,
                             "ci_low": accuracy - 0.1, "ci_high": accuracy + 0.1,
                             "control_accuracy": 0.02 if controlled else None,
                             "control_head_label": "2-1" if controlled else "",
                             **({"input_protocol": inputs} if inputs else {})})
    return _csv(folder / "coref_best.csv", rows)


def _probes(folder: Path, inputs: str | None, treebanks: bool) -> Path:
    rows = [("none", "right_branching", "uas", 0.3), ("none", "distance_glove", "uas", 0.5),
            ("pretrained", "attn", "uas", 0.6), ("pretrained", "attn_glove", "uas", 0.7),
            ("random", "attn", "uas", 0.1), ("random", "attn_glove", "uas", 0.2),
            ("pretrained", "mst_best_head", "uuas", 0.55)]
    ptb = [(c, p, m, PTB_UAS) for c, p, m, _ in rows] if treebanks else []
    return _csv(folder / "probes.csv", [
        {"model": MODEL, "checkpoint": c, **({"treebank": treebank} if treebanks else {}), "probe": p, "metric": m,
         "uas": v, "n": 200, "ci_low": v - 0.02, "ci_high": v + 0.02, "sentences": 20, "train_sentences": 40,
         "epochs": 2, **({"input_protocol": PTB_INPUTS if treebank == "ptb" else inputs} if inputs else {})}
        for treebank, values in (("ewt", rows), ("ptb", ptb)) for c, p, m, v in values])


def _surface(folder: Path) -> Path:
    rows = []
    for checkpoint, prev in (("pretrained", [0.6, 0.1, 0.7, 0.2]), ("random", [0.1, 0.1, 0.1, 0.1])):
        for k, (layer, head) in enumerate(((0, 0), (0, 1), (1, 0), (1, 1))):
            rows.append({"model": MODEL, "checkpoint": checkpoint, "layer": layer, "head": head, "prev": prev[k],
                         "self": 0.1, "next": 0.55 if (layer, head) == (1, 1) and checkpoint == "pretrained" else 0.1,
                         "cls": 0.2 + 0.1 * layer, "sep": 0.4 + 0.2 * layer, "period": 0.05, "comma": 0.02,
                         "n_tokens": 500, "corpus": "wiki"})
    return _csv(folder / "surface_heads.csv", rows)


def _first_token(folder: Path) -> Path:
    """alpha_1 of every head (first_token.csv): an encoder's attention to its first position, [CLS]."""
    rows = [{"model": MODEL, "checkpoint": checkpoint, "layer": layer, "head": head, "first_token": value,
             "n_units": 480, "n_examples": 20, "corpus": "wiki", "split": "segments"}
            for checkpoint, value in (("pretrained", 0.25), ("random", 0.05)) for layer in (0, 1) for head in (0, 1)]
    return _csv(folder / "first_token.csv", rows)


# The head diagnostics of "tiny" (layer, head) -> score: previous_token on natural text, induction and duplicate on
# repeated random tokens (the random-init control: 0.2 everywhere); sink rates per input, of the whole model (layer
# "all") and, to be left out, of each layer (100%), pretrained and control.
PREVIOUS_TOKEN = {(0, 0): 0.1, (0, 1): 0.5, (1, 0): 0.9, (1, 1): 0.1}
INDUCTION = {(0, 0): 0.05, (0, 1): 0.1, (1, 0): 0.3, (1, 1): 0.8}
DUPLICATE = {(0, 0): 0.6, (0, 1): 0.6, (1, 0): 0.2, (1, 1): 0.1}
SINK_RATES = {("pretrained", "natural"): 62.5, ("pretrained", "random"): 50.0, ("pretrained", "one_token"): 0.0,
              ("random", "natural"): 12.5, ("random", "random"): 0.0, ("random", "one_token"): 0.0}


def _diagnostics(folder: Path) -> dict[str, Path]:
    rows = []
    for checkpoint in ("pretrained", "random"):
        for kind, scores in (("natural", {"previous_token": PREVIOUS_TOKEN}),
                             ("random_repeated", {"induction": INDUCTION, "duplicate": DUPLICATE})):
            for layer, head in PREVIOUS_TOKEN:
                row = {"model": MODEL, "checkpoint": checkpoint, "input": kind, "layer": layer, "head": head,
                       "previous_token": 0.0, "induction": 0.0, "duplicate": 0.0, "n_sequences": 8,
                       "tokens_per_sequence": 65}
                row.update({column: values[layer, head] if checkpoint == "pretrained" else 0.2
                            for column, values in scores.items()})
                rows.append(row)
    rates = [{"model": MODEL, "checkpoint": checkpoint, "input": kind, "layer": layer, "heads": heads,
              "sink_rate": rate if layer == "all" else 100.0, "sink_rate_mean_alpha": rate / 2, "threshold": 0.3,
              "n_sequences": 8}
             for (checkpoint, kind), rate in SINK_RATES.items() for layer, heads in ((0, 2), (1, 2), ("all", 4))]
    return {"head_diagnostics": _csv(folder / "head_diagnostics.csv", rows),
            "sink_rates": _csv(folder / "sink_rates.csv", rates)}


def _finetuning(folder: Path) -> dict[str, Path]:
    classes = []
    for checkpoint, task, share in (("pretrained", "mrpc", 0.30), ("mrpc.seed1.final", "mrpc", 0.45),
                                    ("mrpc.seed1.step5", "mrpc", 0.40), ("pretrained", "sst2", 0.5)):
        for name, value in (("Vertical", 1 - share), ("Heterogeneous", share)):
            classes.append({"model": MODEL, "checkpoint": checkpoint, "task": task, "step": checkpoint.split(".")[-1],
                            "classifier": "rule", "class": name, "share": value, "ci_low": value - 0.01,
                            "ci_high": value + 0.01, "n_maps": 10, "n": 40, "n_examples": 10})
    top = []
    for checkpoint in ("pretrained", "mrpc.seed1.final"):
        for category, layers in (("content", (1, 0)), ("function", (0, 1))):
            for rank, layer in enumerate(layers, start=1):
                top.append({"model": MODEL, "checkpoint": checkpoint, "task": "mrpc", "layer": layer,
                            "category": category, "argmax_share": 0.6 - 0.1 * rank, "rank": rank})
    last = []
    for category, difference in (("content", -0.03), ("function", 0.02), ("other", 0.01)):
        for measure in ("argmax", "mass"):
            last.append({"model": MODEL, "task": "mrpc", "checkpoint": "mrpc.seed1.final", "seed": 1, "step": "final",
                         "layer": 1, "last_layer": True, "category": category, "measure": measure,
                         "difference": difference, "ci_low": difference - 0.01, "ci_high": difference + 0.01,
                         "p": 0.001 if category == "content" else 0.01, "bootstrap_resamples": 1000,
                         "n": 300, "n_examples": 10,
                         "task_group": "syntactic",
                         "predicted_direction": {"content": "down", "function": "up"}.get(category, "none"),
                         "moved_as_predicted": category != "other", "significant": True})
    metrics = [{"model": MODEL, "task": task, "seed": 1, "step": "final", "metric": metric, "value": value,
                "majority_baseline": base, "main_metric": main, "checkpoint": f"{task}.seed1.final"}
               for task, metric, value, base, main in (("cola", "matthews_corr", 0.3, 0.0, True),
                                                       ("mrpc", "f1", 0.8, 0.81, True),
                                                       ("mrpc", "accuracy", 0.7, 0.68, False))]
    classifier = [{"model": MODEL, "classifier": "cnn", "evaluated_on": "heldout", "label_source": "rule", "n": 100,
                   "n_heldout_examples": 30, "macro_f1": 0.8, "accuracy": 0.9}]
    return {"pattern_classes": _csv(folder / "pattern_classes.csv", classes),
            "pattern_classifier": _csv(folder / "pattern_classifier.csv", classifier),
            "lexical_top_layers": _csv(folder / "lexical_top_layers.csv", top),
            "lexical_last_layer": _csv(folder / "lexical_last_layer.csv", last),
            "finetune_metrics": _csv(folder / "finetune_metrics.csv", metrics)}


@pytest.fixture
def syntax_tables(tmp_path) -> Callable[[str | None], dict[str, Path]]:
    """inputs -> the three syntax tables with that ``input_protocol`` column (None: without the column);
    ``treebanks`` False: the tables as written before they had a treebank column (ewt's rows only)."""
    def make(inputs: str | None = "words", treebanks: bool = True) -> dict[str, Path]:
        folder = tmp_path / f"syntax_{inputs}_{treebanks}"
        return {"dependency_best": _dependency(folder, inputs, treebanks), "coref_best": _coref(folder, inputs),
                "probes": _probes(folder, inputs, treebanks)}

    return make


@pytest.fixture
def study(tmp_path, syntax_tables) -> dict[str, Path]:
    """Every table the report reads (table name -> path), for model "tiny"."""
    folder = tmp_path / "tables"
    tables = {"models": _csv(folder / "models.csv", [{"name": MODEL, "num_layers": 2, "num_heads": 2}]),
              **syntax_tables("words"), "surface_heads": _surface(folder), "first_token": _first_token(folder),
              **_finetuning(folder), **_diagnostics(folder)}
    assert set(tables) == set(report_tables())
    return tables


@pytest.fixture
def context() -> StudyContext:
    """Relations all, det, case; heads selected on train, scored on dev; cola and mrpc fine-tuned, sst2 analysed."""
    return StudyContext(
        models=(MODEL,), relations=("all", "det", "case"), select_split="train", score_split="dev",
        tasks=("cola", "sst2", "mrpc"), finetuned_tasks=("cola", "mrpc"), analysed_tasks=("cola", "sst2", "mrpc"),
        predictions={"syntactic": ["cola", "mrpc", "mnli"], "semantic": ["sst2", "qqp", "wic"]}, glove=True,
        annotator="spacy", annotator_caption="spacy", resamples=1000, input_protocol="words", syntax_treebank="ewt",
        treebank_names={"ewt": "EWT", "ptb": "WSJ (PTB sample)"}, languages={"ewt": "en", "ptb": "en"})


@pytest.fixture
def page(monkeypatch) -> dict:
    """What summary_figure saves: title, footnote, each axes' grid cell -> (title, shown); the files are written."""
    seen: dict = {}
    save = summary.save_figure

    def record(figure, png, pdf=None):
        seen["suptitle"] = figure._suptitle.get_text()
        seen["footnote"] = [t.get_text() for t in figure.texts if t is not figure._suptitle]
        seen["titles"] = {}
        for ax in figure.axes:
            spec = ax.get_subplotspec()
            seen["titles"][(spec.rowspan.start, spec.colspan.start)] = (ax.get_title(loc="left"), ax.axison)
        return save(figure, png, pdf)

    monkeypatch.setattr(summary, "save_figure", record)
    return seen
