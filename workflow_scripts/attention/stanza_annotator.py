"""stanza's UD pipeline (tokenize, mwt, pos, lemma, depparse) as the annotator of text without gold trees.

Models come either from a folder made by ``stanza.download`` (``annotation.stanza_dir``, one folder per
language) or from explicit model files per processor (``annotation.stanza_models``): a lab's own models,
or a language stanza does not ship (docs/annotation.md says how to train them). Offline, nothing is
downloaded. A corpus whose words are already known (``pretokenized``: its words are separated by
whitespace) is fed with ``tokenize_pretokenized=True``, so the annotation's words are the corpus's words.

Every word gets the character span of its token in the text as written (the words of a multi-word token
share the token's span), and heads are renumbered across the sentences of a text: word indices count
from the text's first word, -1 for a sentence root.
"""

from __future__ import annotations

import json
import logging
import re
import tempfile
from pathlib import Path
from typing import Any

from ..core.errors import AtlasError
from .annotated_text import AnnotatedText

log = logging.getLogger(__name__)

# Model files a config may name, by the stanza.Pipeline argument they fill.
MODEL_ARGUMENTS = {
    "tokenize": "tokenize_model_path", "mwt": "mwt_model_path", "pos": "pos_model_path",
    "pos_pretrain": "pos_pretrain_path", "lemma": "lemma_model_path", "depparse": "depparse_model_path",
    "depparse_pretrain": "depparse_pretrain_path",
}
REQUIRED_MODELS = ("pos", "pos_pretrain", "depparse", "depparse_pretrain")
PREFETCH_FIX = ("download them where the internet is: the prefetch (python -m workflow_scripts.entrypoints.prefetch, "
                "README 'Cluster without internet on compute nodes') puts them into annotation.stanza_dir, as does "
                "a run that is not offline; or give your own model files (annotation.stanza_models), or annotate "
                "with spaCy, the offline UPOS-only fallback")
_WORD = re.compile(r"\S+")


def stanza_model_problems(models: dict[str, str] | None, key: str, *, raw_text: bool) -> list[str]:
    """What is wrong with explicit model files (config key ``key``), before any job: a missing processor
    or file, or raw text to annotate with no tokenizer."""
    if not models:
        return []
    problems = [f"config key '{key}': no '{name}' model; give the {name} file of your trained models "
                "(docs/annotation.md)" for name in REQUIRED_MODELS if not models.get(name)]
    for name, path in models.items():
        if path and not Path(path).is_file():
            problems.append(f"config key '{key}.{name}': the stanza {name} model {path} is not a file; fix the path "
                            "or train the model (docs/annotation.md)")
    if raw_text and not models.get("tokenize"):
        problems.append(f"config key '{key}': no 'tokenize' model, but the study annotates raw text; give a "
                        "tokenizer model, or mark the corpus pretokenized (its words separated by spaces)")
    return problems


