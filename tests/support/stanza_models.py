"""Tiny stanza models trained on the spot, offline, so that tests can run ``stanza.Pipeline`` for real.

``train_tiny_stanza`` writes a small English treebank generated from templates (with multi-word tokens such as
"doesn't" = "does" + "n't" and "cannot" = "can" + "not"), tiny random word vectors and their stanza pretrain, then
trains a tokenizer, an MWT expander, a POS tagger and a dependency parser with tiny dimensions for a few steps on
the CPU, all in one child process.  Lemmas come from ``lemma_use_identity``.  ``stanza_pipeline_kwargs`` turns the
returned paths into the kwargs of ``stanza.Pipeline``.  The models only know the templates; they load and run.
"""

from __future__ import annotations

import json
import os
import random
import re
import subprocess
import sys
from pathlib import Path

_DETS = ["the", "a", "this", "every"]
_NOUNS = ["dog", "cat", "man", "woman", "bird", "child", "teacher", "house", "car", "book", "ball", "tree", "garden"]
_ADJS = ["big", "small", "red", "old", "happy", "quiet"]
_PRONS = ["he", "she", "it"]
_INTRANSITIVE = [("runs", "ran", "run"), ("sleeps", "slept", "sleep"), ("sits", "sat", "sit"),
                 ("walks", "walked", "walk"), ("barks", "barked", "bark")]
_TRANSITIVE = [("sees", "saw", "see"), ("likes", "liked", "like"), ("chases", "chased", "chase"),
               ("reads", "read", "read"), ("finds", "found", "find")]
_ADVS = ["quickly", "slowly", "today", "again"]
_ADPS = ["in", "on", "near", "under"]
# (surface of the multi-word token or None for two plain words, auxiliary, its xpos, negation)
_NEGATIONS = [("doesn't", "does", "VBZ", "n't"), ("didn't", "did", "VBD", "n't"), ("can't", "ca", "MD", "n't"),
              ("won't", "wo", "MD", "n't"), ("cannot", "can", "MD", "not"), (None, "does", "VBZ", "not"),
              (None, "will", "MD", "not")]
_LEMMAS = {"n't": "not", "ca": "can", "wo": "will", "does": "do", "did": "do"}
_PUNCT = {",", ".", "!", "?"}


