"""The plan of a study (workflow_scripts/study/forecast/plan.py): jobs per stage from the real dry run, dump sizes
from the results' tables, caps, forward passes; on the tiny study, with values known by construction."""

from __future__ import annotations

import json
from dataclasses import replace
from pathlib import Path

import pyarrow as pa
import pytest
import yaml

from support.mirror import write_tiny_study
from support.resolved_config import resolve
from workflow_scripts.core.io import write_table
from workflow_scripts.core.stages import STAGES
from workflow_scripts.study.build import build_study
from workflow_scripts.study.checks import resolve_config
from workflow_scripts.study.estimates.sizes import BYTES_PER_VALUE, model_shape, size_dump, split_size
from workflow_scripts.study.forecast.counts import PASS_COUNTS, forward_passes
from workflow_scripts.study.forecast.dry_run import rule_stages, stage_of
from workflow_scripts.study.forecast.plan import make_plan
from workflow_scripts.study.forecast.text import format_plan
from workflow_scripts.study.forecast.timing import Rates, duration


def _model(folder: Path, architectures: list[str]) -> Path:
    """A model folder as far as the plan and the config checks read it: its config.json (2 layers, 2 heads)."""
    folder.mkdir(parents=True)
    (folder / "config.json").write_text(json.dumps({
        "model_type": "bert", "num_hidden_layers": 2, "num_attention_heads": 2, "max_position_embeddings": 64,
        "architectures": architectures}))
    (folder / "vocab.txt").write_text("[PAD]\n")  # a tokenizer, which the config checks ask of a model folder
    return folder


@pytest.fixture(scope="module")
def tiny(tmp_path_factory) -> Path:
    """The tiny study's config with a second signal (norm: the subject tiny@norm), whose dumps the plan sizes too."""
    work = tmp_path_factory.mktemp("plan")
    write_tiny_study(work, _model(work / "model", ["BertModel"]))
    config = yaml.safe_load((work / "tiny.yaml").read_text())
    config["attention"]["signals"] = ["attention", "norm"]
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    return work


def _rows(path: Path, example_ids: list[int], **metadata) -> None:
    """A table with only the column the plan reads (example_id) and the metadata it checks."""
    write_table(pa.table({"example_id": pa.array(example_ids, pa.int64())}), path, metadata or None)


def _study(tiny: Path, *cli: str):
    return build_study(resolve_config([str(tiny / "tiny.yaml")], [f"results={tiny / 'results'}", *cli]))


def test_the_config_is_resolved_as_the_workflow_resolves_it(tiny):
    assert resolve_config([], []) == resolve()
    assert resolve_config([str(tiny / "tiny.yaml")], ["results=R"]) == resolve(tiny / "tiny.yaml", cli=("results=R",))


def test_a_dump_has_layers_x_heads_x_the_sum_of_t_squared_of_its_token_table(tiny):
    study = _study(tiny)
    results = Path(study.results)
    _rows(results / "data" / "ewt" / "dev.parquet", [0, 1])
    # Two examples of T=3 and T=5 tokens, made under today's settings (max_length 32, no cap, gold words).
    _rows(results / "tokens" / "tiny" / "ewt" / "dev.parquet", [0, 0, 0, 1, 1, 1, 1, 1],
          max_length=32, max_examples=None, input_protocol="words")
    shape = model_shape(study, "tiny", network=False)
    assert (shape.layers_heads, shape.source, shape.mlm_head) == ((2, 2), "its config.json", False)
    dump = size_dump(study, ("tiny", "pretrained", "ewt", "dev"), shape.layers_heads)
    assert (dump.examples, dump.examples_basis) == (2, "data table")
    assert (dump.values, dump.values_basis) == (2 * 2 * (9 + 25), "token table") == (136, "token table")
    assert dump.values_max == 2 * 2 * 2 * 32 ** 2

    # A token table made with another max_length says nothing about the next one: the bound only
    # (no measured mean either: those were measured at max_length 128).
    _rows(results / "tokens" / "tiny" / "ewt" / "dev.parquet", [0, 0, 0], max_length=64, max_examples=None,
          input_protocol="words")
    stale = size_dump(study, ("tiny", "pretrained", "ewt", "dev"), shape.layers_heads)
    assert (stale.values, stale.values_basis, stale.values_max) == (None, "bound only", dump.values_max)


