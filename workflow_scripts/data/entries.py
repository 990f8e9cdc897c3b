"""Treebank and task entries of the config (``treebanks:``, ``tasks:``) as plain typed values.

A corpus is an entry of the config, not a name known to the code: config.yaml holds the built-in
ones (EWT and GUM, the GLUE tasks and WiC) and a researcher adds their own the same way
(docs/corpora.md). The study model reads these objects to plan the DAG, the rules pass
:meth:`TaskSpec.params` / :meth:`TreebankEntry.params` to the jobs (so that changing one entry
reruns only its branch), and the jobs rebuild them with ``from_params``.
"""

from __future__ import annotations

import glob
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from .registry import (
    GLUE_HUB_DATASET,
    GLUE_METRICS,
    GLUE_TASKS,
    TASK_DISPLAY_NAMES,
    WIC_LABELS,
    hub_mirror_file,
    mirror_candidates,
    url_mirror_file,
)

TREEBANK_FORMATS = ("conllu", "conllx", "malt_tab")
ANNOTATION_FIELDS = ("annotator", "pretokenized", "display")  # a task's fields that no data or training job reads
WIC_SPLITS = {"train": "train", "dev": "dev", "test": "test"}


@dataclass(frozen=True)
class TreebankEntry:
    """A treebank: where its files are, how they are written, and what they annotate."""

    name: str
    source: str                        # 'ud', 'path' or 'url'
    location: str                      # UD repository (UD_German-GSD), local folder, or base URL
    release: str | None                # UD release tag ('ud' only)
    format: str                        # one of TREEBANK_FORMATS
    splits: dict[str, tuple[str, ...]]  # split -> file globs ('path') or file names ('ud', 'url')
    language: str
    tagset: str                        # 'upos' or 'ptb' (what the tag column holds)
    labelled: bool                     # DEPREL holds relation labels
    display: str
    sha256: dict[str, str] = field(default_factory=dict)  # file (as splits names it) -> its sha256 ('ud', 'url')

    def params(self) -> dict[str, Any]:
        values = {**asdict(self), "splits": {k: list(v) for k, v in self.splits.items()}}
        if not self.sha256:
            values.pop("sha256")  # an entry without checksums keeps the params (and tables) it had before them
        return values

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> TreebankEntry:
        return cls(**{**params, "splits": {k: tuple(v) for k, v in params["splits"].items()}})

    def mirror_candidates(self, split: str) -> list[list[str]]:
        """Mirror-relative files of a downloaded treebank's split: a UD treebank's keep UD's repository layout
        (ud/REPO/FILE), a 'url' treebank's the URL's host and path (url/HOST/PATH)."""
        if self.source == "ud":
            return [[f"ud/{self.location}/{name}" for name in self.splits[split]]]  # a split may have several files
        if self.source == "url":
            return [[url_mirror_file(url) for url in self.urls(split, "", "")]]  # (no UD template needed)
        return []

    def local_files(self, split: str) -> list[Path]:
        """The files of a 'path' treebank's split, in sorted order within each glob."""
        if self.source != "path":
            return []
        files: list[Path] = []
        for pattern in self.splits[split]:
            full = pattern if Path(pattern).is_absolute() else str(Path(self.location) / pattern)
            files += [Path(p) for p in sorted(glob.glob(full)) if Path(p).is_file()]
        return list(dict.fromkeys(files))  # a file two globs match is read once

    def urls(self, split: str, ud_release: str, ud_url: str) -> list[str]:
        """Where a 'ud' or 'url' treebank's split is downloaded from (``ud_url``: the UD URL template,
        config key data.ud_url)."""
        if self.source == "ud":
            tag = self.release or ud_release
            return [ud_url.format(repo=self.location, tag=tag, file=name) for name in self.splits[split]]
        if self.source == "url":
            return [name if "://" in name else f"{self.location.rstrip('/')}/{name}" for name in self.splits[split]]
        return []

    def checksum_urls(self, split: str, ud_release: str, ud_api_url: str | None) -> list[str | None]:
        """For each file of the split, where its release checksum is read: a 'ud' treebank's from GitHub's
        contents API at its tag (``ud_api_url``: the template, config key data.ud_api_url; null: not asked);
        None for a file that has none there ('url' treebanks)."""
        if self.source != "ud" or not ud_api_url:
            return [None] * len(self.splits[split])
        tag = self.release or ud_release
        return [ud_api_url.format(repo=self.location, tag=tag, file=name) for name in self.splits[split]]


def ud_file_name(repository: str, language: str, split: str) -> str:
    """UD's file name convention: UD_German-GSD, language de -> de_gsd-ud-train.conllu."""
    return f"{language}_{repository.split('-', 1)[1].lower()}-ud-{split}.conllu"


def treebank_entry(name: str, entry: dict[str, Any], *, treebank_splits: list[str]) -> TreebankEntry:
    """The entry ``treebanks.{name}`` of a schema-validated config (defaults filled in)."""
    fmt = entry.get("format", "conllu")
    language = entry.get("language", "en")
    if "ud" in entry:
        source, location = "ud", entry["ud"]
        requested = entry.get("splits") or {s: s for s in treebank_splits}
        splits = {split: tuple(_as_list(files)) if "splits" in entry else (ud_file_name(location, language, split),)
                  for split, files in requested.items()}
    else:
        source = "path" if "path" in entry else "url"
        location = entry[source]
        splits = {split: tuple(_as_list(files)) for split, files in entry["splits"].items()}
    return TreebankEntry(
        name=name, source=source, location=location, release=entry.get("release"), format=fmt, splits=splits,
        language=language, tagset=entry.get("tagset") or ("ptb" if fmt == "malt_tab" else "upos"),
        labelled=entry.get("labelled", fmt != "malt_tab"), display=entry.get("name") or name,
        sha256={file: digest.lower() for file, digest in (entry.get("sha256") or {}).items()})


