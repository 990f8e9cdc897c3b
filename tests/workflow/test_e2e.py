"""End to end: the real Snakemake DAG on the tiny study (tiny model, tiny mirror, two shards per dump: the session's
``tiny_study`` of tests/conftest.py, written by tests/support/mirror.py and built once).

Also checks the promises of incremental reruns: a second run does nothing, and
touching one source file reruns its table and what depends on it, nothing else. The tests that only read the study
or dry-run it read the shared build; those that change it (a source, a shard, a killed job, a setting) each take a
copy of their own, so that none depends on another's leftovers or on the order they run in.
"""

from __future__ import annotations

import os
import re
import signal
import subprocess
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest
from scipy.stats import spearmanr

from support.paths import REPO
from support.workflow_runs import (
    config_of,
    console,
    copy_study,
    copy_workflow,
    finished_rules,
    offline_env,
    planned_outputs,
    snakemake,
    snakemake_command,
    with_config,
)
from workflow_scripts.core.io import read_metadata

pytestmark = pytest.mark.e2e


STUDY_WIDE = ("results/tables/", "results/figures/")


@pytest.fixture
def built(tiny_study) -> Path:
    """The shared tiny study, built: read it or dry-run it, never write into it."""
    return tiny_study


@pytest.fixture
def own(tiny_study, tmp_path) -> Path:
    """A copy of the built tiny study for a test that changes it."""
    return copy_study(tiny_study, tmp_path / "study")


def test_full_tiny_study_builds(built):
    results = built / "results"
    summary = pd.read_csv(results / "tables" / "data_summary.csv")
    rows = dict(zip(summary["corpus"] + "/" + summary["split"], summary["rows"]))
    assert rows["cola/dev"] == 6 and rows["cola/train"] == 18
    assert rows["ewt/dev"] == 6 and rows["gum_mentions/dev"] == 12
    assert rows["wiki/segments"] == 4 and rows["glove/vectors"] == 10
    dumps = pd.read_csv(results / "tables" / "attention_dumps.csv")
    assert set(dumps["checkpoint"]) == {"pretrained", "random", "cola.seed42.final"}
    assert set(dumps["corpus"] + "/" + dumps["split"]) == {"wiki/segments", "ewt/train", "ewt/dev", "gum/dev"}
    # The fine-tuned checkpoint: the dumps its roles read (roles.finetuned), EWT's score split alone.
    tuned = dumps[dumps["checkpoint"] == "cola.seed42.final"]
    assert set(tuned["corpus"] + "/" + tuned["split"]) == {"wiki/segments", "ewt/dev"}
    assert (dumps["bytes_per_value"] > 0).all()
    # Every analysis ran on the model's attention weights (the tiny study's one signal; the norm signal is taken
    # through the decoder and families study).
    assert set(dumps["model"] + ":" + dumps["signal"]) == {"tiny:attention"}
    for table in ("surface_heads", "sep_gradient", "dependency_best", "coref_best", "probes", "pattern_classes",
                  "finetune_change"):
        assert set(pd.read_csv(results / "tables" / f"{table}.csv")["model"]) == {"tiny"}, table
    assert (results / "figures" / "summary" / "tiny.png").stat().st_size > 0
    # Causal head checks: each head of the fine-tuned CoLA model disabled alone, and the found heads.
    card = pd.read_csv(results / "tables" / "models.csv").iloc[0]
    disabling = pd.read_csv(results / "tables" / "head_disabling.csv")
    assert len(disabling) == card["num_layers"] * card["num_heads"] and set(disabling["mode"]) == {"zero"}
    assert ((disabling["score"] - disabling["baseline_score"]).round(9) == disabling["delta"].round(9)).all()
    found = pd.read_csv(results / "tables" / "found_heads.csv")
    assert {"task:cola", "probe:attn UAS"} <= set(found["target"]) and (found["layer"] >= 0).all()
    assert (results / "figures" / "ablation" / "head_disabling_tiny.png").stat().st_size > 0
    for log in (results / "logs").rglob("*.log"):
        assert log.stat().st_size > 0, f"{log} is empty: every rule must log"


