"""A stage and a per-head measure added for real, as docs/contributing.md's recipes say ("Add a stage", "Recipe: add an
analysis"), each on a copy of the workflow: the files it takes, counted from the copy's real diff, that its jobs are
planned and run, and that they write what they should.

The toy stage ``token_counts`` counts the examples, tokens and special tokens of each model's surface token table
(values known by construction: the test counts them itself from the same table). Its files are the ones a stage
needs to be planned and run, counted from the copy's real diff; the list is the recipe's (a finished contribution
adds its docs page and tests).
"""

from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pandas as pd

from support.paths import REPO
from support.workflow_runs import console, copy_study, copy_workflow, planned_outputs, snakemake
from workflow_scripts.study.plans.surface import REPORT_CATEGORY

STAGE = "token_counts"

# path (relative to the workflow's copy) -> its text; core/stages.py is edited, the others are new.
NEW_FILES = {
    f"rules/{STAGE}.smk": '''
        # Each rule runs the function registered as @entry_point("<rule name>") in the stage's entry points.

        from workflow_scripts.study.plans.token_counts import TOKEN_COUNTS


        rule token_counts_table:
            input:
                STUDY.token_counts.token_tables,
            output:
                STUDY.token_counts.report_table(TOKEN_COUNTS),
            log:
                STUDY.paths.log("token_counts", "token_counts_table"),
            conda:
                "../envs/surface.yaml"
            threads: 1
            resources:
                mem_mb=1000,
                runtime=10,
            params:
                models=STUDY.token_counts.models,
            script:
                "scripts/entry.py"
        ''',
    f"workflow_scripts/study/plans/{STAGE}.py": '''
        """The toy stage's plan: one table of each model's surface token counts."""

        from __future__ import annotations

        from dataclasses import dataclass
        from typing import ClassVar

        from .declarations import Analysis, StagePlan, declared_tables

        STAGE = "token_counts"
        REPORT_CATEGORY = "Toy"
        # The stage's one table, named here only: no code outside the stage's plan and rules reads it.
        TOKEN_COUNTS = "token_counts"
        ANALYSES = (Analysis(STAGE, "the study", tables=(TOKEN_COUNTS,), captions=("token_counts.rst",)),)


        @dataclass(frozen=True, eq=False, kw_only=True)
        class Plan(StagePlan):
            analyses: ClassVar[tuple[Analysis, ...]] = ANALYSES
            stage: ClassVar[str] = STAGE
            report_category: ClassVar[str] = REPORT_CATEGORY

            models: list[str]
            token_tables: list[str]


        def plan(study) -> Plan:
            surface = study.config["surface"]
            models = sorted({model for model, _ in study.surface.pairs})
            tables = [study.paths.token_table(model, surface["corpus"], surface["split"]) for model in models]
            return Plan(study=study, models=models, token_tables=tables,
                        outputs=[study.paths.table(name) for name in declared_tables(ANALYSES)] if models else [])
        ''',
    f"workflow_scripts/{STAGE}/__init__.py": '''
        """The toy stage's science."""
        ''',
    f"workflow_scripts/{STAGE}/counts.py": '''
        """Examples, tokens and the share of special tokens of token tables."""

        from __future__ import annotations

        import pandas as pd

        from ..core.io import write_csv


        def token_counts(token_tables: list[str], models: list[str], output: str) -> None:
            rows = []
            for model, path in zip(models, token_tables, strict=True):
                tokens = pd.read_parquet(path, columns=["example_id", "special"])
                rows.append({"model": model, "examples": tokens["example_id"].nunique(), "tokens": len(tokens),
                             "special_share": float(tokens["special"].mean())})
            write_csv(pd.DataFrame(rows), output)
        ''',
    f"workflow_scripts/entrypoints/{STAGE}.py": '''
        """Entry points of the toy stage (rules/token_counts.smk)."""

        from __future__ import annotations

        from typing import Any

        from . import entry_point


        @entry_point("token_counts_table")
        def token_counts_table(smk: Any) -> None:
            from ..token_counts.counts import token_counts

            token_counts(list(smk.input), list(smk.params.models), smk.output[0])
        ''',
    f"report/{STAGE}.rst": '''
        Examples, tokens and the share of special tokens in each model's surface token table.
        ''',
}
STAGES_FILE = "workflow_scripts/core/stages.py"


