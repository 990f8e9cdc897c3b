"""Which annotator (and which models) annotates each corpus of a study that has no gold annotation.

The 'annotation' section applies to every such corpus; a task entry may give its own annotator and
language (``tasks.NAME.annotator``, ``.language``) and say its words are already known
(``pretokenized``). The annotation rule passes these settings per corpus through ``params:``, so changing
one task's annotator reruns only that task's branch; the report names annotators and models.
"""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any

from ..attention.stanza_annotator import MODEL_ARGUMENTS
from ..data.corpora import Corpora


def annotation_settings(config: Any, corpora: Corpora, corpus: str) -> dict[str, Any]:
    """The annotation of ``corpus``: 'annotation' with a task entry's own annotator on top. A stanza
    annotator of a language other than English is 'stanza:LANG' (its models: DIR/LANG or the files given)."""
    section = config["annotation"]
    spec = corpora.tasks.get(corpus)
    own = (spec.annotator or {}) if spec else {}
    tool = own.get("tool", section["annotator"])
    language = spec.language if spec else "en"
    return {"annotator": f"stanza:{language}" if tool == "stanza" and language != "en" else tool,
            "spacy_model": own.get("spacy_model", section["spacy_model"]),
            "stanza_dir": own.get("stanza_dir", section["stanza_dir"]),
            # A task's own annotator brings its own models: the section's (maybe another language's) are not used.
            "stanza_models": (own.get("stanza_models") if own else section["stanza_models"]) if tool == "stanza"
            else None,
            "pretokenized": bool(spec.pretokenized) if spec else False}


def stanza_model_folders(config: Any, corpora: Corpora) -> dict[tuple[str, str], str]:
    """(language, annotation.stanza_dir) -> a corpus annotated with it, for every stanza annotation that reads
    its models from a folder made by stanza.download (not from model files): online, the annotation job downloads
    the models into that folder when it lacks them (the prefetch does beforehand)."""
    needed: dict[tuple[str, str], str] = {}
    for corpus in [*config["study"]["tasks"], *(["wiki"] if config["study"]["wiki"] else [])]:
        settings = annotation_settings(config, corpora, corpus)
        if settings["annotator"].startswith("stanza") and not settings["stanza_models"] and settings["stanza_dir"]:
            needed.setdefault((settings["annotator"].partition(":")[2] or "en", settings["stanza_dir"]), corpus)
    return needed


def stanza_downloads_pending(config: Any, corpora: Corpora) -> bool:
    """Whether an annotation job would download stanza models (online, a model folder lacks its language)."""
    return not config["offline"] and any(not (Path(folder) / language).is_dir()
                                         for language, folder in stanza_model_folders(config, corpora))


def describe_annotators(config: Any, corpora: Corpora) -> str:
    """One line: the annotators and models of the study's text corpora (tasks, wiki)."""
    described: dict[str, list[str]] = {}
    for corpus in [*config["study"]["tasks"], *(["wiki"] if config["study"]["wiki"] else [])]:
        settings = annotation_settings(config, corpora, corpus)
        if settings["annotator"] == "spacy":
            text = f"spaCy {settings['spacy_model']} (UPOS only, no parse)"
        elif settings["stanza_models"]:
            files = settings["stanza_models"]
            named = ", ".join(f"{name} {Path(files[name]).name}" for name in MODEL_ARGUMENTS if files.get(name))
            text = f"stanza with model files ({named}{'' if files.get('lemma') else '; lemma = word'})"
        else:
            language = settings["annotator"].partition(":")[2] or "en"
            text = f"stanza with the models of {Path(settings['stanza_dir'] or '.') / language}"
        described.setdefault(text, []).append(corpus)
    if len(described) <= 1:
        return next(iter(described), "")
    return "; ".join(f"{text} ({', '.join(names)})" for text, names in described.items())


def caption_text(text: str) -> str:
    """``text`` as reStructuredText that shows it literally, for a report caption (report/*.rst).

    Snakemake puts a caption's values into its RST with Jinja, unescaped, then renders it with docutils, which
    runs directives (``.. raw:: html``, ``.. include::``) and makes links of ``javascript:`` URIs. The annotator
    text holds free config text (a spaCy pipeline name, stanza model paths), so every character but letters,
    digits and spaces is backslash-escaped (docutils shows it as itself, never as markup) and line breaks
    become spaces (no directive can start a line)."""
    return re.sub(r"([^A-Za-z0-9 ])", r"\\\1", re.sub(r"\s+", " ", text))
