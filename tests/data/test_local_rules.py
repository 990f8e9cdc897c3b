"""Which rules run on the node Snakemake runs on (under a cluster profile the login node, where the internet is):
online, every rule that may download; offline, none. Read from the workflow as Snakemake parses it for a tiny
study (its local rules), in a subprocess as `snakemake` itself would be."""

from __future__ import annotations

import json
import os
import subprocess
import sys

import pytest
import yaml

from support.config_checks import tiny_mirror
from support.paths import REPO

DATA_RULES = {"glue_table", "wic_table", "task_table", "treebank_table", "coreference_mentions", "wiki_segments",
              "glove_vectors"}
MODEL_RULES = {"model_card", "pretrained_checkpoint", "random_checkpoint"}
PROBE = """
import json, sys
from pathlib import Path
from snakemake.api import SnakemakeApi
from snakemake.settings.types import ConfigSettings, OutputSettings, ResourceSettings

snakefile, workdir, configfile = sys.argv[1:]
with SnakemakeApi(OutputSettings()) as api:
    workflow = api.workflow(resource_settings=ResourceSettings(cores=1), snakefile=Path(snakefile),
                            workdir=Path(workdir), config_settings=ConfigSettings(configfiles=[Path(configfile)]))
    print("LOCALRULES " + json.dumps(sorted(workflow._workflow._localrules)))
"""


def local_rules(tmp_path, tiny_bert, *, offline: bool, annotation: dict) -> set[str]:
    study = {"mirror": str(tiny_mirror(tmp_path / "mirror")), "offline": offline,
             "study": {"models": ["tiny"], "tasks": ["cola"], "treebanks": ["ewt"], "wiki": False, "glove": False},
             "models": {"tiny": {"path": str(tiny_bert), "max_length": 32}}, "annotation": annotation}
    (tmp_path / "tiny.yaml").write_text(yaml.safe_dump(study))
    env = {**os.environ, "HF_HUB_OFFLINE": "1"}
    result = subprocess.run([sys.executable, "-c", PROBE, str(REPO / "Snakefile"), str(tmp_path),
                             str(tmp_path / "tiny.yaml")], cwd=tmp_path, capture_output=True, text=True, env=env,
                            timeout=300)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    line = next(line for line in result.stdout.splitlines() if line.startswith("LOCALRULES "))
    return set(json.loads(line.removeprefix("LOCALRULES ")))


@pytest.mark.parametrize("offline", [False, True])
def test_the_rules_that_may_download_are_local_rules_unless_offline(tmp_path, tiny_bert, offline):
    found = local_rules(tmp_path, tiny_bert, offline=offline, annotation={"annotator": "spacy"})
    assert found == (set() if offline else DATA_RULES | MODEL_RULES)


def test_annotation_is_a_local_rule_when_it_would_download_stanza_models(tmp_path, tiny_bert):
    stanza_dir = tmp_path / "stanza"  # holds no models: online, the annotation job downloads them
    stanza = {"annotator": "stanza", "stanza_dir": str(stanza_dir)}
    assert local_rules(tmp_path, tiny_bert, offline=False, annotation=stanza) == DATA_RULES | MODEL_RULES | {
        "annotation"}
    (stanza_dir / "en").mkdir(parents=True)  # the models are there (e.g. after the prefetch): an ordinary job
    assert "annotation" not in local_rules(tmp_path / "again", tiny_bert, offline=False, annotation=stanza)