def _resources_know(model_dir: str | None, language: str) -> bool:
    """Whether a stanza folder's resources.json describes ``language`` (without it, stanza leaves processors out)."""
    path = Path(model_dir or "") / "resources.json"
    if not model_dir or not path.is_file():
        return False
    try:
        return language in json.loads(path.read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return False


# The smallest resources.json stanza.Pipeline accepts when every model is given as a file (stanza reads it even
# then, and would otherwise try to download it). Without 'packages' and a default tokenizer, stanza fails on raw
# text with no mwt model; with only those, it runs every combination.
def minimal_resources(language: str) -> dict[str, Any]:
    return {language: {"lang_name": language, "packages": {}, "tokenize": {"default": {}}}}


class StanzaAnnotator:
    """stanza's pipeline from a downloaded model folder or from explicit model files."""

    def __init__(self, model_dir: str | None, *, language: str = "en", models: dict[str, str] | None = None,
                 pretokenized: bool = False, download: bool = False, use_gpu: bool = False) -> None:
        import stanza

        self.pretokenized = pretokenized
        options: dict[str, Any] = {"lang": language, "download_method": None, "use_gpu": use_gpu,
                                   "logging_level": "WARN", "tokenize_pretokenized": pretokenized}
        if models:
            given = {name: path for name, path in models.items() if path}
            processors = ["tokenize", *(["mwt"] if "mwt" in given and not pretokenized else []), "pos", "lemma",
                          "depparse"]
            options.update({MODEL_ARGUMENTS[name]: path for name, path in given.items()})
            if "lemma" not in given:
                options["lemma_use_identity"] = True  # no lemmatizer: the lemma is the word (as stanza allows)
            options["dir"] = model_dir if _resources_know(model_dir, language) else self._own_resources(language)
            self.models = {name: str(path) for name, path in given.items()}
        else:
            if model_dir and download and not (Path(model_dir) / language).is_dir():
                log.info("downloading stanza %s models to %s", language, model_dir)
                try:
                    stanza.download(language, model_dir=model_dir, processors="tokenize,mwt,pos,lemma,depparse")
                except Exception as exc:  # no network here (a compute node), the model server down, ...
                    raise AtlasError(
                        f"the stanza models of language {language!r} could not be downloaded into {model_dir} "
                        f"({type(exc).__name__}: {exc}); fix: {PREFETCH_FIX}") from exc
            if not model_dir or not (Path(model_dir) / language).is_dir():
                raise AtlasError(
                    f"stanza model folder {model_dir!r} holds no stanza models of language {language!r} "
                    f"(expected a '{language}' folder, made by stanza.download('{language}', model_dir=DIR)); "
                    f"fix: {PREFETCH_FIX}")
            # Languages without multi-word tokens have no mwt model: stanza leaves the processor out.
            processors = ["tokenize", "mwt", "pos", "lemma", "depparse"]
            options["dir"] = model_dir
            self.models = {"folder": str(Path(model_dir) / language)}
        self.pipeline = stanza.Pipeline(processors=",".join(processors), **options)
        self.name = f"stanza:{stanza.__version__}" + ("" if language == "en" else f":{language}")

    def _own_resources(self, language: str) -> str:
        """A temporary folder holding :func:`minimal_resources`, removed with the annotator."""
        self._resources = tempfile.TemporaryDirectory(prefix="atlas-stanza-")
        (Path(self._resources.name) / "resources.json").write_text(json.dumps(minimal_resources(language)),
                                                                  encoding="utf-8")
        return self._resources.name

    def annotate(self, texts: list[str]) -> list[AnnotatedText]:
        import stanza

        if self.pretokenized:
            # One sentence per text: its whitespace-separated words, each with its span in the text as written.
            spans = [[(m.start(), m.end()) for m in _WORD.finditer(text)] for text in texts]
            docs = self.pipeline([stanza.Document([], text=" ".join(text[s:e] for s, e in span))
                                  for text, span in zip(texts, spans)])
            return [self._convert(doc, span) for doc, span in zip(docs, spans)]
        docs = self.pipeline([stanza.Document([], text=t) for t in texts])
        return [self._convert(doc) for doc in docs]

    @staticmethod
    def _convert(doc: Any, spans: list[tuple[int, int]] | None = None) -> AnnotatedText:
        result = AnnotatedText()
        token_index = 0
        for sentence in doc.sentences:
            offset = len(result.words)
            for token in sentence.tokens:
                if spans is not None:
                    start, end = spans[token_index]  # pretokenized: the word's span in the text as written
                else:
                    start, end = token.start_char, token.end_char
                token_index += 1
                # The words of a multi-word token carry no offsets of their own: they share the token's.
                for word in token.words:
                    result.words.append(word.text)
                    result.lemmas.append(word.lemma)
                    result.upos.append(word.upos)
                    result.head.append(offset + word.head - 1 if word.head else -1)
                    result.deprel.append(word.deprel)
                    result.char_start.append(start)
                    result.char_end.append(end)
        return result
