"""The registry: a stage's report.py is all it takes to add a table, a paper comparison and a summary panel.

The made-up stage below lives in tmp_path, outside workflow_scripts, and nothing in workflow_scripts/report
names it: the comparison and the summary pick it up because its name is in the stage list they are given.
"""

from __future__ import annotations

import ast
import importlib
import sys
import textwrap
from pathlib import Path

import pandas as pd
import pytest

from support.paths import REPO
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.core.stages import STAGES
from workflow_scripts.report.comparison import paper_comparison
from workflow_scripts.report.registry import (
    comparisons,
    panels,
    paper_value_files,
    report_tables,
    stage_report,
    stage_reports,
)
from workflow_scripts.report.summary import summary_figure

MODEL = "tiny"
FAKE = "atlas_fake_stage"

FAKE_REPORT = '''
from workflow_scripts.report.drawing import not_in_study
from workflow_scripts.report.formatting import found_row, missing_row
from workflow_scripts.report.items import PaperComparison, StageReport, SummaryPanel


def compare_heads(item, model, tables, context):
    rows, why = tables.model_rows("fake_counts", model)
    if rows is None:
        return [missing_row(why)]
    total = int(rows["heads"].sum())
    return [found_row(item, total, f"{total} heads over {len(rows)} layers", checkpoint="pretrained",
                      fraction=False)]


def draw_heads(ax, model, tables, items, context):
    rows, why = tables.model_rows("fake_counts", model)
    if rows is None:
        return not_in_study(ax, "G  Fake heads", why)
    ax.bar(rows["layer"], rows["heads"])
    ax.set_title("G  Fake heads", loc="left")
    return None


REPORT = StageReport(tables=("fake_counts",), comparisons=(PaperComparison("fake_heads", compare_heads),),
                     panels=(SummaryPanel("G", draw_heads, "fake corpus"),), paper_values="fake.csv")
'''


def _package(root: Path, name: str, report: str | None) -> None:
    (root / name).mkdir(parents=True)
    (root / name / "__init__.py").write_text("")
    if report is not None:
        (root / name / "report.py").write_text(textwrap.dedent(report))
    importlib.invalidate_caches()


@pytest.fixture
def stages_root(tmp_path, monkeypatch) -> Path:
    """A folder on sys.path for made-up stage packages; they leave sys.modules after the test."""
    root = tmp_path / "stages"
    root.mkdir()
    monkeypatch.syspath_prepend(str(root))
    yield root
    for name in [m for m in sys.modules if m.split(".")[0].startswith(FAKE)]:
        del sys.modules[name]


@pytest.fixture
def fake_stage(stages_root, tmp_path) -> dict[str, Path]:
    """The made-up stage, its table (3 + 4 heads for model tiny) and its published number (5 heads)."""
    _package(stages_root, FAKE, FAKE_REPORT)
    table = tmp_path / "fake_counts.csv"
    pd.DataFrame({"model": [MODEL, MODEL, "other"], "layer": [0, 1, 0], "heads": [3, 4, 9]}).to_csv(table, index=False)
    values = tmp_path / "fake.csv"
    values.write_text('paper,analysis,item,value,unit,note,source\n'
                      'C,fake_heads,heads counted,5,heads,,"Clark et al. 2019, section 3"\n')
    return {"table": table, "values": values}


def test_a_stage_declares_its_tables_and_files_in_its_own_report_module(fake_stage, tmp_path):
    stages = (*STAGES, FAKE)
    assert report_tables() == ["models", "finetune_metrics", "surface_heads", "first_token", "head_diagnostics",
                               "sink_rates", "dependency_best", "coref_best", "probes", "pattern_classes",
                               "pattern_classifier", "lexical_top_layers", "lexical_last_layer"]
    assert report_tables(stages) == [*report_tables(), "fake_counts"]
    assert paper_value_files(stages, tmp_path) == [tmp_path / "report" / "paper_values" / name for name in
                                                   ("surface.csv", "syntax.csv", "finetune_effects.csv", "fake.csv")]
    assert list(comparisons(stages))[-1] == "fake_heads" and list(panels(stages)) == list("ABCDEFG")
    # Stages without a report module publish nothing and are skipped.
    assert stage_reports(("data", "attention", "report")) == {}
    assert list(stage_reports(STAGES)) == ["models", "finetune", "surface", "syntax", "finetune_effects"]