def test_the_atlas_places_every_model_s_heads_by_relative_depth(built):
    atlas = pd.read_csv(built / "results" / "tables" / "atlas.csv")
    assert list(atlas.columns) == ["model", "family", "parameters", "series", "revision", "step", "checkpoint",
                                   "role", "detail", "layer", "num_layers", "relative_depth", "head", "score",
                                   "ci_low", "ci_high", "random_score", "rank", "num_heads"]
    assert set(atlas["model"]) == {"tiny"} and {"sink", "dependency", "causal_importance"} <= set(atlas["role"])
    assert ((atlas["relative_depth"] - (atlas["layer"] + 0.5) / atlas["num_layers"]).abs() < 1e-9).all()
    assert (built / "results" / "figures" / "report" / "atlas.png").stat().st_size > 0


PER_HEAD_ROLES = ("sink", "previous_token", "induction", "dependency_accuracy", "coreference_accuracy")


@pytest.mark.filterwarnings("ignore::scipy.stats.ConstantInputWarning")  # a relation no head of which scores
def test_the_fine_tuned_checkpoint_s_roles_are_measured_and_read_against_their_floors(built):
    """roles.finetuned's default: cola.seed42.final gets the diagnostics, the surface statistics, the dependency heads
    on EWT's dev split and the coreference heads; role agreement compares each role with the pretrained checkpoint's,
    against the split-half floor, and every number of it is recomputed here from atlas.csv and atlas_halves.csv."""
    tables = built / "results" / "tables"
    final = "cola.seed42.final"
    for table in ("head_diagnostics", "surface_heads", "dependency_heads", "coref_heads", "head_diagnostics_halves",
                  "dependency_halves"):
        assert final in set(pd.read_csv(tables / f"{table}.csv")["checkpoint"]), table
    heads = pd.read_csv(tables / "dependency_heads.csv")
    assert set(heads.loc[heads["checkpoint"] == final, "select_split"]) == {"dev"}  # its dev dump alone
    agreement = pd.read_csv(tables / "role_agreement.csv")
    assert list(agreement.columns[:20]) == ["relation", "role", "detail", "first_model", "first_checkpoint",
                                            "second_model", "second_checkpoint", "heads", "rho", "rho_low",
                                            "rho_high", "split_half_rho", "floor_rho", "floor_low", "floor_high",
                                            "seed_checkpoint", "seed_rho", "seed_low", "seed_high", "verdict"]
    assert set(agreement["relation"]) == {"pretrained_vs_finetuned"}  # one signal, one seed
    assert set(agreement["second_checkpoint"]) == {final}
    compared = agreement[agreement["heads"].notna()]
    per_head = compared[compared["role"].isin(PER_HEAD_ROLES)]
    assert set(per_head["role"]) == set(PER_HEAD_ROLES)
    # A floor and a verdict wherever the halves rank the heads: the diagnostics' (the tiny treebank's halves hold one
    # sentence each, repeated, and rank no head of a relation apart: no floor, no verdict).
    floored = per_head["split_half_rho"].notna()
    assert floored.sum() >= 3 and (per_head.loc[floored, "floor_correction"] == "spearman-brown").all()
    assert per_head.loc[floored, "verdict"].isin(["moved", "kept", "noisy"]).all()
    assert per_head.loc[~floored, "verdict"].isna().all()
    atlas, halves = pd.read_csv(tables / "atlas.csv"), pd.read_csv(tables / "atlas_halves.csv")
    for row in per_head.itertuples():
        def scores(frame, checkpoint, column="score", row=row):
            part = frame[(frame["checkpoint"] == checkpoint) & (frame["role"] == row.role)
                         & (frame["detail"].fillna("") == ("" if pd.isna(row.detail) else row.detail))]
            return part.set_index(["layer", "head"])[column].sort_index()
        rho = spearmanr(scores(atlas, "pretrained"), scores(atlas, final)).statistic
        assert row.rho == pytest.approx(rho, nan_ok=True), (row.role, row.detail)
        raw = spearmanr(scores(halves, "pretrained", "score_half_a"), scores(halves, "pretrained", "score_half_b"))
        assert row.split_half_rho == pytest.approx(raw.statistic, nan_ok=True), (row.role, row.detail)
        if raw.statistic >= 0:
            assert row.floor_rho == pytest.approx(2 * raw.statistic / (1 + raw.statistic))
    # The tiny model's maps all fall in [K]'s Heterogeneous class: no pattern role; causal importance is on the
    # fine-tuned checkpoint only, named in the pair's note.
    notes = agreement[agreement["heads"].isna()]
    assert len(notes) == 1 and "only on the second: causal_importance" in notes["note"].iloc[0]
    assert "dependency (" not in notes["note"].iloc[0]  # the best-head role: compared as dependency_accuracy
    by_layer = pd.read_csv(tables / "role_change_by_layer.csv")
    assert set(by_layer["role"]) == set(PER_HEAD_ROLES) and set(by_layer["second_checkpoint"]) == {final}
    assert (by_layer["ci_low"] <= by_layer["mean_abs_change"] + 1e-12).all()
    for figure in ("role_agreement", "role_change_by_layer"):
        assert (built / "results" / "figures" / "report" / f"{figure}.png").stat().st_size > 0