def add_toy_stage(workflow: Path) -> None:
    """Write the toy stage into the workflow's copy."""
    stages = workflow / STAGES_FILE
    text = stages.read_text(encoding="utf-8")
    assert '"ablation", "report"' in text
    stages.write_text(text.replace('"ablation", "report"', f'"ablation", "{STAGE}", "report"'), encoding="utf-8")
    for name, content in NEW_FILES.items():
        (workflow / name).parent.mkdir(parents=True, exist_ok=True)
        (workflow / name).write_text(textwrap.dedent(content).lstrip(), encoding="utf-8")


def file_contents(folder: Path) -> dict[str, bytes]:
    """Every file under ``folder`` (relative path -> bytes), Python's byte-code caches left out."""
    return {path.relative_to(folder).as_posix(): path.read_bytes() for path in folder.rglob("*")
            if path.is_file() and "__pycache__" not in path.parts}


def changed_files(before: dict[str, bytes], after: dict[str, bytes]) -> list[str]:
    """The files added, changed or removed between two :func:`file_contents` of one folder."""
    return sorted(name for name in before.keys() | after.keys() if before.get(name) != after.get(name))


def test_changed_files_counts_added_changed_and_removed_files():
    before = {"a.py": b"1", "b.py": b"2", "c.py": b"3"}
    assert changed_files(before, {"a.py": b"1", "b.py": b"two", "d.py": b"4"}) == ["b.py", "c.py", "d.py"]


def test_a_new_stage_is_a_handful_of_files_and_its_job_plans_and_runs(tiny_study, tmp_path):
    snakefile = copy_workflow(tmp_path / "workflow")
    before = file_contents(snakefile.parent)
    add_toy_stage(snakefile.parent)
    # The recipe's promise, counted from what really changed in the copy: the stage list and six new files.
    touched = changed_files(before, file_contents(snakefile.parent))
    assert len(touched) <= 7 and touched == sorted([STAGES_FILE, *NEW_FILES]), touched
    work = copy_study(tiny_study, tmp_path / "study")
    table = work / "results" / "tables" / "token_counts.csv"
    # Only what is missing: the copy's code digests differ from the original's (its stage list changed).
    mtime_only = ("--rerun-triggers", "mtime")
    dry = snakemake(work, "-n", *mtime_only, snakefile=snakefile)
    assert dry.returncode == 0, console(dry)[-4000:]
    assert "token_counts_table" in console(dry) and "results/tables/token_counts.csv" in planned_outputs(dry)
    run = snakemake(work, str(table.relative_to(work)), *mtime_only, snakefile=snakefile)
    assert run.returncode == 0, console(run)[-4000:]
    counts = pd.read_csv(table)
    tokens = pd.read_parquet(next((work / "results" / "tokens").glob("*/wiki/segments.parquet")))
    row = counts.iloc[0]
    assert (row["examples"], row["tokens"]) == (tokens["example_id"].nunique(), len(tokens))
    assert row["special_share"] == float(tokens["special"].mean())
    # Its report entry, as Snakemake plans it in the copy: the caption file and category its plan declares.
    jobs_file = tmp_path / "jobs.json"
    listed = subprocess.run([sys.executable, str(REPO / "tools" / "job_list.py"), "write", str(jobs_file),
                             "--configfile", str(work / "tiny.yaml"), "--snakefile", str(snakefile),
                             "--directory", str(work)], capture_output=True, text=True, cwd=work)
    assert listed.returncode == 0, listed.stderr[-3000:]
    [(path, entry)] = json.loads(jobs_file.read_text())["token_counts_table"]["report"].items()
    assert path.endswith("tables/token_counts.csv") and entry[0].endswith("report/token_counts.rst")
    assert entry[1:] == ["Toy", None]