def _as_list(value: str | list[str]) -> list[str]:
    return [value] if isinstance(value, str) else list(value)


@dataclass(frozen=True)
class TaskSpec:
    """A text task: its source, its inputs and labels, its metrics and its display name."""

    name: str
    reader: str                      # 'glue', 'wic', 'hub' or 'table'
    source: dict[str, Any]           # glue: {task}; hub: {dataset, config, revision}; table: {path, format}
    splits: dict[str, str]           # study split -> hub split or file under the task's folder
    text: tuple[str, ...]            # one field, or the two of a pair
    label: str
    labels: tuple[Any, ...] | None   # class values in id order; None: regression
    metrics: tuple[str, ...]         # main metric first
    dev_split: str
    language: str
    annotator: dict[str, Any] | None
    display: str
    pretokenized: bool = False       # words already separated by spaces: the annotator keeps them

    @property
    def is_regression(self) -> bool:
        return self.labels is None

    @property
    def is_pair(self) -> bool:
        return len(self.text) == 2

    @property
    def main_metric(self) -> str:
        return self.metrics[0]

    def params(self) -> dict[str, Any]:
        """What the data, fine-tuning and gradient jobs read: not the annotator, 'pretokenized' or the display
        name, so that changing how a task is annotated reruns its annotation only."""
        values = asdict(self)
        values.update(text=list(self.text), metrics=list(self.metrics),
                      labels=None if self.labels is None else list(self.labels))
        for key in ANNOTATION_FIELDS:
            values.pop(key)
        return values

    @classmethod
    def from_params(cls, params: dict[str, Any]) -> TaskSpec:
        labels = params["labels"]
        return cls(**{"annotator": None, "display": params["name"], **params, "text": tuple(params["text"]),
                      "metrics": tuple(params["metrics"]), "labels": None if labels is None else tuple(labels)})

    def mirror_candidates(self, split: str) -> list[list[str]]:
        """Mirror-relative file sets that can provide a split, best first (none for a 'table' task's own files)."""
        if self.reader == "glue":
            return mirror_candidates(self.source["task"], split)
        if self.reader == "wic":
            return mirror_candidates("wic", split)
        if self.reader == "hub" and split in self.splits:
            return [[hub_mirror_file(self.source["dataset"], self.source.get("config"), self.splits[split])]]
        return []

    def local_files(self, split: str) -> list[Path]:
        """The local file of a 'table' task's split (none for other readers, or a file not there yet)."""
        if self.reader != "table" or split not in self.splits:
            return []
        folder = Path(self.source["path"])
        path = folder / self.splits[split] if folder.is_dir() else folder
        return [path] if path.is_file() else []


def task_spec(name: str, entry: dict[str, Any]) -> TaskSpec:
    """The entry ``tasks.{name}`` of a schema-validated config (defaults filled in)."""
    language, annotator = entry.get("language", "en"), entry.get("annotator")
    if "glue" in entry:
        glue = GLUE_TASKS[entry["glue"]]
        return TaskSpec(
            name=name, reader="glue", source={"task": glue.name}, splits=dict(glue.splits),
            text=("text_a", "text_b") if glue.text_b else ("text_a",), label="label", labels=glue.labels,
            metrics=GLUE_METRICS.get(glue.name, ("accuracy",)),
            dev_split="dev_matched" if glue.name == "mnli" else "dev",
            language=language, annotator=annotator, display=entry.get("name") or TASK_DISPLAY_NAMES[glue.name],
            pretokenized=entry.get("pretokenized", False))
    if "wic" in entry:
        return TaskSpec(name=name, reader="wic", source={}, splits=dict(WIC_SPLITS), text=("text_a", "text_b"),
                        label="label", labels=WIC_LABELS, metrics=("accuracy",), dev_split="dev", language=language,
                        annotator=annotator, display=entry.get("name") or TASK_DISPLAY_NAMES["wic"],
                        pretokenized=entry.get("pretokenized", False))
    regression = entry["kind"] == "regression"
    metrics = tuple(entry.get("metrics") or (("pearson", "spearman") if regression else ("accuracy",)))
    dev = entry.get("dev_split", "dev")
    if "hub" in entry:
        reader, source = "hub", {"dataset": entry["hub"]["dataset"], "config": entry["hub"].get("config"),
                                 "revision": entry["hub"].get("revision")}
        splits = dict(entry["splits"])
    else:
        reader, source = "table", {"path": entry["path"], "format": entry.get("format")}
        # A single file with no splits is the dev split; a folder needs splits (the entry checks say so).
        splits = dict(entry.get("splits") or {dev: Path(entry["path"]).name})
    return TaskSpec(name=name, reader=reader, source=source, splits=splits, text=tuple(entry["text"]),
                    label=entry["label"], labels=None if regression else tuple(entry["labels"]), metrics=metrics,
                    dev_split=dev, language=language, annotator=annotator, display=entry.get("name") or name,
                    pretokenized=entry.get("pretokenized", False))


def glue_hub_source(spec: TaskSpec, split: str) -> str:
    return f"hub dataset {GLUE_HUB_DATASET} ({spec.source['task']}, {spec.splits[split]})"
