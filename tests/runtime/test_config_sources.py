"""Which config files a run reads (workflow_scripts/runtime/config_sources.py), without a run."""

from __future__ import annotations

from pathlib import Path

import pytest

from support.paths import REPO
from workflow_scripts.core.errors import ConfigError
from workflow_scripts.runtime.config_sources import check_profile_configfiles, files_read, launch_folder, sources_line


def test_the_launch_folder_is_where_snakemake_made_the_relative_config_files_absolute(tmp_path):
    assert launch_folder(["extra.yaml"], [tmp_path / "extra.yaml"]) == Path(f"{tmp_path}/")
    assert launch_folder(["a/b.yaml"], [tmp_path / "a/b.yaml"]) == Path(f"{tmp_path}/")


@pytest.mark.parametrize("argv", [
    ["--profile", "profiles/slurm", "--configfile", "mine.yaml"],  # the profile names no study config
    ["--profile", "profiles/quickstart"],  # the profile's own study config, nothing on the command line
    ["--profile", "profiles/quickstart", "--configfile", "profiles/quickstart/study.yaml", "mine.yaml"],
    ["--configfile", "mine.yaml"],  # no profile
])
def test_a_command_line_that_keeps_every_study_config_passes(argv, monkeypatch):
    monkeypatch.chdir(REPO)
    given = argv[argv.index("--configfile") + 1:] if "--configfile" in argv else []
    check_profile_configfiles(argv, [REPO / f for f in given])


def test_a_configfile_over_a_profiles_study_config_is_refused_from_any_folder(tmp_path, monkeypatch):
    # --directory has moved the process before the Snakefile runs: the paths start from the launch folder.
    monkeypatch.chdir(tmp_path)
    with pytest.raises(ConfigError, match=r"^--configfile mine.yaml replaces the study config of --profile "
                       r"profiles/decoders \(profiles/decoders/study.yaml\): .* Name both, the profile's first: "
                       r"--profile profiles/decoders --configfile profiles/decoders/study.yaml mine.yaml$"):
        check_profile_configfiles(["--profile", "profiles/decoders", "--configfile", "mine.yaml"],
                                  [REPO / "mine.yaml"])


def test_the_first_line_lists_the_files_in_order_then_the_config_keys(tmp_path, monkeypatch):
    monkeypatch.chdir(tmp_path)
    files = files_read(REPO / "config.yaml", [tmp_path / "study.yaml", tmp_path / "extra.yaml"])
    assert files == [str(REPO / "config.yaml"), "study.yaml", "extra.yaml"]
    assert sources_line(files, {"results": "r", "mirror": "m"}) == (
        f"Config read, in this order: {REPO / 'config.yaml'}, study.yaml, extra.yaml; then --config mirror, results")
    assert sources_line(files, {}).endswith("extra.yaml")


def test_a_file_read_twice_is_listed_once_where_its_values_stand(tmp_path, monkeypatch):
    # `--configfile config.yaml` by hand: the Snakefile reads config.yaml, then the command line reads it again.
    monkeypatch.chdir(REPO)
    assert files_read(REPO / "config.yaml", [REPO / "config.yaml"]) == ["config.yaml"]
    # Read first, then again after another file: its second read is the one whose values stand.
    assert files_read(REPO / "config.yaml", [tmp_path / "a.yaml", REPO / "config.yaml"]) == [
        str(tmp_path / "a.yaml"), "config.yaml"]
    assert files_read(REPO / "config.yaml", [tmp_path / "a.yaml", tmp_path / "b.yaml", tmp_path / "a.yaml"]) == [
        "config.yaml", str(tmp_path / "b.yaml"), str(tmp_path / "a.yaml")]