# --- a per-head measure: its science and one registration (docs/contributing.md, "Recipe: add an analysis") ------

MEASURE = "row_sum"
MEASURE_CAPTION = "Each head's attention summed over a query's keys, averaged over queries (1 by construction)."
MEASURE_MODULE = (f"workflow_scripts/surface/{MEASURE}.py", '''
    """A test's head measure: every query's attention summed over its keys (a distribution: 1 by construction)."""

    from __future__ import annotations

    import numpy as np


    def row_sum_sums(attention: np.ndarray, tokens) -> tuple[np.ndarray, float]:
        """(layers, heads) summed row sums of the example's queries; the number of queries."""
        return attention.sum(axis=(-1, -2), dtype=np.float64), float(attention.shape[-1])
    ''')
MEASURES_FILE = "workflow_scripts/surface/measures.py"


def add_head_measure(workflow: Path) -> None:
    """Write the measure's module and register it in the copy's HEAD_MEASURES."""
    name, content = MEASURE_MODULE
    (workflow / name).write_text(textwrap.dedent(content).lstrip(), encoding="utf-8")
    measures = workflow / MEASURES_FILE
    text = measures.read_text(encoding="utf-8")
    assert "from .same_word import same_word_sums\n" in text and text.rstrip().count("\n)\n") >= 1
    text = text.replace("from .same_word import same_word_sums\n",
                        "from .row_sum import row_sum_sums\nfrom .same_word import same_word_sums\n")
    registration = f'    HeadMeasure("{MEASURE}", "row sum", "share", row_sum_sums, caption={MEASURE_CAPTION!r}),\n)\n'
    end = text.index("\n)\n", text.index("HEAD_MEASURES"))
    measures.write_text(text[:end + 1] + registration + text[end + 3:], encoding="utf-8")


def test_a_new_head_measure_is_two_files_and_gets_its_table_caption_and_report_entry(tiny_study, tmp_path):
    snakefile = copy_workflow(tmp_path / "workflow")
    before = file_contents(snakefile.parent)
    add_head_measure(snakefile.parent)
    touched = changed_files(before, file_contents(snakefile.parent))
    assert touched == sorted([MEASURE_MODULE[0], MEASURES_FILE])  # the bound: at most 3 files
    work = copy_study(tiny_study, tmp_path / "study")
    table = work / "results" / "tables" / f"{MEASURE}.csv"
    run = snakemake(work, str(table.relative_to(work)), "--rerun-triggers", "mtime", snakefile=snakefile)
    assert run.returncode == 0, console(run)[-4000:]
    rows = pd.read_csv(table)
    # Every query's attention is a distribution: each head's measure is 1 (float16 maps), over every token.
    np.testing.assert_allclose(rows[MEASURE], 1.0, atol=2e-3)
    tokens = pd.read_parquet(next((work / "results" / "tokens").glob("*/wiki/segments.parquet")))
    assert set(rows["n_units"]) == {len(tokens)} and {"pretrained", "random"} <= set(rows["checkpoint"])
    # Its report entry, as Snakemake plans it in the copy: the stacked table's caption file, the surface stage's
    # category, the head measures' subcategory, and the declared caption as the rule's params.
    jobs_file = tmp_path / "jobs.json"
    listed = subprocess.run([sys.executable, str(REPO / "tools" / "job_list.py"), "write", str(jobs_file),
                             "--configfile", str(work / "tiny.yaml"), "--snakefile", str(snakefile),
                             "--directory", str(work)], capture_output=True, text=True, cwd=work)
    assert listed.returncode == 0, listed.stderr[-3000:]
    job = json.loads(jobs_file.read_text())[f"surface_table table={MEASURE}"]
    [(path, entry)] = job["report"].items()
    assert path.endswith(f"tables/{MEASURE}.csv") and entry[0].endswith("report/surface_table.rst")
    assert entry[1:] == [REPORT_CATEGORY, "Head measures"] and job["params"]["caption"] == MEASURE_CAPTION
