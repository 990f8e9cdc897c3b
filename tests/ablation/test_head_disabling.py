"""Head disabling on a tiny fine-tuned classifier, the study tables, the heatmap figure and the entry points."""

from __future__ import annotations

from types import SimpleNamespace

import numpy as np
import pandas as pd
import pytest

from workflow_scripts.ablation.disabling import TaskScorer, run_head_disabling
from workflow_scripts.ablation.tables import COLUMNS, FOUND_HEADS_COLUMNS, HEAD_DISABLING_COLUMNS, stack_parts
from workflow_scripts.core.errors import AtlasError, InputFormatError
from workflow_scripts.study.plans.ablation import ANALYSES
from workflow_scripts.study.plans.declarations import analysis_named

SETTINGS = {"max_length": 32, "max_dev_examples": None}


def _stacked(table, parts, output):
    """Study table ``table`` as the generic rule ablation_table writes it: its columns, its plan's sort key."""
    return stack_parts(parts, output, COLUMNS[table], analysis_named(ANALYSES, table).stack_key)


def _disable(tiny_classifier, tiny_dev, tiny_task, output, modes, max_examples=10):
    return run_head_disabling(tiny_classifier, tiny_dev, output, task=tiny_task, settings=SETTINGS, modes=modes,
                              max_examples=max_examples, batch_size=4, device="cpu", threads=1, offline=True,
                              mirror=None, model="tiny", checkpoint="sst2.seed1.final")


def test_every_head_is_disabled_in_every_mode(tiny_classifier, tiny_dev, tiny_task, tmp_path):
    modes = ["zero", "uniform", "first", "mean"]
    frame = _disable(tiny_classifier, tiny_dev, tiny_task, tmp_path / "disabling.csv", modes)
    written = pd.read_csv(tmp_path / "disabling.csv")
    assert list(written.columns) == HEAD_DISABLING_COLUMNS and len(written) == len(frame) == 2 * 2 * len(modes)
    assert list(dict.fromkeys(written["mode"])) == modes
    assert set(zip(written["layer"], written["head"])) == {(0, 0), (0, 1), (1, 0), (1, 1)}
    np.testing.assert_allclose(written["delta"], written["score"] - written["baseline_score"])
    assert (written["head_label"] == [f"{r.layer + 1}-{r.head + 1}" for r in written.itertuples()]).all()
    assert set(written["metric"]) == {"accuracy"} and set(written["n_examples"]) == {10}
    assert set(written["task"]) == {"sst2"} and set(written["checkpoint"]) == {"sst2.seed1.final"}
    assert (written["delta"] != 0).any()  # the tiny model's heads do matter


def test_the_baseline_is_the_plain_models_dev_score(tiny_classifier, tiny_dev, tiny_task, tmp_path):
    from transformers import AutoModelForSequenceClassification, AutoTokenizer

    from workflow_scripts.data.entries import TaskSpec
    from workflow_scripts.finetune.task_data import TaskData, load_split
    from workflow_scripts.finetune.training import evaluate
    from workflow_scripts.models.checkpoints import read_manifest

    frame = _disable(tiny_classifier, tiny_dev, tiny_task, tmp_path / "d.csv", ["zero"], max_examples=7)
    weights = read_manifest(tiny_classifier)["load_from"]
    plain = AutoModelForSequenceClassification.from_pretrained(weights, attn_implementation="eager")
    spec = TaskSpec.from_params(tiny_task)
    # The first 7 dev examples, in table order and batched otherwise: the metric is the same.
    data = TaskData(load_split(tiny_dev, spec, "dev").head(7), spec, AutoTokenizer.from_pretrained(weights), SETTINGS,
                    tiny_dev)
    assert frame["baseline_score"].iloc[0] == pytest.approx(evaluate(plain, data, 3, "cpu")["accuracy"])
    scorer = TaskScorer(tiny_classifier, tiny_dev, task=tiny_task, settings=SETTINGS, max_examples=7, batch_size=2,
                        device="cpu", offline=True, mirror=None)
    assert scorer.score()[0] == frame["baseline_score"].iloc[0]
    assert scorer.score({(1, 1)}, "zero")[0] == frame.query("layer == 1 and head == 1")["score"].iloc[0]


def test_bad_modes_and_a_checkpoint_that_is_not_fine_tuned_are_refused(tiny_classifier, tiny_bert, tiny_dev,
                                                                          tiny_task, tmp_path):
    from support.tiny_models import write_manifest

    with pytest.raises(AtlasError, match="ablation.modes"):
        _disable(tiny_classifier, tiny_dev, tiny_task, tmp_path / "d.csv", ["drop"])
    pretrained = write_manifest(tmp_path / "pretrained", tiny_bert)
    with pytest.raises(AtlasError, match="not fine-tuned"):
        _disable(pretrained, tiny_dev, tiny_task, tmp_path / "d.csv", ["zero"])
    assert not (tmp_path / "d.csv").exists()


