"""Tiny corpora of the researcher's own (config entries, not built-in ones) and the open study that reads them:
a French treebank (accents, a multi-word token ``du`` = ``de`` + ``le``), a Chinese one written without spaces,
a CorefUD-style file, a German one (added by a test), local CSV tasks, and a tiny BERT whose vocabulary has
their words and characters (tests/workflow/test_open_study.py runs the real DAG on them)."""

from __future__ import annotations

from pathlib import Path

import yaml

from support.conllu import mwt, tok, write_conllu
from support.tiny_models import WORDS, save_tiny_model

# (form, upos, head, deprel[, Entity= value]); an optional multi-word token (first, last, surface), 1-based.
Word = tuple


def sentence(sent_id: str, text: str, words: list[Word], mwt_span: tuple[int, int, str] | None = None,
             doc: str | None = None) -> list[str]:
    """The CoNLL-U lines of one sentence; SpaceAfter=No wherever ``text`` has no space after a token."""
    lines = [f"# newdoc id = {doc}"] if doc else []
    lines += [f"# sent_id = {sent_id}", f"# text = {text}"]
    cursor = 0

    def spaced(form: str) -> bool:
        nonlocal cursor
        cursor = text.index(form, cursor) + len(form)
        return cursor < len(text) and text[cursor] == " "

    for i, (form, upos, head, deprel, *entity) in enumerate(words, start=1):
        misc = [f"Entity={entity[0]}"] if entity else []
        if mwt_span and i == mwt_span[0]:
            lines.append(mwt(f"{mwt_span[0]}-{mwt_span[1]}", mwt_span[2],
                             "_" if spaced(mwt_span[2]) else "SpaceAfter=No"))
        if not (mwt_span and mwt_span[0] <= i <= mwt_span[1]) and not spaced(form):
            misc.append("SpaceAfter=No")
        lines.append(tok(i, form, form.lower(), upos, "_", head, deprel, "|".join(misc) or "_"))
    return lines + [""]


# The dev sentence with the multi-word token du = de + le (words 3 and 4).
FR_MWT_SENTENCE = ("La fille du député dort.", [("La", "DET", 2, "det"), ("fille", "NOUN", 6, "nsubj"),
                                                 ("de", "ADP", 5, "case"), ("le", "DET", 5, "det"),
                                                 ("député", "NOUN", 2, "nmod"), ("dort", "VERB", 0, "root"),
                                                 (".", "PUNCT", 6, "punct")])
# The dev sentence whose every word must get a token: (text, words); its accented words are whole vocabulary words.
FR_ACCENTS = ("Le député a visité le musée.", [("Le", "DET", 2, "det"), ("député", "NOUN", 4, "nsubj"),
                                                ("a", "AUX", 4, "aux"), ("visité", "VERB", 0, "root"),
                                                ("le", "DET", 6, "det"), ("musée", "NOUN", 4, "obj"),
                                                (".", "PUNCT", 4, "punct")])
