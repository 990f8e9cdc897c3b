"""The syntax entry points hand the rules' inputs, params and wildcards over as rules/syntax.smk's contracts say."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from workflow_scripts.entrypoints import ENTRY_POINTS, _import_all


@pytest.fixture
def calls(monkeypatch) -> dict:
    """The science functions behind the entry points, replaced by recorders: name -> (args, kwargs)."""
    from workflow_scripts.data import windows
    from workflow_scripts.syntax import dependency_tables, figures
    from workflow_scripts.syntax.probes import tables

    _import_all()
    seen: dict = {}
    for module, name, key in ((windows, "write_windows", "windows"),
                              (dependency_tables, "summarise_dependency", "dependency"),
                              (tables, "summarise_probes", "probes"), (figures, "dependency_heatmaps", "heatmaps"),
                              (figures, "best_head_maps", "maps")):
        monkeypatch.setattr(module, name, lambda *a, _key=key, **k: seen.__setitem__(_key, (a, k)))
    return seen


def test_coref_windows_names_its_corpus(calls):
    assert "gum_windows" not in ENTRY_POINTS
    smk = SimpleNamespace(input=SimpleNamespace(sentences="s.parquet", mentions="m.parquet"),
                          output=SimpleNamespace(data="d.parquet", mentions="w.parquet"),
                          params=SimpleNamespace(window_words=100, corpus="gumwin"))
    ENTRY_POINTS["coref_windows"](smk)
    assert calls["windows"] == (("s.parquet", "m.parquet", "d.parquet", "w.parquet"),
                                {"max_words": 100, "corpus": "gumwin"})


def test_tables_take_part_keys_with_the_treebank(calls):
    keys = [("m", "pretrained", "ewt", "train"), ("m", "pretrained", "ptb", "train")]
    params = SimpleNamespace(part_keys=keys, labelled={"ewt": True, "ptb": False}, relations=["all"],
                             select_split="train", score_split="dev", resamples=10, seed=0)
    smk = SimpleNamespace(input=SimpleNamespace(parts=["a.parquet", "b.parquet"]), params=params,
                          output=SimpleNamespace(heads="h.csv", best="b.csv", halves="halves.csv"))
    ENTRY_POINTS["dependency_tables"](smk)
    args, kwargs = calls["dependency"]
    assert args[0] == dict(zip(keys, ["a.parquet", "b.parquet"]))
    assert kwargs["labelled"] == {"ewt": True, "ptb": False}
    assert kwargs["halves_output"] == "halves.csv"

    smk.params.part_keys = [("m", "none", "ptb", "right_branching")]
    smk.input.parts = ["r.parquet"]
    smk.output = ["probes.csv"]
    ENTRY_POINTS["probes_table"](smk)
    assert calls["probes"][0] == ([("m", "none", "ptb", "right_branching", "r.parquet")], "probes.csv")


def test_figures_take_the_treebank_wildcard(calls):
    wildcards = SimpleNamespace(model="m", checkpoint="pretrained", treebank="ptb")
    params = SimpleNamespace(relations=["all", "det"], select_split="train", score_split="dev", example_id=None)
    smk = SimpleNamespace(input=SimpleNamespace(heads="h.csv", best="b.csv", dump="d/manifest.json",
                                                tokens="t.parquet", annotation="a.parquet"),
                          output=SimpleNamespace(png="f.png", pdf="f.pdf"), params=params, wildcards=wildcards)
    ENTRY_POINTS["dependency_heatmaps"](smk)
    ENTRY_POINTS["best_head_maps"](smk)
    assert calls["heatmaps"][1]["treebank"] == "ptb" and calls["maps"][1]["treebank"] == "ptb"
    assert calls["maps"][1]["relations"] == ["all", "det"]