def test_tables_stack_the_parts_and_name_a_bad_part(tmp_path):
    def part(name, model, checkpoint):
        rows = [{c: 0 for c in HEAD_DISABLING_COLUMNS} | {"model": model, "checkpoint": checkpoint, "layer": layer,
                                                         "head": head, "mode": mode}
                for mode in ("zero", "mean") for layer in range(2) for head in range(2)]
        pd.DataFrame(rows).to_csv(tmp_path / name, index=False)
        return tmp_path / name

    parts = [part("b.csv", "m", "rte.seed1.final"), part("a.csv", "m", "cola.seed1.final")]
    table = _stacked("head_disabling", parts, tmp_path / "head_disabling.csv")
    assert list(table["checkpoint"][:8]) == ["cola.seed1.final"] * 8
    assert list(table["mode"][:8]) == ["zero"] * 4 + ["mean"] * 4  # each part keeps its own order
    assert list(pd.read_csv(tmp_path / "head_disabling.csv").columns) == HEAD_DISABLING_COLUMNS
    empty = _stacked("found_heads", [], tmp_path / "found_heads.csv")
    assert empty.empty and list(pd.read_csv(tmp_path / "found_heads.csv").columns) == FOUND_HEADS_COLUMNS
    pd.DataFrame({"model": ["m"], "layer": [0]}).to_csv(tmp_path / "bad.csv", index=False)
    with pytest.raises(InputFormatError, match=r"bad\.csv.*columns \['checkpoint'"):
        _stacked("head_disabling", [tmp_path / "bad.csv"], tmp_path / "x.csv")


def test_the_figure_has_a_panel_per_run_and_survives_no_rows(tiny_classifier, tiny_dev, tiny_task, tmp_path):
    from workflow_scripts.ablation.figures import plot_head_disabling, shown_mode

    _disable(tiny_classifier, tiny_dev, tiny_task, tmp_path / "d.csv", ["mean", "zero"], max_examples=6)
    table = _stacked("head_disabling", [tmp_path / "d.csv"], tmp_path / "head_disabling.csv")
    assert shown_mode(table) == "zero" and shown_mode(table[table["mode"] == "mean"]) == "mean"
    plot_head_disabling(tmp_path / "head_disabling.csv", tmp_path / "f.png", tmp_path / "f.pdf", model="tiny")
    assert (tmp_path / "f.png").stat().st_size > 0 and (tmp_path / "f.pdf").stat().st_size > 0
    plot_head_disabling(tmp_path / "head_disabling.csv", tmp_path / "g.png", tmp_path / "g.pdf", model="other$")
    assert (tmp_path / "g.png").stat().st_size > 0


def test_entry_points_hand_over_inputs_params_and_wildcards(monkeypatch):
    from workflow_scripts.ablation import disabling, figures, found_heads, tables
    from workflow_scripts.entrypoints import ENTRY_POINTS, _import_all

    _import_all()
    seen = {}
    for module, name in ((disabling, "run_head_disabling"), (found_heads, "run_found_heads"),
                         (tables, "stack_parts"),
                         (figures, "plot_head_disabling")):
        monkeypatch.setattr(module, name, lambda *a, _name=name, **k: seen.__setitem__(_name, (a, k)))
    params = SimpleNamespace(task={"name": "cola"}, settings={"max_length": 8}, modes=["zero"], max_examples=5,
                             batch_size=2, device="cpu", offline=True, mirror=None)
    smk = SimpleNamespace(input=SimpleNamespace(checkpoint="c.json", dev="dev.parquet"), output=["out.csv"],
                          params=params, wildcards=SimpleNamespace(model="m", task="cola", seed="3"), threads=2)
    ENTRY_POINTS["head_disabling"](smk)
    args, kwargs = seen["run_head_disabling"]
    assert args == ("c.json", "dev.parquet", "out.csv")
    assert kwargs["checkpoint"] == "cola.seed3.final" and kwargs["model"] == "m" and kwargs["threads"] == 2

    for table, key in (("head_disabling", ["model", "checkpoint"]), ("found_heads", ["model"])):
        ENTRY_POINTS["ablation_table"](SimpleNamespace(input=["a.csv", "b.csv"], output=["t.csv"],
                                                       wildcards=SimpleNamespace(table=table),
                                                       params=SimpleNamespace(key=key)))
        assert seen["stack_parts"] == ((["a.csv", "b.csv"], "t.csv", COLUMNS[table], key), {})
    ENTRY_POINTS["head_disabling_figure"](SimpleNamespace(input=SimpleNamespace(table="t.csv"),
                                                          output=SimpleNamespace(png="a.png", pdf="a.pdf"),
                                                          wildcards=SimpleNamespace(model="m")))
    assert seen["plot_head_disabling"] == (("t.csv", "a.png", "a.pdf"), {"model": "m"})

    class Inputs(SimpleNamespace):
        def get(self, name, default=None):
            return getattr(self, name, default)

    inputs = Inputs(dependency_best="d.csv", pretrained="p.json", finetuned=["c.json"], dev=["dev.parquet"],
                    train_maps="t.npy", train_index="t.npz", train_annotation="ta.parquet",
                    test_tokens="s.parquet", test_annotation="sa.parquet")
    params = SimpleNamespace(tasks=[{"name": "cola"}], settings=[{"max_length": 8}], treebank="ewt",
                             relations=["all"], select_split="train", score_split="dev", modes=["zero"],
                             max_examples=5, batch_size=2, device="cpu", random_seed=0, offline=True, mirror=None,
                             probe={"epochs": 1, "lr": 0.1, "seed": 0, "batch_sentences": 4, "exclude_punct": True})
    ENTRY_POINTS["found_heads"](SimpleNamespace(input=inputs, params=params, output=["fh.csv"], threads=1,
                                                wildcards=SimpleNamespace(model="m")))
    _, kwargs = seen["run_found_heads"]
    assert kwargs["coref_best"] is None and kwargs["finetuned"] == ["c.json"] and kwargs["output"] == "fh.csv"
    assert kwargs["treebank"] == "ewt" and kwargs["probe"]["epochs"] == 1 and kwargs["model"] == "m"
