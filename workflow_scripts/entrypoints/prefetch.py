"""The prefetch: on a machine with internet (a cluster's login node), download every data source and model of
a study into a mirror folder and a model folder, and write the config that runs the study offline from them.

    python -m workflow_scripts.entrypoints.prefetch --configfile my-study.yaml \\
        --mirror /shared/atlas/mirror --models /shared/atlas/models --write-config offline.yaml
    snakemake --profile profiles/slurm --workflow-profile none --configfile my-study.yaml offline.yaml

The config is resolved as the workflow resolves it (config.yaml, then each --configfile, then --config; the
schema's defaults; the same checks), with 'offline' read as false: the prefetch fetches every split the study
would download. It is an entry point like the rules' (it may read the study package), run by hand instead of by
Snakemake. The data side is workflow_scripts/data/prefetch.py, the models' workflow_scripts/models/hub.py.
Progress goes to stderr, the summary to stdout; the exit status is 1 when anything could not be fetched (the
offline config is then not written).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys
from collections.abc import Callable
from datetime import UTC, datetime
from pathlib import Path
from typing import Any

import yaml

from ..core.errors import AtlasError
from ..core.io import atomic_path
from ..models.hub import PREFETCH_RECORD, read_model_record

log = logging.getLogger("prefetch")


def resolve_config(configfiles: list[str], overrides: list[str]) -> dict[str, Any]:
    """The study config as rules/common.smk resolves it, with 'offline' false (see the module docstring)."""
    from ..study.checks import check_semantics
    from ..study.checks import resolve_config as resolve

    config = resolve(configfiles, overrides, semantics=False)
    if config["offline"] or config["mirror"]:
        log.info("the study's 'offline' and 'mirror' are ignored: the prefetch fetches every split into --mirror")
    config.update(offline=False, mirror=None)
    check_semantics(config)
    return config


def _data_steps(config: dict[str, Any], mirror: Any) -> list[tuple[str, Callable[[], Any]]]:
    """(what, fetch) for every source of every split the study builds, in the study's order."""
    from ..data import prefetch as fetch
    from ..data.corpora import Corpora
    from ..study.checks import selected_corpora

    corpora, data = Corpora(config), config["data"]
    steps: list[tuple[str, Callable[[], Any]]] = []
    wic_splits: list[str] = []
    for corpus in selected_corpora(config):
        kind = corpora.kind(corpus)
        for split in corpora.splits(corpus):
            if corpora.is_local(corpus):
                steps.append((f"{corpus}/{split}", lambda c=corpus: ("skipped", "a local entry: read from its own "
                                                                                 "files, nothing to fetch")))
            elif kind == "treebank":
                steps.append((f"{corpus}/{split}", lambda e=corpora.treebanks[corpus], s=split: fetch.fetch_treebank(
                    mirror, e, s, ud_release=data["ud_release"], ud_url=data["ud_url"], ud_api_url=data["ud_api_url"])))
            elif kind == "task" and corpora.tasks[corpus].reader == "glue":
                spec = corpora.tasks[corpus]
                steps.append((f"{corpus}/{split}", lambda t=spec.source["task"], s=split, c=corpus: fetch.fetch_glue(
                    mirror, t, s, c)))
            elif kind == "task" and corpora.tasks[corpus].reader == "hub":
                steps.append((f"{corpus}/{split}", lambda t=corpora.tasks[corpus], s=split: fetch.fetch_hub_task(
                    mirror, t, s)))
            elif kind == "task":  # WiC: one archive for all its splits (and every entry of it)
                wic_splits += [split] if split not in wic_splits else []
    if wic_splits:
        steps.append((f"wic/{','.join(wic_splits)}", lambda: fetch.fetch_wic(
            mirror, wic_splits, url=data["wic"]["url"], sha256=data["wic"]["sha256"])))
    if config["study"]["wiki"]:
        steps.append(("wiki/segments", lambda: fetch.fetch_wiki(mirror, data["wiki"]["hub"])))
    if config["study"]["glove"]:
        steps.append(("glove/vectors", lambda: fetch.fetch_glove(mirror, url=data["glove"]["url"],
                                                                 sha256=data["glove"]["sha256"])))
    return steps


