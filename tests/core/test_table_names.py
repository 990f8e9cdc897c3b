"""Each table's name is written once, as a constant: the plans declare their tables, the rules ask for their paths and
the readers (report, explorer, summary panels) look them up by it. The constants are in
workflow_scripts/core/table_names.py, which every layer may import; a new stage's table that only its own plan and
rules name may keep its constant in its plan (docs/contributing.md, "Recipe: add a stage")."""

from __future__ import annotations

import ast
import re
from pathlib import Path

from support.paths import REPO
from workflow_scripts.core import table_names
from workflow_scripts.study.plans import stage_plans
from workflow_scripts.surface.measures import HEAD_MEASURES

CONSTANTS = sorted(value for key, value in vars(table_names).items() if key.isupper())
# Every table a plan declares, but the head measures' (named by their HeadMeasure, docs/contributing.md).
NAMES = sorted({table for plan in stage_plans() for analysis in plan.ANALYSES for table in analysis.tables}
               - {measure.name for measure in HEAD_MEASURES})
HOME = REPO / "workflow_scripts" / "core" / "table_names.py"

# Where a typed name would be a table's: its file name, or the argument of a call or a tuple that names tables.
TABLE_PLACES = (r"{q}{name}\.(?:csv|parquet){q}",
                r"(?:model_rows|syntax_rows\(tables,|report_table|report_figure|\.table|tables\.get|input\.get)"
                r"\(?\s*{q}{name}{q}",
                r"(?:tables|read)\[{q}{name}{q}\]", r"{q}{name}{q} in read\b",
                r"(?:tables|explorer_tables|figures)=\((?:[^()]*,\s*)?{q}{name}{q}")


# A table's file named in a message ("sink_rates.csv has no rows ..."): its name, not a longer one's end, nor the
# published numbers a table is compared with (report/paper_values/role_agreement.csv).
FILE_NAME = re.compile(r"(?<![\w{{])(?<!paper_values/){names}\.(?:csv|parquet)\b".format(
    names="(" + "|".join(map(re.escape, sorted(NAMES, key=len, reverse=True))) + ")"))


def typed_table_names(text: str) -> list[str]:
    """The table names ``text`` types where it names a table (TABLE_PLACES, and a table's file named in a string
    that is no docstring), each once."""
    found = {name for name in NAMES
             if any(re.search(place.format(q="[\"']", name=re.escape(name)), text) for place in TABLE_PLACES)}
    found.update(match.group(1) for string in _strings(text) for match in FILE_NAME.finditer(string))
    return sorted(found)


def _strings(text: str) -> list[str]:
    """The string literals of Python source ``text`` but its docstrings (rule files, not Python: every quoted run
    of a line outside comments)."""
    try:
        tree = ast.parse(text)
    except SyntaxError:
        code = "\n".join(line for line in text.splitlines() if not line.lstrip().startswith("#"))
        return re.findall(r"\"[^\"\n]*\"|'[^'\n]*'", code)
    docstrings = {id(node.body[0].value) for node in ast.walk(tree)
                  if isinstance(node, (ast.Module, ast.ClassDef, ast.FunctionDef, ast.AsyncFunctionDef))
                  and node.body and isinstance(node.body[0], ast.Expr) and isinstance(node.body[0].value, ast.Constant)}
    return [node.value for node in ast.walk(tree)
            if isinstance(node, ast.Constant) and isinstance(node.value, str) and id(node) not in docstrings]


def _code_files() -> list[Path]:
    files = [*sorted((REPO / "workflow_scripts").rglob("*.py")), *sorted((REPO / "rules").glob("*.smk")),
             REPO / "Snakefile"]
    return [path for path in files if path != HOME]


def test_no_module_or_rule_types_a_table_name():
    files = _code_files()
    assert len(files) > 100
    typed = {str(path.relative_to(REPO)): names for path in files
             if (names := typed_table_names(path.read_text(encoding="utf-8")))}
    assert not typed, f"table names typed outside workflow_scripts/core/table_names.py (use its constants): {typed}"


def test_the_check_finds_each_way_of_typing_a_table_name():
    typed = {
        'STUDY.paths.analysis("surface", "{model}", "{checkpoint}", "head_diagnostics.csv")': ["head_diagnostics"],
        'rows, why = tables.model_rows("sink_rates", model)': ["sink_rates"],
        "heads=STUDY.syntax.report_table('dependency_heads'),": ["dependency_heads"],
        'Analysis(X, "unit", tables=(SURFACE_HEADS, "atlas_halves"), captions=("a.rst",))': ["atlas_halves"],
        'frame = read["coref_best"]': ["coref_best"],
        'if "head_disabling" in read:': ["head_disabling"],
        'smk.input.get("icl_score")': ["icl_score"],
        'return [missing_row("sink_rates.csv has no rows")]': ["sink_rates"],
        'why = f"no pretrained rows in coref_best.csv for {model}"': ["coref_best"],
        '    STUDY.paths.log("surface", "x"),\n    "tables/probes.csv",': ["probes"],  # a rule file
    }
    for text, names in typed.items():
        assert typed_table_names(text) == names, text
    # A column, an analysis's or a rule's name that equals a table's is another thing, named where it is declared.
    for text in ('frame["icl_score"]', '@entry_point("head_disabling")', 'PaperComparison("probes", compare)',
                 'STUDY.paths.log("report", "atlas")', 'tables.model_rows(HEAD_DIAGNOSTICS, model)',
                 'def f():\n    """Read sink_rates.csv."""\n', 'why = f"{SINK_RATES}.csv has no rows"',
                 'name = "my_sink_rates.csv"'):
        assert typed_table_names(text) == [], text


def test_table_names_holds_the_declared_tables_each_once():
    assert CONSTANTS == NAMES