class _Sentence:
    """Words as [form, lemma, upos, xpos, head, deprel], and multi-word tokens keyed by their first word id."""

    def __init__(self) -> None:
        self.rows: list[list] = []
        self.mwts: dict[int, tuple[str, int]] = {}

    def add(self, form: str, upos: str, xpos: str, lemma: str | None = None) -> int:
        self.rows.append([form, lemma or _LEMMAS.get(form, form), upos, xpos, 0, "root"])
        return len(self.rows)

    def attach(self, word: int, head: int, deprel: str) -> None:
        self.rows[word - 1][4:6] = [head, deprel]

    def noun_phrase(self, rng: random.Random) -> int:
        det = self.add(rng.choice(_DETS), "DET", "DT")
        adj = self.add(rng.choice(_ADJS), "ADJ", "JJ") if rng.random() < 0.4 else None
        noun = self.add(rng.choice(_NOUNS), "NOUN", "NN")
        for word, deprel in ((det, "det"), (adj, "amod")):
            if word:
                self.attach(word, noun, deprel)
        return noun

    def clause(self, rng: random.Random, question: bool = False) -> int:
        aux = part = None
        if question:
            aux = self.add(*rng.choice([("does", "AUX", "VBZ"), ("did", "AUX", "VBD")]))
        subject = self.add(rng.choice(_PRONS), "PRON", "PRP") if rng.random() < 0.25 else self.noun_phrase(rng)
        if not question and rng.random() < 0.35:
            surface, aux_form, aux_xpos, neg = rng.choice(_NEGATIONS)
            aux, part = self.add(aux_form, "AUX", aux_xpos), self.add(neg, "PART", "RB")
            if surface:
                self.mwts[aux] = (surface, part)
        transitive = rng.random() < 0.5
        present, past, base = rng.choice(_TRANSITIVE if transitive else _INTRANSITIVE)
        form, xpos = (base, "VB") if aux else rng.choice([(present, "VBZ"), (past, "VBD")])
        verb = self.add(form, "VERB", xpos, lemma=base)
        self.attach(subject, verb, "nsubj")
        for word, deprel in ((aux, "aux"), (part, "advmod")):
            if word:
                self.attach(word, verb, deprel)
        if transitive:
            self.attach(self.noun_phrase(rng), verb, "obj")
        if rng.random() < 0.3:
            self.attach(self.add(rng.choice(_ADVS), "ADV", "RB"), verb, "advmod")
        if rng.random() < 0.3:
            case = self.add(rng.choice(_ADPS), "ADP", "IN")
            noun = self.noun_phrase(rng)
            self.attach(case, noun, "case")
            self.attach(noun, verb, "obl")
        return verb

    def tokens(self) -> list[tuple[str, str, list[int]]]:
        """(id column, form, word ids) of each token, the first one capitalised."""
        out, word = [], 1
        while word <= len(self.rows):
            if word in self.mwts:
                surface, last = self.mwts[word]
                out.append((f"{word}-{last}", surface, list(range(word, last + 1))))
                word = last + 1
            else:
                out.append((str(word), self.rows[word - 1][0], [word]))
                word += 1
        return out

    def conllu(self, sent_id: str) -> str:
        self.rows[0][0] = self.rows[0][0].capitalize()
        if 1 in self.mwts:
            self.mwts[1] = (self.mwts[1][0].capitalize(), self.mwts[1][1])
        tokens = self.tokens()
        lines, text = [], ""
        for index, (id_, form, words) in enumerate(tokens):
            glued = index + 1 < len(tokens) and tokens[index + 1][1] in _PUNCT
            text += form + ("" if glued or index + 1 == len(tokens) else " ")
            misc = "SpaceAfter=No" if glued else "_"
            if len(words) > 1:
                lines.append(f"{id_}\t{form}\t_\t_\t_\t_\t_\t_\t_\t{misc}")
            for word in words:
                form_, lemma, upos, xpos, head, deprel = self.rows[word - 1]
                word_misc = misc if len(words) == 1 else "_"
                lines.append(f"{word}\t{form_}\t{lemma}\t{upos}\t{xpos}\t_\t{head}\t{deprel}\t_\t{word_misc}")
        return "\n".join([f"# sent_id = {sent_id}", f"# text = {text}", *lines]) + "\n\n"


def _sentence(rng: random.Random) -> _Sentence:
    sentence = _Sentence()
    question = rng.random() < 0.12
    root = sentence.clause(rng, question=question)
    if not question and rng.random() < 0.2:
        comma, cc = sentence.add(",", "PUNCT", ","), sentence.add("and", "CCONJ", "CC")
        second = sentence.clause(rng)
        sentence.attach(comma, second, "punct")
        sentence.attach(cc, second, "cc")
        sentence.attach(second, root, "conj")
    final = "?" if question else rng.choice([".", ".", ".", "!"])
    sentence.attach(sentence.add(final, "PUNCT", "."), root, "punct")
    return sentence


def write_tiny_treebank(path: Path, sentences: int = 120, seed: int = 0, doc_size: int = 6) -> Path:
    """A templated English CoNLL-U treebank, with a ``# newdoc`` every ``doc_size`` sentences."""
    rng = random.Random(seed)
    chunks = []
    for index in range(sentences):
        if index % doc_size == 0:
            chunks.append(f"# newdoc id = doc{index // doc_size}\n")
        chunks.append(_sentence(rng).conllu(f"s{seed}-{index}"))
    path.write_text("".join(chunks), encoding="utf-8")
    return path


def write_vectors(path: Path, conllu_files: list[Path], dim: int = 16, seed: int = 0) -> Path:
    """Random word vectors ("word v1 ... vN") for every word form and lowercased form in ``conllu_files``."""
    words: dict[str, None] = {}
    for conllu in conllu_files:
        for line in conllu.read_text(encoding="utf-8").splitlines():
            cols = line.split("\t")
            if len(cols) == 10 and cols[0].isdigit():
                words.update(dict.fromkeys([cols[1], cols[1].lower()]))
    rng = random.Random(seed)
    rows = [" ".join([word, *(f"{rng.uniform(-1, 1):.4f}" for _ in range(dim))]) for word in words]
    path.write_text("\n".join(rows) + "\n", encoding="utf-8")
    return path


