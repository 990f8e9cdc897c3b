"""The explorer's grid measures declared by the stage plans (explorer/head_tables.declared_measures)."""

from __future__ import annotations

import pandas as pd

from workflow_scripts.explorer.head_tables import declared_measures
from workflow_scripts.models.shape import ModelShape


def test_a_declared_column_of_the_selected_rows_colours_the_grid_with_its_interval_and_control(tmp_path):
    rows = []
    for checkpoint, base in (("pretrained", 0.5), ("random", 0.1)):
        for kind, shift in (("random", 0.0), ("random_repeated", 0.4)):
            for layer in range(2):
                rows.append({"model": "m", "checkpoint": checkpoint, "input": kind, "layer": layer, "head": 0,
                             "induction": base + shift + layer / 100, "induction_low": 0.0, "induction_high": 1.0,
                             "n_sequences": 4, "tokens_per_sequence": 18})
    path = tmp_path / "head_diagnostics.csv"
    pd.DataFrame(rows).to_csv(path, index=False)
    declared = [{"table": "head_diagnostics", "column": "induction", "label": "induction", "unit": "share",
                 "where": {"input": "random_repeated"}},
                {"table": "absent", "column": "x", "label": "x", "unit": "share", "where": {}}]
    measures = declared_measures(declared, {"head_diagnostics": str(path)}, "m", ModelShape(layers=2, heads=1))
    assert len(measures) == 1  # a table the study does not have gives no measure
    measure = measures[0]
    assert measure["values"] == [0.9, 0.91]
    assert measure["detail"] == ["95% interval 0.0-1.0; random init 0.5", "95% interval 0.0-1.0; random init 0.51"]
    assert measure["id"] == "measure.head_diagnostics.induction.random_repeated"
    assert "4 random_repeated sequences of 18 tokens" in measure["note"] and "input random_repeated" in measure["note"]
