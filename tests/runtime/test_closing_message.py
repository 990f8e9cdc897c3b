"""The closing message of a successful run (workflow_scripts/runtime/closing_message.py): the explorer pages
and the report command with the options of the run that choose the study, nothing else."""

from __future__ import annotations

from types import SimpleNamespace

import pytest

from workflow_scripts.runtime.closing_message import (
    MAX_PAGES_LISTED,
    built_the_study,
    closing_message,
    on_success,
    report_command,
)

BASE = "snakemake --report report.html"


@pytest.mark.parametrize(("argv", "expected"), [
    (["snakemake", "--cores", "all"], BASE),
    (["snakemake", "--profile", "profiles/offline", "--config", "mirror=/data/m", "results=r2", "--cores", "all"],
     f"{BASE} --profile profiles/offline --config mirror=/data/m results=r2"),
    # Targets and other options' values are left out, wherever they stand.
    (["snakemake", "results/tables/x.csv", "--configfile", "a.yaml", "b.yaml", "-d", "work", "t2", "--cores", "2",
      "--forcerun", "extract_attention"], f"{BASE} --configfile a.yaml b.yaml -d work"),
    (["/venv/snakemake/__main__.py", "--snakefile", "/repo/Snakefile", "--config=results=r", "target"],
     f"{BASE} --snakefile /repo/Snakefile --config=results=r"),
    # Values that need quoting keep it.
    (["snakemake", "-C", "attention={num_shards: 8}", "-j", "4"], f"{BASE} -C 'attention={{num_shards: 8}}'"),
    (["snakemake", "--workflow-profile", "none", "--profile", "profiles/slurm", "--keep-going"],
     f"{BASE} --workflow-profile none --profile profiles/slurm"),
])
def test_the_report_command_keeps_the_options_that_choose_the_study(argv, expected):
    assert report_command(argv) == expected


def test_the_message_lists_the_explorer_pages_that_exist(tmp_path):
    results = tmp_path / "results"
    (results / "explorer").mkdir(parents=True)
    for name in ("bert-base-uncased", "bert-base-cased"):
        (results / "explorer" / f"{name}.html").write_text("<html></html>")
    (results / "explorer" / "notes.txt").write_text("not a page")
    lines = closing_message(results, ["snakemake", "--cores", "all"]).splitlines()
    assert lines == ["Head explorer (open a page in a browser):",
                     f"  {results}/explorer/bert-base-cased.html", f"  {results}/explorer/bert-base-uncased.html",
                     "Report (every figure and table in one HTML file):", f"  {BASE}"]
    # The atlas page, where the study has it: named after the models' pages.
    (results / "explorer" / "_index.html").write_text("<html></html>")
    lines = closing_message(results, ["snakemake", "--cores", "all"]).splitlines()
    assert lines[3] == (f"  {results}/explorer/_index.html  (the atlas: every model's heads by role and checkpoint, "
                        "and role agreement)") and lines[4].startswith("Report")


def test_many_pages_are_named_by_their_folder_and_no_pages_by_nothing(tmp_path):
    (tmp_path / "explorer").mkdir()
    for i in range(MAX_PAGES_LISTED + 1):
        (tmp_path / "explorer" / f"m{i}.html").write_text("")
    first = closing_message(tmp_path, ["snakemake"]).splitlines()[0]
    assert first == f"Head explorer: {MAX_PAGES_LISTED + 1} pages in {tmp_path / 'explorer'}/ (open one in a browser)"
    assert closing_message(tmp_path / "none", ["snakemake"]).splitlines()[0].startswith("Report")
    (tmp_path / "explorer" / "_index.html").write_text("")  # the index: named, not counted as a model's page
    first = closing_message(tmp_path, ["snakemake"]).splitlines()[0]
    assert first == (f"Head explorer: {MAX_PAGES_LISTED + 1} pages in {tmp_path / 'explorer'}/ (open one in a browser;"
                     f" {tmp_path / 'explorer' / '_index.html'} lists them all)")


def test_only_a_run_of_the_whole_study_gets_the_message(tmp_path):
    def run_of(*rules):
        return SimpleNamespace(dag=SimpleNamespace(targetrules=[SimpleNamespace(name=r) for r in rules]))

    assert built_the_study(run_of("all")) and not built_the_study(run_of()) and not built_the_study(run_of("x"))
    assert on_success(run_of("all"), tmp_path, ["snakemake"]).endswith(BASE)
    assert on_success(run_of(), tmp_path, ["snakemake", "results/tables/x.csv"]) == ""
