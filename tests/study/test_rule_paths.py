"""Every path a rule names under the results folder comes from ResultPaths (workflow_scripts/study/paths.py).

A rule file that spells such a path by hand (``f"{STUDY.results}/logs/..."``) drifts from the study model, the
integrity checks and the other rules that read the same file; ``STUDY.paths.<kind>(...)`` keeps one spelling.
"""

from __future__ import annotations

import re

import pytest

from support.paths import REPO
from workflow_scripts.study.paths import ResultPaths

RULE_FILES = sorted((REPO / "rules").glob("*.smk")) + [REPO / "Snakefile"]
# A path built on the results folder by string formatting or joining, a literal "results/..." path, or an
# f-string path built on a name that holds a folder (f"{SOME_DIR}/x.csv"; the repository's own files, under
# workflow.basedir, are not results). STUDY.results alone, as a value (a param, the results lock's folder), is fine.
HAND_BUILT = (
    re.compile(r"\{\s*STUDY\.results|STUDY\.results\s*\}"),
    re.compile(r"STUDY\.results\s*[+/%]|[+/]\s*STUDY\.results\b"),
    re.compile(r"(?:join|Path)\(\s*STUDY\.results\b"),
    re.compile(r"STUDY\.paths\.root\b"),
    re.compile(r"""["']results/"""),
    re.compile(r"""\bf["']\{(?!workflow\.)[A-Za-z_][\w.]*(?:\[[^\]]*\])?\}/"""),
)


def hand_built_paths(text: str, name: str) -> list[str]:
    """``name:line: text`` of every code line of a rule file that builds a results path by hand."""
    found = []
    for number, line in enumerate(text.splitlines(), start=1):
        if line.lstrip().startswith("#"):
            continue
        if any(pattern.search(line) for pattern in HAND_BUILT):
            found.append(f"{name}:{number}: {line.strip()}")
    return found


def test_there_are_rule_files_to_read():
    assert len(RULE_FILES) > 10 and all(path.is_file() for path in RULE_FILES)


@pytest.mark.parametrize("path", RULE_FILES, ids=lambda p: p.relative_to(REPO).as_posix())
def test_no_rule_file_spells_a_results_path_by_hand(path):
    name = path.relative_to(REPO).as_posix()
    found = hand_built_paths(path.read_text(encoding="utf-8"), name)
    assert not found, ("results paths spelled by hand; use STUDY.paths.<kind>(...) "
                       "(workflow_scripts/study/paths.py):\n" + "\n".join(found))


def test_a_hand_built_path_is_reported_with_its_file_and_line():
    text = "\n".join([
        "rule x:",  # 1
        "    log:",  # 2
        '        f"{STUDY.results}/logs/x/{{model}}.log",',  # 3
        '        STUDY.paths.log("x", "{model}"),',  # 4
        "    params:",  # 5
        "        results=STUDY.results,",  # 6
        '        a=STUDY.results + "/tables/a.csv",',  # 7
        '        b=os.path.join(STUDY.results, "b"),',  # 8
        '        c="results/tables/c.csv",',  # 9
        "# {results}/tables/ and f\"{STUDY.results}/...\" in a comment",  # 10
        'X_DIR = STUDY.paths.analysis("x")',  # 11
        '        d=f"{X_DIR}/{{model}}/d.csv",',  # 12
        '        e=STUDY.paths.log("finetune", f"{{model}}/{_task}.seed{{seed}}"),',  # 13
        '        f=f"{STUDY.paths.root}/f.csv",',  # 14
        "        g=Path(STUDY.results) / 'g',",  # 15
        '        h=f"{workflow.basedir}/report/h.rst",',  # 16
    ])
    assert [hit.split(": ")[0] for hit in hand_built_paths(text, "rules/x.smk")] == [
        "rules/x.smk:3", "rules/x.smk:7", "rules/x.smk:8", "rules/x.smk:9", "rules/x.smk:12", "rules/x.smk:14",
        "rules/x.smk:15"]


# The methods of ResultPaths, with values known by construction: plain names and Snakemake wildcard patterns.
PATHS = ResultPaths("R")


def test_log():
    assert PATHS.log("surface", "x") == "R/logs/surface/x.log"
    assert PATHS.log("surface", "{model}_{checkpoint}_surface_heads.{shard_group}") == \
        "R/logs/surface/{model}_{checkpoint}_surface_heads.{shard_group}.log"
    assert PATHS.log("finetune", "{model}/cola.seed{seed}") == "R/logs/finetune/{model}/cola.seed{seed}.log"