FR = {
    "train-a.conllu": [
        ("Le café est très bon.", [("Le", "DET", 2, "det"), ("café", "NOUN", 5, "nsubj"), ("est", "AUX", 5, "cop"),
                                   ("très", "ADV", 5, "advmod"), ("bon", "ADJ", 0, "root"),
                                   (".", "PUNCT", 5, "punct")]),
        ("Le frère du député arrive.", [("Le", "DET", 2, "det"), ("frère", "NOUN", 6, "nsubj"),
                                        ("de", "ADP", 5, "case"), ("le", "DET", 5, "det"),
                                        ("député", "NOUN", 2, "nmod"), ("arrive", "VERB", 0, "root"),
                                        (".", "PUNCT", 6, "punct")], (3, 4, "du")),
        ("L'élève lit un livre.", [("L'", "DET", 2, "det"), ("élève", "NOUN", 3, "nsubj"), ("lit", "VERB", 0, "root"),
                                   ("un", "DET", 5, "det"), ("livre", "NOUN", 3, "obj"), (".", "PUNCT", 3, "punct")]),
    ],
    "train-b.conllu": [
        ("La fille regarde la télé.", [("La", "DET", 2, "det"), ("fille", "NOUN", 3, "nsubj"),
                                       ("regarde", "VERB", 0, "root"), ("la", "DET", 5, "det"),
                                       ("télé", "NOUN", 3, "obj"), (".", "PUNCT", 3, "punct")]),
        ("Le chat noir dort bien.", [("Le", "DET", 2, "det"), ("chat", "NOUN", 4, "nsubj"), ("noir", "ADJ", 2, "amod"),
                                     ("dort", "VERB", 0, "root"), ("bien", "ADV", 4, "advmod"),
                                     (".", "PUNCT", 4, "punct")]),
    ],
    "dev.conllu": [
        FR_ACCENTS,
        (*FR_MWT_SENTENCE, (3, 4, "du")),
        ("Müller écoute un élève.", [("Müller", "PROPN", 2, "nsubj"), ("écoute", "VERB", 0, "root"),
                                     ("un", "DET", 4, "det"), ("élève", "NOUN", 2, "obj"), (".", "PUNCT", 2, "punct")]),
    ],
}


def _zh(spec: str) -> tuple[str, list[Word]]:
    """A Chinese sentence from 'word/UPOS/head/deprel' items; its text is the words without spaces."""
    words = [(form, upos, int(head), deprel) for form, upos, head, deprel in (item.split("/") for item in spec.split())]
    return "".join(w[0] for w in words), words


ZH = {
    "train.conllu": [
        _zh("我/PRON/2/nsubj 喜欢/VERB/0/root 猫/NOUN/2/obj 。/PUNCT/2/punct"),
        _zh("这/DET/3/det 只/NOUN/3/clf 狗/NOUN/5/nsubj 很/ADV/5/advmod 大/ADJ/0/root 。/PUNCT/5/punct"),
        _zh("我们/PRON/2/nsubj 吃/VERB/0/root 米饭/NOUN/2/obj 。/PUNCT/2/punct"),
        _zh("那/DET/3/det 本/NOUN/3/clf 书/NOUN/5/nsubj 很/ADV/5/advmod 好/ADJ/0/root 。/PUNCT/5/punct"),
    ],
    "dev.conllu": [
        _zh("他/PRON/2/nsubj 看/VERB/0/root 这/DET/5/det 本/NOUN/5/clf 书/NOUN/2/obj 。/PUNCT/2/punct"),
        _zh("她/PRON/2/nsubj 喜欢/VERB/0/root 小狗/NOUN/2/obj 。/PUNCT/2/punct"),
        _zh("那/DET/3/det 只/NOUN/3/clf 猫/NOUN/5/nsubj 很/ADV/5/advmod 小/ADJ/0/root 。/PUNCT/5/punct"),
    ],
}

# CorefUD notation: (e1--1- opens a mention of entity e1 (empty etype), e1) closes it, (e2--1-) is one word.
COREFUD = [
    ("doc1", "The dog sat on the mat.", [("The", "DET", 2, "det", "(e1--2-"), ("dog", "NOUN", 3, "nsubj", "e1)"),
                                         ("sat", "VERB", 0, "root"), ("on", "ADP", 6, "case"),
                                         ("the", "DET", 6, "det", "(e2--2-"), ("mat", "NOUN", 3, "obl", "e2)"),
                                         (".", "PUNCT", 3, "punct")]),
    (None, "It saw the cat.", [("It", "PRON", 2, "nsubj", "(e1--1-)"), ("saw", "VERB", 0, "root"),
                               ("the", "DET", 4, "det", "(e3--2-"), ("cat", "NOUN", 2, "obj", "e3)"),
                               (".", "PUNCT", 2, "punct")]),
    (None, "She sees it.", [("She", "PRON", 2, "nsubj", "(e3--1-)"), ("sees", "VERB", 0, "root"),
                            ("it", "PRON", 2, "obj", "(e2--1-)"), (".", "PUNCT", 2, "punct")]),
    ("doc2", "The big house is red.", [("The", "DET", 3, "det", "(e4--3-"), ("big", "ADJ", 3, "amod"),
                                       ("house", "NOUN", 5, "nsubj", "e4)"), ("is", "AUX", 5, "cop"),
                                       ("red", "ADJ", 0, "root"), (".", "PUNCT", 5, "punct")]),
    (None, "It is new.", [("It", "PRON", 3, "nsubj", "(e4--1-)"), ("is", "AUX", 3, "cop"), ("new", "ADJ", 0, "root"),
                          (".", "PUNCT", 3, "punct")]),
]
# (entity, head word) of every mention of COREFUD, in file order.
COREFUD_MENTIONS = [("e1", "dog"), ("e2", "mat"), ("e1", "It"), ("e3", "cat"), ("e3", "She"), ("e2", "it"),
                    ("e4", "house"), ("e4", "It")]

