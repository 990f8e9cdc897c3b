"""Which config files a run reads, in order, and the one combination of them Snakemake would drop silently.

Snakemake merges ``config.yaml`` (the Snakefile's ``configfile:``), then the ``--configfile`` files in order, then
the ``--config`` values (docs/configuration.md). A profile's ``configfile:`` is only a default for the command
line's ``--configfile``: ``--profile profiles/quickstart --configfile extra.yaml`` reads ``config.yaml`` and
``extra.yaml`` alone, and the profile's study (``profiles/quickstart/study.yaml``) is gone without a word. Such a
run is refused before any job (:func:`check_profile_configfiles`), with the command line that keeps both; every run
says on its first lines which files it read (:func:`sources_line`), and the report says it too.
"""

from __future__ import annotations

import os
from pathlib import Path

import yaml

from ..core.errors import ConfigError


def command_line(argv: list[str]):
    """The options the command line itself gives (no profile's defaults): Snakemake's own parser, not re-done."""
    from snakemake.cli import get_argument_parser

    args, _ = get_argument_parser().parse_known_args(argv)
    return args


def profile_configfiles(profile: str, base: Path) -> list[Path]:
    """The config files a profile names (``configfile:`` or ``configfiles:``), each read from the profile's folder
    where it is there, as Snakemake reads a profile's single values; [] for a profile that names none. ``base``:
    the folder the command line's relative paths start from."""
    from snakemake.cli import get_profile_dir

    found = get_profile_dir(str(base / profile) if (base / profile).exists() else profile)
    if found is None:
        return []
    folder, settings_file = found
    try:
        settings = yaml.safe_load(Path(settings_file).read_text(encoding="utf-8")) or {}
    except (OSError, yaml.YAMLError):
        return []  # Snakemake itself says what is wrong with the profile
    named = settings.get("configfile", settings.get("configfiles")) if isinstance(settings, dict) else None
    if named is None:
        return []
    names = named if isinstance(named, list) else [named]
    return [Path(folder) / str(n) if (Path(folder) / str(n)).exists() else base / str(n) for n in names]


def launch_folder(given: list[str], absolute: list[Path]) -> Path:
    """The folder snakemake was started in (``--directory`` has moved the process since): Snakemake made the command
    line's config files absolute there, before it moved."""
    for name, path in zip(given, absolute, strict=False):
        if not os.path.isabs(name) and str(path).endswith(name):
            return Path(str(path)[: -len(name)] or "/")
    return Path.cwd()


def check_profile_configfiles(argv: list[str], overwrite_configfiles) -> None:
    """Refuse a command line whose ``--configfile`` would replace a profile's study config, naming both and the
    command line that reads both (the profile's first, as a run of the profile alone reads it).
    ``overwrite_configfiles``: the --configfile files Snakemake took (``workflow.overwrite_configfiles``)."""
    named = {a.split("=", 1)[0] for a in argv}
    profile = "--profile" in named or os.environ.get("SNAKEMAKE_PROFILE")
    if not profile or not {"--configfile", "--configfiles"} & named:
        return  # no profile or no --configfile: nothing to drop (and no parser to build, 0.1 s a run)
    args = command_line(argv)
    given = [str(f) for f in (args.configfile or [])]
    if not given or not args.profile or args.profile == ["none"]:
        return
    base = launch_folder(given, list(overwrite_configfiles or ()))
    read = {os.path.normpath(base / f) for f in given}
    for profile in args.profile:
        dropped = [f for f in profile_configfiles(profile, base) if os.path.normpath(base / f) not in read]
        if not dropped:
            continue
        shown = [os.path.relpath(os.path.normpath(base / f), base) for f in dropped]
        raise ConfigError(
            f"--configfile {' '.join(given)} replaces the study config of --profile {profile} "
            f"({', '.join(shown)}): Snakemake reads a profile's configfile only when the command line names none, "
            f"so this run would build another study than the profile's. Name both, the profile's first: "
            f"--profile {profile} --configfile {' '.join([*shown, *given])}")


def files_read(snakefile_configfile: str | os.PathLike[str], overwrite_configfiles) -> list[str]:
    """The config files a run reads, in the order Snakemake merges them, as paths a user can type, each once: a file
    read twice (``--configfile config.yaml``, which the Snakefile reads anyway) is listed where it was read last,
    the read whose values stand."""
    files = [snakefile_configfile, *(overwrite_configfiles or ())]
    last = {os.path.realpath(f): position for position, f in enumerate(files)}
    return [_shown(f) for position, f in enumerate(files) if last[os.path.realpath(f)] == position]


def sources_line(files: list[str], config_keys) -> str:
    """The first line of a run: the config files it read, in order, and the keys ``--config`` set on top."""
    line = f"Config read, in this order: {', '.join(files)}"
    keys = sorted(config_keys or ())
    return line + (f"; then --config {', '.join(keys)}" if keys else "")


def _shown(path: str | os.PathLike[str]) -> str:
    """A path relative to the working directory where it is under it, else as it is."""
    resolved = Path(path).resolve()
    try:
        return str(resolved.relative_to(Path.cwd().resolve()))
    except ValueError:
        return str(path)
