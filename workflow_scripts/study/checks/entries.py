"""Checks of the treebank and task entries that can be made before any job runs.

The schema has already rejected unknown fields and wrong types; these checks need the other keys or
the disk: a selected name that no entry defines, a local folder or split file that is not there, a
text or label field missing from a local file's header, a coreference treebank that is not CoNLL-U.
What only reading the whole file can show (a label outside the declared set, a line that does not
parse) is reported by the entry's data job, with the file and line. Every message names the config
key and the fix.
"""

from __future__ import annotations

import csv
import json
from pathlib import Path
from typing import Any

from ...data.corpora import WINDOW_SUFFIX, Corpora
from ...data.registry import FIXED_CORPORA
from ...data.text_files import open_text


def entry_problems(config: dict[str, Any], corpora: Corpora) -> list[str]:
    """Every problem of the entries and of the names that select them (empty when all is well); ``corpora``: the
    config's, built once by the check."""
    problems = _name_problems(config)
    if problems:
        return problems
    for name in config["study"]["treebanks"]:
        problems += _treebank_problems(corpora, name)
    for name in config["study"]["tasks"]:
        problems += _task_problems(corpora, name)
    problems += _split_problems(config, corpora)
    for name in config["data"]["coreference_treebanks"]:
        entry = corpora.treebanks[name]
        if entry.format != "conllu":
            problems.append(f"config key 'data.coreference_treebanks': treebank {name!r} is {entry.format}, but "
                            "coreference mentions are read from CoNLL-U MISC Entity= annotation (CorefUD); "
                            "remove it from the list or give a CoNLL-U source")
    return problems


def _undefined(key: str, names: list[str], defined: dict[str, Any], section: str) -> list[str]:
    return [f"config key '{key}': {name!r} is not defined under '{section}' (defined: "
            f"{', '.join(sorted(defined)) or 'none'}); add an entry '{section}.{name}' (docs/corpora.md) "
            "or fix the name" for name in names if name not in defined]


def _name_problems(config: dict[str, Any]) -> list[str]:
    treebanks, tasks = config["treebanks"], config["tasks"]
    problems = _undefined("study.treebanks", config["study"]["treebanks"], treebanks, "treebanks")
    problems += _undefined("study.tasks", config["study"]["tasks"], tasks, "tasks")
    problems += _undefined("data.coreference_treebanks", config["data"]["coreference_treebanks"], treebanks,
                           "treebanks")
    problems += _undefined("syntax.treebanks", config["syntax"]["treebanks"], treebanks, "treebanks")
    problems += _undefined("syntax.coref_treebank", [config["syntax"]["coref_treebank"]], treebanks, "treebanks")
    coref = config["syntax"]["coref_treebank"]
    if coref in config["study"]["treebanks"] and coref not in config["data"]["coreference_treebanks"]:
        problems.append(f"config key 'syntax.coref_treebank': {coref!r} is not in 'data.coreference_treebanks', so "
                        "its mentions are never read; add it there (a CoNLL-U treebank with Entity= annotation)")
    for name in sorted(set(treebanks) & set(tasks)):
        problems.append(f"config keys 'treebanks.{name}' and 'tasks.{name}': a corpus name names one entry; "
                        "rename one of them")
    for name in sorted((set(treebanks) | set(tasks)) & set(FIXED_CORPORA)):
        problems.append(f"config key '{name}' under 'treebanks' or 'tasks': {name!r} is the name of a built-in "
                        "corpus (the Wikipedia segments or GloVe); choose another name")
    for name in sorted(tasks):
        if name.endswith(WINDOW_SUFFIX) and name[:-len(WINDOW_SUFFIX)] in treebanks:
            problems.append(f"config key 'tasks.{name}': names ending in '{WINDOW_SUFFIX}' after a treebank's "
                            "name are its coreference windows; choose another name")
    return problems


def _split_problems(config: dict[str, Any], corpora: Corpora) -> list[str]:
    """Splits named in the config that the selected entries do not define (offline availability aside)."""
    selected = {*config["study"]["treebanks"], *config["study"]["tasks"]}
    problems = []
    for corpus, splits in config["attention"]["corpora"].items():
        if corpus not in selected:
            continue  # a corpus the study does not select is skipped (the default lists ewt, gum and wiki)
        unknown = [s for s in splits if s not in corpora.splits(corpus)]
        if unknown:
            problems.append(f"config key 'attention.corpora.{corpus}': split(s) {', '.join(map(repr, unknown))} "
                            f"are not splits of {corpus!r} ({', '.join(corpora.splits(corpus))}); fix the names or "
                            "add the splits to its entry")
    syntax = config["syntax"]
    for treebank in syntax["treebanks"]:
        if treebank not in config["study"]["treebanks"]:
            continue
        for key in ("select_split", "score_split"):
            if syntax[key] not in corpora.splits(treebank):
                problems.append(f"config key 'syntax.{key}': {syntax[key]!r} is not a split of treebank "
                                f"{treebank!r} ({', '.join(corpora.splits(treebank))}); name one of its splits "
                                f"or give its entry that split ('treebanks.{treebank}.splits')")
    return problems