def test_the_comparison_answers_a_new_stages_items(fake_stage, study, context, tmp_path):
    values = [*paper_value_files(root=REPO), fake_stage["values"]]
    tables = {**study, "fake_counts": fake_stage["table"]}
    frame = paper_comparison(values, tables, tmp_path / "c.csv", context=context, stages=(*STAGES, FAKE))
    row = frame[frame["analysis"] == "fake_heads"].iloc[0]
    assert (row["study_value"], row["difference"], row["status"]) == (7, 2.0, "compared")
    assert row["study_detail"] == "7 heads over 2 layers" and row["checkpoint"] == "pretrained"
    # Its row sorts with [C] section 3 (after the surface items from another file), before [K].
    items = list(dict.fromkeys(frame["item"]))
    assert items.index("heads counted") == items.index("attention on [SEP] in layers 6-10") + 1
    assert items.index("heads counted") + 1 == items.index("CNN F1")

    # Without the stage in the list its item has no answer, and says so.
    frame = paper_comparison(values, tables, tmp_path / "c.csv", context=context)
    row = frame[frame["analysis"] == "fake_heads"].iloc[0]
    assert row["status"] == "not computed" and "no study analysis answers paper analysis 'fake_heads'" in row["reason"]
    # Without its table, the stage's own comparison says why.
    frame = paper_comparison(values, study, tmp_path / "c.csv", context=context, stages=(*STAGES, FAKE),
                             absent={"fake_counts": "the study counts no fake heads"})
    assert frame[frame["analysis"] == "fake_heads"].iloc[0]["reason"] == "the study counts no fake heads"


def test_the_summary_page_draws_a_new_stages_panel_where_its_letter_says(fake_stage, study, context, tmp_path,
                                                                         page):
    tables = {**study, "fake_counts": fake_stage["table"]}
    states = summary_figure(MODEL, tables, paper_value_files(root=REPO), tmp_path / "s.png", context=context,
                            stages=(*STAGES, FAKE))
    assert states == dict.fromkeys("ABCDEFG")
    # G opens a third row; the rest of that row stays empty.
    assert page["titles"][(2, 0)] == ("G  Fake heads", True)
    assert not page["titles"][(2, 1)][1] and not page["titles"][(2, 2)][1]
    assert page["titles"][(1, 2)][0].startswith("F  ")
    footnote = page["footnote"][0].replace("\n", " ")
    assert "; E-F each task's dev split; G fake corpus; text without gold annotation tagged by spacy." in footnote

    # Only the stages given: a page of one panel says why it has nothing to draw.
    states = summary_figure(MODEL, study, paper_value_files(root=REPO), tmp_path / "g.png", context=context,
                            stages=("models", FAKE), absent={"fake_counts": "no fake heads here"})
    assert states == {"G": "no fake heads here"}


def test_the_registry_raises_what_it_must_not_skip(stages_root):
    _package(stages_root, f"{FAKE}_broken", "import atlas_no_such_module\n")
    with pytest.raises(ModuleNotFoundError, match="atlas_no_such_module"):
        stage_report(f"{FAKE}_broken")
    _package(stages_root, f"{FAKE}_bare", "TABLES = ('x',)\n")
    with pytest.raises(AtlasError, match="declares no REPORT"):
        stage_report(f"{FAKE}_bare")
    _package(stages_root, f"{FAKE}_twin", """
        from workflow_scripts.report.items import PaperComparison, StageReport
        REPORT = StageReport(comparisons=(PaperComparison("surface", lambda *args: []),))
    """)
    with pytest.raises(AtlasError, match="paper analysis 'surface' is declared by both stage surface and stage"):
        stage_reports((*STAGES, f"{FAKE}_twin"))
    with pytest.raises(AtlasError, match="stage 'atlas_no_such_stage' is neither"):
        stage_reports(("atlas_no_such_stage",))
    _package(stages_root, f"{FAKE}_silent", None)  # a package without a report module: nothing to declare
    assert stage_reports((f"{FAKE}_silent",)) == {}


def _package_imports(path: Path, package: str) -> set[str]:
    """The first-level packages of workflow_scripts that ``path`` (a module of ``package``) imports."""
    found = set()
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.level == 1:
            found.add(package)
        elif isinstance(node, ast.ImportFrom) and node.level == 2:
            found.add((node.module or "").split(".")[0])
        elif isinstance(node, ast.ImportFrom) and (node.module or "").startswith("workflow_scripts."):
            found.add(node.module.split(".")[1])
        elif isinstance(node, ast.Import):
            found |= {a.name.split(".")[1] for a in node.names if a.name.startswith("workflow_scripts.")}
    return found


def test_the_report_imports_no_stage_and_stages_import_no_other_analysis():
    package = REPO / "workflow_scripts"
    for path in sorted((package / "report").glob("*.py")):
        assert _package_imports(path, "report") <= {"core", "report", "study"}, path.name
    # A stage's report modules: its own code, the report's types and helpers, core, the checkpoint names of
    # models and the task metadata of finetune; never another analysis stage.
    for stage in STAGES:
        for path in sorted((package / stage).glob("report*.py")) if stage != "report" else []:
            assert _package_imports(path, stage) <= {stage, "core", "report", "models", "finetune"}, path