def test_caps_apply_to_dumps_and_fine_tuning(tiny):
    study = _study(tiny, "attention={max_examples: {cola: 4}}",
                   "finetune={max_train_examples: 5, epochs: 2, save_steps: [1]}")
    results = Path(study.results)
    _rows(results / "data" / "cola" / "train.parquet", list(range(18)))
    _rows(results / "data" / "cola" / "dev.parquet", list(range(6)))
    dev = size_dump(study, ("tiny", "pretrained", "cola", "dev"), (2, 2))
    assert dev.examples == 4 and dev.examples_basis.startswith("attention.max_examples (of 6")
    wiki = size_dump(study, ("tiny", "pretrained", "wiki", "segments"), (2, 2))
    assert (wiki.examples, wiki.examples_basis) == (4, "data.wiki.n_segments")

    shapes = {"tiny": model_shape(study, "tiny", network=False)}
    passes = forward_passes(study, [dev, wiki], shapes)
    # One run (seed 42): min(18, 5) examples x 2 epochs; dev (6) scored at step 1 and at the end.
    assert (passes["extraction"], passes["finetune_train"], passes["finetune_dev"]) == (8, 10, 12)
    assert passes["gradient"] == 0  # the tiny model has no masked-LM head, the random control never has one
    shapes["tiny"] = replace(shapes["tiny"], architectures=("BertForMaskedLM",))
    assert forward_passes(study, [dev, wiki], shapes)["gradient"] == 4  # the 4 wiki segments, pretrained only
    # Head disabling of the CoLA run: its 6 dev examples (ablation.max_examples 8 in the tiny study) scored
    # once plainly and once per head (2 x 2) in mode zero.
    assert study.ablation.disabling_runs == [("tiny", "cola", 42)] and study.config["ablation"]["max_examples"] == 8
    assert passes["ablation_disabling"] == 6 * (1 + 2 * 2)
    # The found heads: at most a found and a random head per relation and for coreference, each over the
    # score split (the probe) and the CoLA dev examples, plus one plain pass of each.
    heads = 2 * (len(study.config["syntax"]["relations"]) + 1)
    _rows(results / "data" / "ewt" / "dev.parquet", list(range(3)))
    found = forward_passes(study, [dev, wiki], shapes)["ablation_found_heads_at_most"]
    assert split_size(study, "ewt", "dev")[0] == 3 and found == (3 + 6) * (1 + heads)
    # The one model holds every count (the time estimate multiplies each model's counts by its rates).
    per_model = forward_passes(study, [dev, wiki], shapes)["per_model"]
    assert list(per_model) == ["tiny"] and per_model["tiny"]["ablation_found_heads_at_most"] == found


@pytest.fixture(scope="module")
def plan(tiny) -> dict:
    """The plan of the tiny study, from the real dry runs (every job; the results folder exists: those to run)."""
    results = tiny / "planned"
    _rows(results / "data" / "ewt" / "dev.parquet", [0, 1])
    _rows(results / "tokens" / "tiny" / "ewt" / "dev.parquet", [0, 0, 0, 1, 1, 1, 1, 1],
          max_length=32, max_examples=None, input_protocol="words")
    with pytest.MonkeyPatch.context() as patch:
        patch.chdir(tiny)  # where Snakemake keeps its .snakemake folder
        # Rates given (as --rate gives them): the estimate is known by construction, and nothing is timed. The
        # storage rate is far above any disk's, so that the tiny dumps' storage outweighs some forward passes.
        return make_plan([str(tiny / "tiny.yaml")], [f"results={results}"], network=False,
                         rates=Rates(forward=0.5, train=2.0, how="given with --rate", storage=2e6))


def test_jobs_are_counted_per_stage_of_the_rule_file_that_defines_them(plan):
    assert list(plan["jobs"]) == [*STAGES, "all"]  # no job of a rule the rule files do not define
    assert plan["jobs"]["all"] == 1 and all(plan["jobs"][s] > 0 for s in ("data", "models", "attention", "syntax"))
    assert sum(plan["jobs_to_run"].values()) <= sum(plan["jobs"].values())
    assert stage_of("finetune_cola", rule_stages()) == "finetune"  # rules named finetune_{task}