def test_second_run_does_nothing(built):
    result = snakemake(built, "--dry-run")
    assert result.returncode == 0, result.stderr[-3000:]
    assert "Nothing to be done" in result.stdout + result.stderr


def test_editing_one_source_reruns_only_its_table_and_dependents(own):
    # An edit, not a bare touch: Snakemake 9 keeps checksums of small inputs and rightly
    # rebuilds nothing when a touched file's content is unchanged.
    source = own / "mirror" / "glove" / "glove.6B.50d.first50000.txt"
    original = source.read_text()
    source.write_text(original + "cat " + " ".join(["0.5"] * 50) + "\n")
    later = time.time() + 5
    os.utime(source, (later, later))
    result = snakemake(own, "--dry-run")
    source.write_text(original)
    assert result.returncode == 0, result.stderr[-3000:]
    restored = snakemake(own, "--dry-run")
    assert "Nothing to be done" in restored.stdout + restored.stderr, "restoring the content must restore the state"
    outputs = planned_outputs(result)
    data_tables = {o for o in outputs if o.startswith("results/data/")}
    assert data_tables == {"results/data/glove/vectors.parquet"}, outputs
    # Only the probes read GloVe: nothing upstream of them and no other analysis reruns.
    stray = {o for o in outputs if not ("glove" in o or "probe" in o or o.startswith(STUDY_WIDE))}
    assert not stray, sorted(stray)


def test_a_change_of_behaviour_in_a_module_reruns_the_jobs_that_run_it_and_a_comment_nothing(built, tmp_path):
    """Each rule's params hold a digest of the code its entry point reaches (workflow_scripts/runtime/code_digest.py),
    comments and docstrings left out: on a copy of the workflow's code, the built study stays up to date until a
    module changes what it does, and then exactly the jobs that run it and what reads their outputs are planned."""
    def planned(snakefile: Path) -> set[str]:
        result = snakemake(built, "--dry-run", snakefile=snakefile)
        assert result.returncode == 0, console(result)[-3000:]
        return set(re.findall(r"^rule (\w+):$", console(result), re.MULTILINE))

    snakefile = copy_workflow(tmp_path / "code")
    # The copy alone: the jobs that read files of the repository by their path (the papers' values, for the
    # comparison, the summary page and the role agreement figure's published reference) see other paths, nothing else.
    moved = planned(snakefile)
    assert moved <= {"paper_comparison", "summary_figure", "role_agreement_figure", "all"}, sorted(moved)
    module = snakefile.parent / "workflow_scripts" / "syntax" / "coreference.py"
    original = module.read_text(encoding="utf-8")
    assert original.startswith('"""')
    module.write_text(original.replace('"""', '"""Reworded. ', 1) + "\n# a comment of the end\n", encoding="utf-8")
    assert planned(snakefile) == moved, "a comment or a docstring changes no job"
    module.write_text(original + "\nMENTIONS_CHANGED = True\n", encoding="utf-8")  # any change of the syntax tree
    # The coreference scores and tables run syntax/coreference.py; the rest reads coref_best.csv.
    assert planned(snakefile) - moved == {"coreference_scores", "coreference_tables", "found_heads",
                                          "ablation_table", "head_explorer", "atlas", "atlas_figure",
                                          "explorer_index", "role_agreement", "role_agreement_figure",
                                          "role_change_figure"} - moved