def _treebank_problems(corpora: Corpora, name: str) -> list[str]:
    entry = corpora.treebanks[name]
    if entry.source == "ud" and entry.language == "en" and not entry.location.startswith("UD_English"):
        return [f"config key 'treebanks.{name}.language': {entry.location} is read as UD's files "
                f"{entry.splits[next(iter(entry.splits))][0]} ...: give the treebank's language code (e.g. 'de' "
                f"for UD_German-GSD), or name its files under 'treebanks.{name}.splits'"]
    if entry.sha256 and entry.source == "path":
        return [f"config key 'treebanks.{name}.sha256': a 'path' treebank's files are read where they are, never "
                "downloaded, so no checksum applies; remove it"]
    files = [file for names in entry.splits.values() for file in names]
    stray = [file for file in entry.sha256 if file not in files]
    if stray:
        return [f"config key 'treebanks.{name}.sha256': {', '.join(map(repr, stray))} is not a file of the entry "
                f"(its files: {', '.join(files)}); name each file as 'splits' (or UD's file names) does"]
    if entry.source != "path":
        return []
    if not Path(entry.location).is_dir():
        return [f"config key 'treebanks.{name}.path': {entry.location} is not a folder; give the folder that "
                f"holds the treebank's files (their globs go under 'treebanks.{name}.splits')"]
    problems = []
    for split in entry.splits:
        if not entry.local_files(split):
            patterns = ", ".join(entry.splits[split])
            problems.append(f"config key 'treebanks.{name}.splits.{split}': no file in {entry.location} matches "
                            f"{patterns}; fix the glob (relative to 'path') or remove the split")
    return problems


def _task_problems(corpora: Corpora, name: str) -> list[str]:
    spec = corpora.tasks[name]
    key = f"tasks.{name}"
    if spec.reader in ("hub", "table") and spec.dev_split not in spec.splits:
        return [f"config key '{key}.dev_split': {spec.dev_split!r} is not one of its splits "
                f"({', '.join(spec.splits)}); name the split to score on, or add it to '{key}.splits'"]
    if spec.reader != "table":
        return []
    path = Path(spec.source["path"])
    if not path.exists():
        return [f"config key '{key}.path': {path} does not exist; give a CSV, TSV or JSON Lines file, or a "
                f"folder with one file per split named under '{key}.splits'"]
    if path.is_dir() and spec.splits == {spec.dev_split: path.name}:  # no 'splits' given (entries.task_spec)
        return [f"config key '{key}.splits': {path} is a folder; name the file of each split under it "
                f"(e.g. {{train: train.csv, dev: dev.csv}}), or give one file as '{key}.path'"]
    problems = []
    for split, file_name in spec.splits.items():
        files = spec.local_files(split)
        if not files:
            problems.append(f"config key '{key}.splits.{split}': {path / file_name} is not a file; fix the file "
                            f"name (relative to '{key}.path') or remove the split")
            continue
        problems += _header_problems(files[0], spec.source.get("format"), [*spec.text, spec.label], key)
    return problems


def _header_problems(path: Path, fmt: str | None, fields: list[str], key: str) -> list[str]:
    """Fields missing from a local task file's header (or first JSON line): known before any job."""
    suffixes = [s.lower() for s in path.suffixes if s.lower() != ".gz"]
    fmt = fmt or {".csv": "csv", ".tsv": "tsv", ".tab": "tsv", ".jsonl": "jsonl", ".json": "jsonl",
                  ".ndjson": "jsonl"}.get(suffixes[-1] if suffixes else "", None)
    if fmt is None:
        return [f"config key '{key}.format': the format of {path} is not known from its suffix; set it to csv, "
                "tsv or jsonl"]
    with open_text(path, encoding="utf-8-sig", newline="") as handle:
        if fmt == "jsonl":
            first = next((line for line in handle if line.strip()), "")
            try:
                found = list(json.loads(first)) if first else []
            except (json.JSONDecodeError, TypeError):
                return []  # the data job reports the line that does not parse
        else:
            found = next(csv.reader(handle, delimiter="," if fmt == "csv" else "\t"), [])
    missing = [f for f in fields if f not in found]
    if not missing:
        return []
    return [f"config key '{key}': {path} line 1 has no field(s) {', '.join(map(repr, missing))} (fields: "
            f"{', '.join(found) or 'none'}); set '{key}.text' and '{key}.label' to fields of the file"]