DE = {
    "train.conllu": [("Der Hund läuft über die Straße.", [
        ("Der", "DET", 2, "det"), ("Hund", "NOUN", 3, "nsubj"), ("läuft", "VERB", 0, "root"),
        ("über", "ADP", 6, "case"), ("die", "DET", 6, "det"), ("Straße", "NOUN", 3, "obl"),
        (".", "PUNCT", 3, "punct")])],
    "dev.conllu": [("Die Katze schläft.", [("Die", "DET", 2, "det"), ("Katze", "NOUN", 3, "nsubj"),
                                           ("schläft", "VERB", 0, "root"), (".", "PUNCT", 3, "punct")])],
}

GOOD = ["the cat sat on the mat .", "the big dog ran quickly .", "she sees the new house .", "we saw the red cat ."]
BAD = ["the dog did not go .", "it was not big .", "they can n't walk .", "the small cat is not red ."]


def write_treebank(folder: Path, files: dict[str, list], prefix: str) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    for name, sentences in files.items():
        lines = []
        for i, (text, words, *span) in enumerate(sentences):
            lines += sentence(f"{prefix}-{Path(name).stem}-{i + 1}", text, words, span[0] if span else None)
        write_conllu(folder / name, lines)
    return folder


def write_corefud(folder: Path) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    lines = []
    for i, (doc, text, words) in enumerate(COREFUD):
        lines += sentence(f"corefud-{i + 1}", text, words, doc=doc)
    lines.insert(1, "# global.Entity = eid-etype-head-other")  # after the first '# newdoc id'
    write_conllu(folder / "corefud-dev.conllu", lines)
    return folder