def _dry_run_with(work: Path, config: dict, folder: Path) -> set[str]:
    """The outputs a dry run of ``work`` plans under ``config`` (written in ``folder``, not in the study)."""
    result = with_config(work, config, "--dry-run", name=str(folder / "changed.yaml"))
    assert result.returncode == 0, result.stderr[-3000:]
    return planned_outputs(result)


def test_adding_a_task_adds_exactly_that_tasks_branch(built, tmp_path):
    config = config_of(built)
    config["study"]["tasks"] = [*config["study"]["tasks"], "rte"]
    outputs = _dry_run_with(built, config, tmp_path)
    assert "results/data/rte/train.parquet" in outputs and "results/data/rte/dev.parquet" in outputs
    assert any("rte.seed" in o for o in outputs), "the new task must be fine-tuned"
    # The pattern classifier is trained on maps of every task, so it is study-wide too (one per signal).
    pooled = ("results/analysis/finetune_effects/tiny/pattern_",)
    # The explorer's page reads every per-head table (the new task's change and pattern classes among them), and the
    # atlas page (_index.html) the atlas and role agreement, which gain the task's checkpoints; the found heads are
    # ablated in every fine-tuned task.
    study_wide = ("results/explorer/tiny.html", "results/explorer/_index.html",
                  "results/analysis/ablation/tiny/found_heads.csv")
    stray = {o for o in outputs if "rte" not in o and not o.startswith((*STUDY_WIDE, *pooled, *study_wide))}
    assert not stray, f"outputs outside the rte branch would be rebuilt: {sorted(stray)}"


def test_changing_a_models_max_length_reruns_its_extraction_and_downstream_only(built, tmp_path):
    config = config_of(built)
    config["models"]["tiny"]["max_length"] = 24
    outputs = _dry_run_with(built, config, tmp_path)
    assert any(o.startswith("results/tokens/tiny/") for o in outputs)
    assert any(o.startswith("results/attention/tiny/") for o in outputs)
    upstream = {o for o in outputs if o.startswith(("results/data/", "results/annotation/", "results/models/"))}
    assert not upstream, f"data, annotation and model cards do not depend on max_length: {sorted(upstream)}"


def test_changing_an_analysis_threshold_reruns_only_that_analysis_its_figures_and_the_report(built, tmp_path):
    config = config_of(built)
    config.setdefault("surface", {})["behaviour_threshold"] = 0.4
    outputs = _dry_run_with(built, config, tmp_path)
    assert "results/tables/head_clusters.csv" in outputs and "results/figures/surface/head_clusters.png" in outputs
    report_parts = ("results/figures/summary/", "results/tables/paper_comparison.csv", "results/explorer/")
    stray = {o for o in outputs if not ("head_clusters" in o or "head_distances" in o or o.startswith(report_parts))}
    assert not stray, f"the behaviour threshold only feeds the clustering: {sorted(stray)}"


def test_the_report_assembles_every_figure_and_table(built, tmp_path):
    report = tmp_path / "report.html"
    result = snakemake(built, "--report", str(report))
    assert result.returncode == 0, result.stderr[-3000:]
    html = report.read_text()
    for name in ("summary", "tiny.png", "paper_comparison.csv", "surface_heads.csv", "dependency_best.csv",
                 "probes.csv", "finetune_metrics.csv", "lexical_layers.csv", "pattern_classes.csv", "tiny.html"):
        assert name in html, f"{name} is missing from the report"
    # the landing page says what the study is, from its config (report/report_workflow.rst)
    text = re.sub(r"<[^>]+>", "", html)  # the page's emphasis renders as tags
    assert "Where to start" in text and "Models: tiny." in text and "Treebank sentences fed as: words" in text
    # and which config files the run that made it read, in order (workflow_scripts/runtime/config_sources.py)
    assert f"Config read, in this order, by the run that made this report: {REPO / 'config.yaml'}, tiny.yaml" \
        in " ".join(text.split()), text[:3000]