# The least resources.json with which stanza.Pipeline(lang="en", dir=..., download_method=None) starts for every
# kwargs of stanza_pipeline_kwargs: "packages" and "tokenize" are read when raw text meets no mwt processor, and
# tokenize "default" keeps the pretokenized tokenizer in the load list.
RESOURCES = {"en": {"lang_name": "English", "packages": {}, "tokenize": {"default": {}}}}

_DRIVER = "import importlib, json, sys\nfor module, args in json.load(open(sys.argv[1])):\n" \
          "    importlib.import_module(module).main(args)\n"


def train_tiny_stanza(root: Path, treebank: Path | None = None) -> dict[str, str | None]:
    """Train a tiny tokenizer, MWT expander, tagger and parser under ``root``; return their paths and ``dir``.

    ``treebank`` (CoNLL-U) replaces the generated one and also serves as dev set; if it has no multi-word token,
    no MWT expander is trained and ``mwt_model_path`` is None.  ``root/train.log`` keeps the trainers' output.
    """
    from stanza.models.common.pretrain import Pretrain
    from stanza.utils.datasets import conllu_to_text, prepare_tokenizer_data

    root = Path(root)
    data, models, resources = root / "data", root / "models", root / "resources"
    for directory in (data, models, resources / "en"):
        directory.mkdir(parents=True, exist_ok=True)
    if treebank is None:
        train, dev = write_tiny_treebank(data / "train.conllu"), write_tiny_treebank(data / "dev.conllu", 24, seed=1)
    else:  # a given treebank is its own dev set, so that dev never has labels that training has not seen
        train = dev = Path(treebank)
    has_mwt = re.search(r"^\d+-\d+\t", train.read_text(encoding="utf-8"), re.MULTILINE) is not None
    vectors = write_vectors(data / "vectors.txt", [train, dev])
    pretrain = models / "pretrain.pt"
    Pretrain(filename=str(pretrain), vec_filename=str(vectors)).load()  # reads the text vectors, saves the .pt
    for split, conllu in (("train", train), ("dev", dev)):
        conllu_to_text.main([str(conllu), str(data / f"{split}.txt")])
        prepare_tokenizer_data.main([str(data / f"{split}.txt"), str(conllu), "-o", str(data / f"{split}.toklabels"),
                                     "-m", str(data / f"{split}-mwt.json")])

    common = ["--lang", "en", "--shorthand", "en_tiny", "--save_dir", str(models), "--cpu"]
    # tiny dimensions, a high learning rate and little dropout: the templated data is learnt in a few dozen steps
    tiny = ["--hidden_dim", "32", "--char_hidden_dim", "16", "--deep_biaff_hidden_dim", "32", "--word_emb_dim", "16",
            "--char_emb_dim", "16", "--tag_emb_dim", "8", "--transformed_dim", "16", "--num_layers", "1",
            "--dropout", "0.1", "--word_dropout", "0.05", "--optim", "adam", "--no_second_optim",
            "--wordvec_pretrain_file", str(pretrain), "--train_file", str(train), "--eval_file", str(dev),
            "--output_file", str(data / "pred.conllu"), "--max_steps", "60", "--eval_interval", "60", *common]
    jobs = [  # the tagger needs its one evaluation (at the last step): with none, its main() ends in an error
        ("stanza.models.tokenizer", [
            "--txt_file", str(data / "train.txt"), "--label_file", str(data / "train.toklabels"),
            "--mwt_json_file", str(data / "train-mwt.json"), "--dev_txt_file", str(data / "dev.txt"),
            "--dev_label_file", str(data / "dev.toklabels"), "--dev_conll_gold", str(dev), "--emb_dim", "16",
            "--hidden_dim", "16", "--steps", "300", "--eval_steps", "100000", "--batch_size", "16",
            "--save_name", "tokenize.pt", *common]),
        ("stanza.models.mwt_expander", [  # with no multi-word token to learn, this one is left out below
            "--train_file", str(train), "--eval_file", str(dev), "--gold_file", str(dev),
            "--output_file", str(data / "mwt_pred.conllu"), "--hidden_dim", "16", "--emb_dim", "8",
            "--num_epoch", "2", "--save_name", "mwt.pt", *common]),
        ("stanza.models.tagger", [*tiny, "--composite_deep_biaff_hidden_dim", "16", "--lr", "0.02",
                                  "--save_name", "pos.pt"]),
        ("stanza.models.parser", [*tiny, "--deep_biaff_output_dim", "16", "--lr", "0.01", "--no_checkpoint",
                                  "--save_name", "depparse.pt"]),
    ]
    jobs = [job for job in jobs if has_mwt or job[0] != "stanza.models.mwt_expander"]
    (data / "jobs.json").write_text(json.dumps(jobs), encoding="utf-8")
    # One thread: the suite's other worker keeps the second core busy, and two threads spinning on one core took the
    # training from 20 s to 60 s (alone, one thread is as fast as two).
    env = {**os.environ, "CUDA_VISIBLE_DEVICES": "", "HF_HUB_OFFLINE": "1", "TRANSFORMERS_OFFLINE": "1",
           "OMP_NUM_THREADS": "1", "MKL_NUM_THREADS": "1"}
    result = subprocess.run([sys.executable, "-c", _DRIVER, str(data / "jobs.json")], cwd=root, env=env,
                            capture_output=True, text=True)
    (root / "train.log").write_text(result.stdout + result.stderr, encoding="utf-8")
    if result.returncode != 0:
        raise RuntimeError(f"tiny stanza training failed, see {root / 'train.log'}:\n{result.stderr[-4000:]}")

    (resources / "resources.json").write_text(json.dumps(RESOURCES), encoding="utf-8")
    names = ["tokenize", "mwt", "pos", "depparse"] if has_mwt else ["tokenize", "pos", "depparse"]
    paths: dict = {f"{name}_model_path": str(models / f"{name}.pt") for name in names}
    for name, path in paths.items():
        if not Path(path).is_file():
            raise RuntimeError(f"tiny stanza training wrote no {name} at {path}, see {root / 'train.log'}")
    paths.setdefault("mwt_model_path", None)
    return {**paths, "pos_pretrain_path": str(pretrain), "depparse_pretrain_path": str(pretrain), "dir": str(resources)}