def test_model_card_and_checkpoints():
    assert PATHS.model_card("{model}") == "R/models/{model}/model.json"
    assert PATHS.model_card("bert") == "R/models/bert/model.json"
    assert PATHS.checkpoint_manifest("{model}", "pretrained") == "R/checkpoints/{model}/pretrained/checkpoint.json"
    # A subject MODEL@SIGNAL reads its model's checkpoints.
    assert PATHS.checkpoint_manifest("bert@norm", "random") == "R/checkpoints/bert/random/checkpoint.json"


def test_finetuned_checkpoint():
    assert PATHS.finetuned_checkpoint("{model}", "cola", "{seed}") == \
        "R/checkpoints/{model}/cola.seed{seed}.final/checkpoint.json"
    assert PATHS.finetuned_checkpoint("{model}", "cola", "{seed}", 50) == \
        "R/checkpoints/{model}/cola.seed{seed}.step50/checkpoint.json"
    assert PATHS.finetuned_checkpoint("bert@rollout", "sst2", 42, "final") == \
        "R/checkpoints/bert/sst2.seed42.final/checkpoint.json"
    assert PATHS.finetuned_checkpoint("bert", "sst2", 42, 100) == \
        PATHS.checkpoint_manifest("bert", "sst2.seed42.step100")
    assert PATHS.finetune_metrics("{model}", "cola", "{seed}") == "R/finetune/{model}/cola.seed{seed}.metrics.json"


def test_data_and_tokens():
    assert PATHS.data_table("{task}", "{split}") == "R/data/{task}/{split}.parquet"
    assert PATHS.data_table("wiki", "segments") == "R/data/wiki/segments.parquet"
    assert PATHS.mentions_table("gum", "dev") == "R/data/gum/dev.mentions.parquet"
    assert PATHS.annotation("{corpus}", "{split}") == "R/annotation/{corpus}/{split}.parquet"
    assert PATHS.token_table("{model}", "{corpus}", "{split}") == "R/tokens/{model}/{corpus}/{split}.parquet"
    assert PATHS.token_table("bert@norm", "ewt", "dev") == "R/tokens/bert/ewt/dev.parquet"


def test_dump_shard_and_record():
    assert PATHS.dump_shard("{model}", "{checkpoint}", "{corpus}", "{split}", "{shard}") == \
        "R/attention/{model}/{checkpoint}/{corpus}/{split}/{shard}.parquet"
    assert PATHS.dump_record("m", "pretrained", "ewt", "dev", "shard-0000-of-0002") == \
        "R/attention/m/pretrained/ewt/dev/parts/shard-0000-of-0002.json"
    # A signal's dumps are its own (the subject's folder), beside its model's manifest folder.
    assert PATHS.dump_shard("m@norm", "c", "ewt", "dev", "s") == "R/attention/m@norm/c/ewt/dev/s.parquet"
    assert PATHS.dump_manifest("{model}", "{checkpoint}", "{corpus}", "{split}") == \
        "R/attention/{model}/{checkpoint}/{corpus}/{split}/manifest.json"


def test_shard_partial():
    assert PATHS.shard_partial("surface", "{model}", "{checkpoint}", "surface_heads") == \
        "R/analysis/surface/{model}/{checkpoint}/shards/surface_heads.{shard_group}.parquet"
    assert PATHS.shard_partial("syntax", "m", "c", "dependency", "{treebank}_{split}") == \
        "R/analysis/syntax/m/c/dependency/shards/{treebank}_{split}.{shard_group}.parquet"
    assert PATHS.shard_partial("surface", "m", "c", "attention_distance", shard_group="shard-0000-of-0001") == \
        "R/analysis/surface/m/c/shards/attention_distance.shard-0000-of-0001.parquet"


def test_analysis_tables_figures_and_pages():
    assert PATHS.analysis("finetune_effects", "{model}", "pattern_cnn.json") == \
        "R/analysis/finetune_effects/{model}/pattern_cnn.json"
    assert PATHS.analysis("surface") == "R/analysis/surface"
    assert PATHS.table("probes") == "R/tables/probes.csv"
    assert PATHS.figure("signals", "{model}", "pdf") == "R/figures/signals/{model}.pdf"
    assert PATHS.figures("surface", ["entropy"]) == ["R/figures/surface/entropy.png", "R/figures/surface/entropy.pdf"]
    assert PATHS.page("explorer", "{model}") == "R/explorer/{model}.html"