def test_the_plan_sizes_every_dump_of_the_dag(plan):
    dumps = {(d["model"], d["checkpoint"], d["corpus"], d["split"]): d for d in plan["dumps"]}
    # attention.corpora x checkpoints, the coreference windows, and cola dev for the fine-tuning effects.
    # One set per signal of the tiny study (attention, and norm as the subject tiny@norm).
    expected = {(subject, c, corpus, split) for subject in ("tiny", "tiny@norm") for c in ("pretrained", "random")
                for corpus, split in (("wiki", "segments"), ("ewt", "train"), ("ewt", "dev"), ("gum", "dev"),
                                      ("gumwin", "dev"))}
    expected |= {(subject, c, "cola", "dev") for subject in ("tiny", "tiny@norm")
                 for c in ("pretrained", "cola.seed42.final")}
    # The fine-tuned checkpoint's roles (roles.finetuned): its attention weights on the surface corpus, EWT's score
    # split and the coreference windows.
    expected |= {("tiny", "cola.seed42.final", corpus, split)
                 for corpus, split in (("wiki", "segments"), ("ewt", "dev"), ("gumwin", "dev"))}
    assert set(dumps) == expected
    # A signal's dump has the model's token table, so the same size.
    assert dumps["tiny", "random", "ewt", "dev"]["values"] == 136
    assert dumps["tiny@norm", "random", "ewt", "dev"]["values"] == 136
    assert plan["sized"]["bytes"] == pytest.approx(plan["sized"]["values"] * BYTES_PER_VALUE["lz4"])
    assert plan["sized"]["values"] == 5 * 136  # only ewt dev has a token table; the rest is bound only
    assert plan["at_most"]["values"] >= plan["sized"]["values"] + plan["bound_only"]["values"]
    assert plan["forward_passes"]["extraction"] == sum(d["examples"] or 0 for d in plan["dumps"])


def test_the_time_is_each_count_times_its_rate(plan):
    passes, time = plan["forward_passes"], plan["time"]
    assert passes["per_model"]["tiny"] == {count: passes[count] for count in PASS_COUNTS}
    assert time["rates"] == {"tiny": {"forward": 0.5, "train": 2.0, "how": "given with --rate"}}
    assert time["storage"] == {"seconds_per_gb": 2e6, "how": "given with --rate"}
    # Extraction, per dump: the larger of its examples x 0.5 s and its bytes (the disk lines': sized, else
    # at their bound) x 2e6 s per GB; the writer thread overlaps the model.
    per_value = plan["bytes_per_value"]
    costs = [(d["examples"] * 0.5, per_value * (d["values"] or d["values_max"] or 0) / 1e9 * 2e6)
             for d in plan["dumps"] if d["examples"] is not None]
    assert 0 < sum(f < s for f, s in costs) < len(costs)  # storage bounds some dumps, the forward passes others
    assert time["extraction"]["forward_s"] == passes["extraction"] * 0.5
    assert time["seconds"] == pytest.approx({
        "fine-tuning": passes["finetune_train"] * 2.0 + passes["finetune_dev"] * 0.5,
        "extraction": sum(max(f, s) for f, s in costs),
        "separator gradient": passes["gradient"] * 2.0,
        "head disabling": passes["ablation_disabling"] * 0.5,
        "found heads (at most)": passes["ablation_found_heads_at_most"] * 0.5})
    assert time["bound_by"] == max(time["seconds"], key=time["seconds"].get)
    assert time["total_s"] == sum(time["seconds"].values()) > 0 and time["not_counted"] == [] and time["given"]


def test_the_plan_prints_as_text_and_as_json(plan):
    text = format_plan(plan, per_dump=True)
    assert f"total{sum(plan['jobs'].values()):>20}" in text and "tiny random ewt/dev" in text
    assert json.loads(json.dumps(plan)) == plan
    # Each line says what it counts and what it rests on.
    assert "Snakemake jobs per stage: every job of the study (a dry run with --forceall)" in text
    assert "'to run': those a plain dry run still finds to do in" in text
    extracted = plan["forward_passes"]["extraction"]
    assert f"  extraction         {extracted:>11,}  forward passes with attention maps" in text
    assert "5 exact, from their token tables in the results folder" in text  # ewt dev of tiny and tiny@norm
    # What roles.finetuned adds, from a second dry run without it: the three dumps above and their analyses.
    roles = plan["roles"]
    assert roles["checkpoints"] == 1 and roles["dumps"] == 3 and roles["jobs"] > 3
    assert roles["bytes"] > 0 and roles["extraction_examples"] > 0 and roles["seconds"] > 0
    assert (f"Head roles of 1 fine-tuned checkpoint(s) (roles.finetuned, docs/roles.md): {roles['jobs']} of the "
            "jobs above, 3 of the dumps") in text
    assert "tiny: 0.5 s per example forward (with maps), 2 s per training example\n    given with --rate" in text
    seconds = plan["time"]["seconds"]
    assert f"Estimated time from the rates given (--rate): {duration(plan['time']['total_s'])}, one job at a " in text
    assert f"  extraction            {duration(seconds['extraction']):>11}  per dump the larger of " in text
    bound = plan["time"]["bound_by"]
    assert f"  Bound by {bound}: {duration(seconds[bound])} of {duration(plan['time']['total_s'])} (" in text
    assert "Left out: the jobs that run no study model" in text
    no_time = format_plan({**plan, "time": None})
    assert "Estimated time: not estimated (--no-timing" in no_time and "Estimated time on" not in no_time
