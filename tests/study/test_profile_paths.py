"""Where snakemake is run from: the profiles work from any folder, and a run started in a folder inside the
repository stops with one line (rules/common.smk) instead of making a second results/ there.

Snakemake 9 reads a profile's single path value from the profile's folder when the file is there
(snakemake/profiles.py, ProfileConfigFileParser); the paths of a list are read from the working directory.
So a profile names its study config as one path relative to its own folder (profiles/offline: study.yaml).
"""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
from snakemake.profiles import ProfileConfigFileParser

from support.paths import REPO

PROFILES = sorted(p.name for p in (REPO / "profiles").iterdir() if (p / "config.yaml").is_file())
SUBFOLDER = REPO / "docs"  # any folder inside the repository; the runs below write nothing there


@pytest.mark.parametrize("profile", PROFILES)
def test_a_profiles_configfile_is_found_from_any_folder(profile, monkeypatch, tmp_path):
    """Parsed as Snakemake parses it, with the profile given relative to another folder (--profile ../profiles/X)."""
    for cwd in (SUBFOLDER, tmp_path):
        monkeypatch.chdir(cwd)
        given = Path(os.path.relpath(REPO / "profiles" / profile / "config.yaml", cwd))
        with open(given, encoding="utf-8") as stream:
            files = ProfileConfigFileParser().parse(stream).get("configfile") or []
        for path in [files] if isinstance(files, str) else files:
            assert Path(path).is_file(), (
                f"profiles/{profile}: configfile {path} is not found from {cwd}; name the study config as one path "
                "relative to the profile's folder (configfile: study.yaml), not a list")


def _snakemake(cwd: Path, *args: str) -> subprocess.CompletedProcess:
    # A dry run: the config checks run, no job; HF_HUB_OFFLINE keeps the hub's libraries from asking the network.
    return subprocess.run([sys.executable, "-m", "snakemake", "-n", "--cores", "1", *args], cwd=cwd,
                          capture_output=True, text=True, timeout=300, check=False,
                          env={**os.environ, "HF_HUB_OFFLINE": "1"})


def _left_untouched(folder: Path) -> None:
    assert not (folder / "results").exists() and not (folder / ".snakemake").exists()


def test_a_run_in_a_subfolder_stops_with_one_line():
    result = _snakemake(SUBFOLDER, "-s", "../Snakefile", "--profile", "../profiles/offline")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert (f"snakemake runs in {SUBFOLDER}, a folder inside the repository: the study's results/ and .snakemake/ "
            f"would be made there; run it from the repository root (cd {REPO}), or name the working directory with "
            "--directory DIR") in output
    assert "Traceback" not in output and "FileNotFoundError" not in output, output[-3000:]
    _left_untouched(SUBFOLDER)


def test_a_profile_without_a_snakefile_in_the_folder():
    """Without -s, Snakemake itself says in one line that the folder has no Snakefile."""
    result = _snakemake(SUBFOLDER, "--profile", "../profiles/offline")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    assert "No Snakefile found" in output and "Traceback" not in output, output[-3000:]
    _left_untouched(SUBFOLDER)


def test_a_working_directory_named_with_directory_is_kept(tmp_path):
    """--directory is a deliberate choice (the tests' own runs use it): the profile's study config is read (its
    offline: true asks for a mirror) from a subfolder too."""
    result = _snakemake(SUBFOLDER, "-s", "../Snakefile", "--profile", "../profiles/offline", "--directory",
                        str(tmp_path))
    output = result.stdout + result.stderr
    assert "a folder inside the repository" not in output
    assert "'offline' is true but config key 'mirror' is not set" in output, output[-3000:]
    _left_untouched(SUBFOLDER)


def test_a_configfile_that_would_replace_the_profiles_study_config_is_refused_with_both_named(tmp_path):
    """Snakemake reads a profile's configfile only when the command line names none: the profile's study would be
    gone without a word, so the run is refused before any check of the config, with the command line that keeps
    both (docs/configuration.md)."""
    (tmp_path / "extra.yaml").write_text("attention: {num_shards: 3}\n")
    result = _snakemake(tmp_path, "-s", str(REPO / "Snakefile"), "--profile", str(REPO / "profiles" / "offline"),
                        "--configfile", "extra.yaml")
    output = result.stdout + result.stderr
    assert result.returncode != 0
    study = os.path.relpath(REPO / "profiles" / "offline" / "study.yaml", tmp_path)
    assert (f"--configfile extra.yaml replaces the study config of --profile {REPO / 'profiles' / 'offline'} "
            f"({study}): ") in output, output[-3000:]
    assert f"Name both, the profile's first: --profile {REPO / 'profiles' / 'offline'} --configfile {study} " \
           "extra.yaml" in output
    assert "Traceback" not in output and output.count("replaces the study config") == 1, output[-3000:]


def test_a_run_says_first_which_config_files_it_read_in_order(tmp_path):
    """With both named, the profile's first: its study config counts (offline: true asks for a mirror), and the
    run's first line lists config.yaml, the profile's study config and the extra file, then the --config keys."""
    (tmp_path / "extra.yaml").write_text("attention: {num_shards: 3}\n")
    study = REPO / "profiles" / "offline" / "study.yaml"
    result = _snakemake(tmp_path, "-s", str(REPO / "Snakefile"), "--profile", str(REPO / "profiles" / "offline"),
                        "--configfile", str(study), "extra.yaml", "--config", "results=elsewhere")
    output = result.stdout + result.stderr
    assert (f"Config read, in this order: {REPO / 'config.yaml'}, {study}, extra.yaml; then --config results"
            in output), output[-3000:]
    assert "'offline' is true but config key 'mirror' is not set" in output, output[-3000:]
    assert output.index("Config read") < output.index("'offline' is true")