def _folder_digests(folder: Path) -> dict[str, str]:
    from ..data.fetch import file_digests

    return {str(p.relative_to(folder)): file_digests(p)["sha256"] for p in sorted(folder.rglob("*"))
            if p.is_file() and ".cache" not in p.relative_to(folder).parts}


def fetch_model(name: str, entry: dict[str, Any], models: Path, record: dict[str, Any]) -> tuple[str, str]:
    """Model ``name`` into ``models/name``: a hub model downloaded, a local or package folder copied; a folder
    the prefetch wrote whose files still match its record is kept as it is."""
    from ..models.hub import copy_model_folder, fetch_hub_model
    from ..models.locations import model_location

    target = models / name
    source = f"hub {entry['hub']}" + (f" @ {entry['revision']}" if entry.get("revision") else "") \
        if entry.get("hub") else model_location(name, entry)
    known = record.get(name)
    if known and known["source"] == source and target.is_dir() and _folder_digests(target) == known["files"]:
        return "present", f"{target}: verified, sha256 of every file as the prefetch recorded"
    if entry.get("hub"):
        fetch_hub_model(entry["hub"], entry.get("revision"), local_dir=target)
        how = f"downloaded from {source}"
    else:
        try:
            copy_model_folder(Path(source), target)
        except OSError as exc:
            raise AtlasError(f"model {name!r}: copying {source} to {target} failed ({type(exc).__name__}: {exc})\n"
                             f"fix: check that {source} is a readable model folder (config key 'models.{name}') and "
                             f"that {target.parent} is writable with room for it (--models)") from exc
        how = f"copied from {source}"
    if not (target / "config.json").is_file():
        raise AtlasError(f"model {name!r}: {target} holds no config.json after the fetch")
    record[name] = {"source": source, "files": _folder_digests(target),
                    "fetched": datetime.now(UTC).isoformat(timespec="seconds")}
    return "fetched", f"{target} ({how})"


def fetch_stanza(config: dict[str, Any]) -> list[tuple[str, str, str]]:
    """The stanza models of every stanza-annotated language that its model folder lacks (annotation.stanza_dir,
    where the annotation jobs look), as those jobs would download them."""
    from ..data.corpora import Corpora
    from ..study.annotation import stanza_model_folders

    done = []
    for language, folder in stanza_model_folders(config, Corpora(config)):
        if (Path(folder) / language).is_dir():
            done.append((f"stanza {language}", "present", f"{Path(folder) / language} (kept as it is)"))
            continue
        import stanza

        stanza.download(language, model_dir=folder, processors="tokenize,mwt,pos,lemma,depparse")
        done.append((f"stanza {language}", "fetched", str(Path(folder) / language)))
    return done


def offline_config(config: dict[str, Any], mirror: Path, models: Path) -> str:
    """The config that runs the study offline from what was fetched, given after the study's own configs."""
    entries = {}
    for name in config["study"]["models"]:
        entry = config["models"][name]
        local = {"path": str(models / name)}
        # Maps merge key by key: the entry's hub or package is set to null so that 'path' is its one source.
        local.update({key: None for key in ("hub", "package") if entry.get(key)})
        entries[name] = local
    snippet = {"offline": True, "mirror": str(mirror), "models": entries}
    header = (f"# Written by the prefetch (python -m workflow_scripts.entrypoints.prefetch) on "
              f"{datetime.now(UTC):%Y-%m-%d %H:%M} UTC.\n"
              "# Give it after the study's own config files: snakemake --configfile my-study.yaml THIS_FILE\n")
    return header + yaml.safe_dump(snippet, sort_keys=False)