def test_treebanks_are_fed_as_gold_words_and_every_table_says_so(built):
    results = built / "results"
    assert read_metadata(results / "tokens" / "tiny" / "ewt" / "dev.parquet")["input_protocol"] == "words"
    assert read_metadata(results / "tokens" / "tiny" / "wiki" / "segments.parquet")["input_protocol"] == "text"
    tokens = pq.read_table(results / "tokens" / "tiny" / "ewt" / "dev.parquet").to_pandas()
    first = tokens[tokens.example_id == 0]
    # "It won't go." is fed as "It wo n't go .": "wo" is a token of its own, as [C] fed the PTB.
    assert "wo" in first["token"].tolist()
    dumps = pd.read_csv(results / "tables" / "attention_dumps.csv")
    protocol = dict(zip(dumps["corpus"], dumps["input_protocol"]))
    assert protocol == {"wiki": "text", "ewt": "words", "gum": "words"}
    for table in ("dependency_best", "dependency_heads", "coref_best", "probes"):
        assert set(pd.read_csv(results / "tables" / f"{table}.csv")["input_protocol"]) == {"words"}, table


def test_changing_the_input_protocol_reruns_only_the_treebank_branch(built, tmp_path):
    config = config_of(built)
    config["attention"]["input_protocol"] = "text"
    outputs = _dry_run_with(built, config, tmp_path)
    token_tables = {o for o in outputs if o.startswith("results/tokens/")}
    corpora = ("ewt/train", "ewt/dev", "gum/dev", "gumwin/dev")
    assert token_tables == {f"results/tokens/tiny/{c}.parquet" for c in corpora}
    upstream = {o for o in outputs if o.startswith(("results/data/", "results/annotation/", "results/checkpoints/"))}
    assert not upstream, sorted(upstream)
    # (the fine-tuned checkpoint's treebank dumps rerun; its name holds "cola": the task's own files are under /cola/)
    untouched = {o for o in outputs if "/wiki/" in o or "/cola/" in o or "/surface/" in o}
    assert not untouched, f"text corpora are fed as written under both protocols: {sorted(untouched)}"