def task_rows(n: int, offset: int = 0) -> list[tuple[str, str]]:
    """(sentence, label) rows alternating positive and negative."""
    return [(GOOD[(i // 2) % 4], "positive") if i % 2 == 0 else (BAD[(i // 2) % 4], "negative")
            for i in range(offset, offset + n)]


def write_csv_task(folder: Path, *, text_field: str = "sentence", bad_label_line: int | None = None) -> Path:
    """train.csv (16 rows) and dev.csv (8 rows) with header id,TEXT_FIELD,label; with ``bad_label_line``, the
    dev row on that line (1-based, the header is line 1) has the label 'neutral'."""
    folder.mkdir(parents=True, exist_ok=True)
    for name, rows in (("train.csv", task_rows(16)), ("dev.csv", task_rows(8, 16))):
        lines = [f"id,{text_field},label"]
        for i, (text, label) in enumerate(rows):
            bad = name == "dev.csv" and len(lines) + 1 == bad_label_line
            lines.append(f"{name[:-4]}{i},{text},{'neutral' if bad else label}")
        (folder / name).write_text("\n".join(lines) + "\n", encoding="utf-8")
    return folder


def csv_task_entry(folder: Path, text_field: str = "sentence") -> dict:
    return {"path": str(folder), "splits": {"train": "train.csv", "dev": "dev.csv"}, "text": [text_field],
            "label": "label", "kind": "classification", "labels": ["negative", "positive"]}


OPEN_WORDS = ["le", "la", "l", "un", "café", "est", "très", "bon", "frère", "de", "du", "député", "arrive", "élève",
              "lit", "livre", "fille", "regarde", "télé", "chat", "noir", "dort", "bien", "a", "visité", "musée",
              "müller", "écoute", "mat", "saw", "sees", "likes", "house", "new", "red", "the", "der", "die", "hund",
              "läuft", "über", "straße", "katze", "schläft"]
CJK = "我喜欢猫这只狗很大们吃米饭那本书好他看她小。"


def save_open_bert(directory: Path, seed: int = 0) -> Path:
    """A randomly initialised tiny BERT whose uncased tokenizer keeps accents and knows the corpora's words."""
    pieces = [*sorted(set(WORDS) | set(OPEN_WORDS)), *CJK, "'", *"abcdefghijklmnopqrstuvwxyzéèàüöäß",
              *("##" + c for c in "abcdefghijklmnopqrstuvwxyzéü")]
    return save_tiny_model(directory, pieces=pieces, strip_accents=False, seed=seed)


def write_open_study(work: Path, model: Path) -> Path:
    """``work/corpora`` (fr, zh, corefud, de, mycsv, othercsv), an empty mirror and ``work/open.yaml``: the
    tiny study of fr and zh (fed as written), corefud's coreference, and the local CSV task mycsv."""
    corpora = work / "corpora"
    write_treebank(corpora / "fr", FR, "fr")
    write_treebank(corpora / "zh", ZH, "zh")
    write_treebank(corpora / "de", DE, "de")
    write_corefud(corpora / "corefud")
    write_csv_task(corpora / "mycsv")
    write_csv_task(corpora / "othercsv", text_field="phrase")
    (work / "mirror").mkdir(exist_ok=True)  # local entries need no mirror
    config = {
        "mirror": str(work / "mirror"), "offline": True,
        "study": {"models": ["tiny"], "tasks": ["mycsv"], "treebanks": ["fr", "zh", "corefud"],
                  "wiki": False, "glove": False},
        "models": {"tiny": {"path": str(model), "max_length": 32}},
        "treebanks": {
            "fr": {"path": str(corpora / "fr"), "splits": {"train": "train-*.conllu", "dev": ["dev.conllu"]},
                   "language": "fr", "name": "French (tiny)"},
            "zh": {"path": str(corpora / "zh"), "splits": {"train": "train.conllu", "dev": "dev.conllu"},
                   "language": "zh"},
            "corefud": {"path": str(corpora / "corefud"), "splits": {"dev": "*.conllu"}},
        },
        "tasks": {"mycsv": csv_task_entry(corpora / "mycsv")},
        "data": {"coreference_treebanks": ["corefud"]},
        "annotation": {"annotator": "spacy"},
        # The pretrained checkpoint alone: no test of the entries reads a random-init control (the tiny study has one).
        "attention": {"checkpoints": ["pretrained"], "num_shards": 1, "threads": 1,
                      "input_protocol": "text", "corpora": {"fr": ["train", "dev"], "zh": ["train", "dev"]}},
        "syntax": {"treebanks": ["fr", "zh"], "coref_treebank": "corefud", "coref_split": "dev",
                   "relations": ["all", "det", "nsubj", "obj"], "bootstrap_resamples": 20, "probe_epochs": 1},
        "finetune": {"epochs": 1, "batch_size": 4, "max_train_examples": 8, "threads": 1, "save_steps": []},
        # The fine-tuned checkpoint's roles are the tiny study's to test: none here.
        "roles": {"finetuned": []},
        "finetune_effects": {"trajectory": False, "bootstrap_resamples": 20, "label_sample": 40,
                             "cnn": {"epochs": 2, "size": 8}},
    }
    (work / "open.yaml").write_text(yaml.safe_dump(config, allow_unicode=True), encoding="utf-8")
    return work