def run(configfiles: list[str], overrides: list[str], mirror_dir: str, models_dir: str,
        write_config: str | None) -> int:
    from ..data.prefetch import Mirror

    config = resolve_config(configfiles, overrides)
    mirror, models = Mirror.open(mirror_dir), Path(models_dir).resolve()
    models.mkdir(parents=True, exist_ok=True)
    manifest = models / PREFETCH_RECORD
    record = read_model_record(manifest)  # before anything is fetched: a broken record stops the prefetch first
    results: list[tuple[str, str, str]] = []

    def attempt(what: str, fetch: Callable[[], Any]) -> None:
        log.info("%s ...", what)
        try:
            outcome = fetch()
            status, detail = (outcome.status, outcome.detail) if hasattr(outcome, "status") else outcome
        except AtlasError as error:
            status, detail = "FAILED", str(error)
        except Exception as error:  # an unforeseen failure of one item: listed with the others, never a traceback
            log.debug("%s failed", what, exc_info=True)
            status, detail = "FAILED", (f"{type(error).__name__}: {error}\nfix: this failure was not foreseen; "
                                        "if the message does not say what to change, please report it with the "
                                        "output of the prefetch")
        results.append((what, status, detail))
        log.info("%s: %s, %s", what, status, detail.splitlines()[0])

    try:
        for what, fetch in _data_steps(config, mirror):
            attempt(what, fetch)
    finally:
        mirror.save()
    try:
        for name in config["study"]["models"]:
            attempt(f"model {name}", lambda n=name: fetch_model(n, config["models"][n], models, record))
    finally:
        with atomic_path(manifest) as tmp:
            tmp.write_text(json.dumps(record, indent=1, sort_keys=True) + "\n", encoding="utf-8")
    try:
        results += fetch_stanza(config)
    except Exception as exc:  # stanza's own download errors: the annotation jobs would meet them too
        results.append(("stanza models", "FAILED", f"{type(exc).__name__}: {exc}\nfix: run where stanza's model "
                        "server is reachable, or set annotation.annotator: spacy"))
    return _summarize(results, config, mirror.root, models, write_config)


def _summarize(results: list[tuple[str, str, str]], config: dict[str, Any], mirror: Path, models: Path,
               write_config: str | None) -> int:
    failed = [r for r in results if r[1] == "FAILED"]
    print(f"prefetch: {len(results)} items into mirror {mirror} and models {models}")
    for what, status, detail in results:
        print(f"  {status:8s} {what}: {detail.splitlines()[0]}")
        for line in detail.splitlines()[1:]:
            print(f"           {line}")
    counts = {status: sum(r[1] == status for r in results) for status in dict.fromkeys(r[1] for r in results)}
    print("summary: " + ", ".join(f"{n} {status}" for status, n in counts.items()))
    if failed:
        print(f"{len(failed)} item(s) could not be fetched (above, with the fix); no offline config was written")
        return 1
    if write_config:
        target = Path(write_config)
        with atomic_path(target) as tmp:
            tmp.write_text(offline_config(config, mirror, models), encoding="utf-8")
        print(f"offline config written to {target}: run the study with --configfile <your config files> {target}")
    return 0


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m workflow_scripts.entrypoints.prefetch",
                                     description=__doc__.split("\n\n")[0])
    parser.add_argument("--configfile", nargs="*", default=[], help="the study's config files, as for snakemake")
    parser.add_argument("--config", nargs="*", default=[], metavar="KEY=VALUE", help="overrides, as for snakemake")
    parser.add_argument("--mirror", required=True, help="folder to fill with the data (docs/data.md's layout)")
    parser.add_argument("--models", required=True, help="folder to fill with one folder per model")
    parser.add_argument("--write-config", help="where to write the offline config (YAML)")
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="[prefetch] %(message)s", stream=sys.stderr)
    try:
        return run(args.configfile, args.config, args.mirror, args.models, args.write_config)
    except AtlasError as error:  # the config is invalid: nothing was fetched
        print(f"prefetch: {error}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