def test_a_corrupt_shard_fails_the_analysis_and_the_next_plain_run_rebuilds_it(own):
    # The coreference windows' dump: one analysis reads it (coreference scoring), so the repair stays small.
    dump = own / "results" / "attention" / "tiny" / "pretrained" / "gumwin" / "dev"
    shard = dump / "shard-0001-of-0002.parquet"
    before = shard.stat()
    data = bytearray(shard.read_bytes())
    data[len(data) // 3:len(data) // 3 + 64] = bytes(64)  # inside the maps' pages, not the footer
    shard.write_bytes(bytes(data))
    # Silent corruption (bit rot, a bad disk): the file's size and time stay, so the plan, which hashes a file
    # only where one of them changed, does not see it (tests/workflow/test_damage_repair.py: where it does).
    os.utime(shard, ns=(before.st_atime_ns, before.st_mtime_ns))
    # The dump's coreference scores are made again, so they read the dump.
    scores = "results/analysis/syntax/tiny/pretrained/coreference/gumwin_dev.parquet"
    failed = snakemake(own, scores, "--forcerun", "coreference_scores")
    assert failed.returncode != 0
    log = (own / "results" / "logs" / "syntax" / "tiny_pretrained_coreference.log").read_text()
    named = "attention shard results/attention/tiny/pretrained/gumwin/dev/shard-0001-of-0002.parquet is corrupt"
    assert named in log and "run snakemake again" in log, log[-2000:]
    rebuilt = snakemake(own)  # plain: no target, no option
    assert rebuilt.returncode == 0, rebuilt.stderr[-3000:]
    assert "extract_attention" in finished_rules(rebuilt)
    assert (dump / "manifest.json").exists() and pq.ParquetFile(shard).metadata.num_rows > 0
    assert (own / scores).exists()
    final = snakemake(own, "--dry-run")
    assert "Nothing to be done" in final.stdout + final.stderr


def test_a_job_killed_mid_run_leaves_nothing_a_rerun_trusts(own):
    # GUM's dev dump: no analysis of the tiny study reads it (its coreference windows have a dump of their own), so
    # only the plan's check of the results folder sees that the killed run left it half made.
    dump = own / "results" / "attention" / "tiny" / "pretrained" / "gum" / "dev"
    logs = own / "results" / "logs" / "attention"
    shard_logs = "tiny_pretrained_gum_dev.shard-*.log"  # one extract_attention job per shard
    for stale in logs.glob(shard_logs):
        stale.unlink()
    # The target comes first: --forcerun takes every word after it as a rule or file to force.
    target = "results/attention/tiny/pretrained/gum/dev/manifest.json"
    command = snakemake_command(own, target, "--forcerun", "extract_attention", cores=1)
    output = own / "killed_run.txt"
    with open(output, "w") as sink:
        job = subprocess.Popen(command, cwd=own, stdout=sink, stderr=subprocess.STDOUT, env=offline_env(),
                               start_new_session=True)
        deadline = time.time() + 300
        # Killed once a shard job has begun: its log is there and it has retired the dump's manifest
        # (the gather writes the manifest; a shard job removes it first thing, before loading the model).
        while ((not any(logs.glob(shard_logs)) or (dump / "manifest.json").exists()) and job.poll() is None
               and time.time() < deadline):
            time.sleep(0.02)
        if job.poll() is None:
            os.killpg(job.pid, signal.SIGKILL)
        job.wait()
    assert any(logs.glob(shard_logs)), f"no extraction job started:\n{output.read_text()[-3000:]}"
    assert job.returncode == -signal.SIGKILL, f"the run ended before it was killed:\n{output.read_text()[-3000:]}"
    assert not (dump / "manifest.json").exists(), "a killed extraction must not leave the manifest a reader trusts"
    # A SIGKILLed Snakemake leaves no lock that stops the next run (the profiles set nolock: the results
    # folder's own lock ends with its process), and Snakemake's incomplete-output marks are rerun (the workflow
    # profile sets rerun-incomplete): the dry run and the run below take no extra flag.
    # The half-made dump is found by the plan (its manifest is missing while its shards' records are there) and
    # gathered again (workflow_scripts/runtime/integrity.py), although no planned analysis needs it rebuilt.
    plain = snakemake(own, "--dry-run")
    assert plain.returncode == 0, (plain.stdout + plain.stderr)[-3000:]
    assert target in planned_outputs(plain), (plain.stdout + plain.stderr)[-3000:]
    rerun = snakemake(own)
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert (dump / "manifest.json").exists()
    final = snakemake(own, "--dry-run")
    assert "Nothing to be done" in final.stdout + final.stderr
    assert not list(dump.glob(".*.partial")), "the killed job's partial file outlived the next run"


def test_shards_per_analysis_job_change_the_jobs_not_the_tables(own):
    """attention.analysis_shards_per_job 2 over the tiny study's 2 shards: one job per dump, the same tables."""
    results = own / "results"
    surface = results / "analysis" / "surface" / "tiny" / "pretrained" / "surface_heads.csv"
    scores = results / "analysis" / "syntax" / "tiny" / "pretrained" / "dependency" / "ewt_dev.parquet"
    targets = str(surface.relative_to(own)), str(scores.relative_to(own))
    before = surface.read_bytes(), pq.read_table(scores)
    config = config_of(own)
    config["attention"]["analysis_shards_per_job"] = 2
    result = with_config(own, config, *targets, name="grouped.yaml")
    assert result.returncode == 0, result.stderr[-4000:]
    assert finished_rules(result) == {"surface_heads_shard", "surface_heads_part", "dependency_scores_shard",
                                      "dependency_scores"}
    assert (surface.parent / "shards" / "surface_heads.shards-0000-0001-of-0002.parquet").exists()
    assert surface.read_bytes() == before[0]
    after = pq.read_table(scores)
    assert after.equals(before[1])
