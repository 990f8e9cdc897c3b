"""Pretraining checkpoints as an axis, through the real DAG and the real hub clients: a tiny GPT-2 served at two
revisions by the hub stand-in on 127.0.0.1 (tests/support/hub_server.py), ``step0`` with random weights and
``step100`` with a hand-set induction head (tests/support/induction_gpt2.py). The study names the model once with
``revisions: [step0, step100]``; each revision is downloaded at its own commit, analysed as its own model, and the
report's head development shows the induction head appear between the two steps."""

from __future__ import annotations

import json
import os

import pandas as pd
import pytest
import yaml

from support.hub_server import HubRepo, folder_files, serve_hub
from support.induction_gpt2 import save_induction_gpt2
from support.tiny_models import save_random_like
from support.workflow_runs import config_of, copy_study, snakemake

pytestmark = pytest.mark.e2e
HUB_ID = "atlas-test/tiny-gpt2"
TARGETS = ["results/tables/head_development.csv", "results/figures/development/tiny.png"]


@pytest.fixture(scope="module")
def built(tmp_path_factory, tiny_roberta, families_study):
    """A copy of the decoder and families study (its data tables reused) whose one model is the hub's GPT-2 at its two
    revisions, run to the head development."""
    trained = save_induction_gpt2(tmp_path_factory.mktemp("step100"), tiny_roberta)
    untrained = save_random_like(tmp_path_factory.mktemp("step0"), trained)
    repo = HubRepo(HUB_ID)
    repo.commit(folder_files(untrained), branch="step0")
    repo.commit(folder_files(trained), branch="step100")
    work = copy_study(families_study, tmp_path_factory.mktemp("revision-study") / "study")
    config = config_of(work)
    config["offline"] = False  # the data from the mirror, the model from the hub
    config["models"] = {"tiny": {"hub": HUB_ID, "revisions": ["step0", "step100"], "max_length": 32}}
    config["study"]["models"] = ["tiny"]
    config["attention"]["signals"] = ["attention"]
    # The head development reads the pretrained checkpoint of each revision (step0 is the random-weights one): the
    # random-init checkpoints' dumps would add 20 jobs that no table of these tests reads.
    config["attention"]["checkpoints"] = ["pretrained"]
    # surface.diagnostics draws token ids below the induction model's TOKEN_CODES already (the copied study's)
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    with serve_hub([repo]) as hub:
        env.update(HF_ENDPOINT=hub.url, HF_HOME=str(work / "hf"), HF_HUB_DISABLE_TELEMETRY="1",
                   TOKENIZERS_PARALLELISM="false")
        result = snakemake(work, *TARGETS, env=env, timeout=1200)
        assert result.returncode == 0, result.stderr[-6000:]
        rerun = snakemake(work, *TARGETS, "--dry-run", env=env, timeout=600)
    return work, rerun


def test_each_revision_is_its_own_model(built):
    work, _ = built
    for revision in ("step0", "step100"):
        card = json.loads((work / "results" / "models" / f"tiny-{revision}" / "model.json").read_text())
        assert (card["name"], card["source"], card["revision"]) == (f"tiny-{revision}", "hub", revision)
    diagnostics = pd.read_csv(work / "results" / "tables" / "head_diagnostics.csv")
    assert set(diagnostics["model"]) == {"tiny-step0", "tiny-step100"}


def test_the_head_development_shows_the_induction_head_appear(built):
    work, _ = built
    frame = pd.read_csv(work / TARGETS[0])
    assert set(frame["series"]) == {"tiny"} and set(frame["step"]) == {0, 100}
    induction = frame[frame["measure"] == "induction"].set_index(["step", "layer"])["value"]
    assert induction.loc[(100, 1)] > 0.8        # the hand-set induction head, layer 2
    assert induction.loc[(0, 1)] < 0.3           # random weights: none
    assert set(frame["measure"]) == {"sink_rate", "induction", "dependency_accuracy"}
    assert (work / TARGETS[1]).stat().st_size > 10_000


def test_each_revision_has_its_icl_score_for_the_figure(built):
    work, _ = built
    icl = pd.read_csv(work / "results" / "tables" / "icl_score.csv").set_index("revision")
    assert set(icl.index) == {"step0", "step100"} and set(icl["series"]) == {"tiny"}
    # Olsson et al.'s tokens 50 and 500 scaled to max_length 32; the LM head is the tied embedding
    assert set(icl["early_position"]) == {2} and set(icl["late_position"]) == {16}
    assert (icl["examples"] >= 2).all() and icl["icl_score"].notna().all() and icl["note"].isna().all()


def test_a_second_run_does_nothing(built):
    _, rerun = built
    assert rerun.returncode == 0, rerun.stderr[-3000:]
    assert "Nothing to be done" in rerun.stdout + rerun.stderr