def stanza_pipeline_kwargs(paths: dict, *, pretokenized: bool) -> dict:
    """Kwargs for ``stanza.Pipeline`` that load exactly the models of ``train_tiny_stanza``, with no network."""
    kwargs = {"lang": "en", "dir": paths["dir"], "download_method": None, "lemma_use_identity": True,
              "tokenize_pretokenized": pretokenized, "pos_model_path": paths["pos_model_path"],
              "pos_pretrain_path": paths["pos_pretrain_path"], "depparse_model_path": paths["depparse_model_path"],
              "depparse_pretrain_path": paths["depparse_pretrain_path"]}
    if pretokenized:
        return {**kwargs, "processors": "tokenize,pos,lemma,depparse"}
    kwargs["tokenize_model_path"] = paths["tokenize_model_path"]
    if paths.get("mwt_model_path"):
        return {**kwargs, "processors": "tokenize,mwt,pos,lemma,depparse", "mwt_model_path": paths["mwt_model_path"]}
    return {**kwargs, "processors": "tokenize,pos,lemma,depparse"}


def as_stanza_models(paths: dict) -> dict[str, str]:
    """The models of ``train_tiny_stanza`` as the config's ``annotation.stanza_models`` map."""
    names = {"tokenize": "tokenize_model_path", "mwt": "mwt_model_path", "pos": "pos_model_path",
             "pos_pretrain": "pos_pretrain_path", "depparse": "depparse_model_path",
             "depparse_pretrain": "depparse_pretrain_path"}
    return {key: paths[name] for key, name in names.items() if paths.get(name)}


def write_stanza_config(work: Path, stanza: dict) -> Path:
    """``work/stanza.yaml``: the study's config (``work/tiny.yaml``, the tiny study of tests/support/mirror.py) with
    its CoLA annotated by the tiny stanza models ``stanza`` (``train_tiny_stanza``'s), analysed with the pretrained
    checkpoint only (no fine-tuning, no treebank, no wiki: the branch that annotation feeds); returns ``work``."""
    import yaml

    config = yaml.safe_load((work / "tiny.yaml").read_text(encoding="utf-8"))
    config["study"].update(tasks=["cola"], treebanks=[], wiki=False, glove=False)
    config["annotation"] = {"annotator": "stanza", "stanza_dir": None, "stanza_models": as_stanza_models(stanza)}
    config["attention"]["corpora"] = {}
    config["finetune"]["tasks"] = []
    (work / "stanza.yaml").write_text(yaml.safe_dump(config), encoding="utf-8")
    return work
