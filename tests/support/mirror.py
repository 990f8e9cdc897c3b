"""The tiny offline mirror and the tiny study that the end-to-end tests run the real DAG on."""

from __future__ import annotations

from pathlib import Path

import yaml

from .paths import REPO

# Which of a corpus's mirror candidates (data/registry.py, best first) the tiny mirror writes where the best is not
# the one: WikiText-2's test file and GloVe's first 50,000 words, the small files an offline mirror may hold.
SMALL_CANDIDATE = {"wiki": -1, "glove": -1}


def mirror_files(corpus: str, split: str) -> list[str]:
    """Where an offline mirror keeps a built-in corpus's split, relative to its root, as the workflow looks for it:
    a GLUE task's, WiC's, the Wikipedia text's and GloVe's from ``data/registry.py``'s ``mirror_candidates``, a
    treebank's from its entry in config.yaml (``TreebankEntry.mirror_candidates``)."""
    from workflow_scripts.data.entries import treebank_entry
    from workflow_scripts.data.registry import mirror_candidates

    treebanks = yaml.safe_load((REPO / "config.yaml").read_text(encoding="utf-8"))["treebanks"]
    if corpus in treebanks:
        return treebank_entry(corpus, treebanks[corpus], treebank_splits=[split]).mirror_candidates(split)[0]
    return mirror_candidates(corpus, split)[SMALL_CANDIDATE.get(corpus, 0)]


def write_in_mirror(root: Path, corpus: str, split: str, *texts: str) -> Path:
    """``texts`` written as the mirror files of ``corpus``/``split`` under ``root`` (one text per file, in the
    order ``mirror_files`` gives them); returns the first file."""
    paths = [root / name for name in mirror_files(corpus, split)]
    assert len(paths) == len(texts), (corpus, split, paths)
    for path, text in zip(paths, texts):
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(text, encoding="utf-8")
    return paths[0]

COLA = [("gj04", 1, "", "The cat sat on the mat."), ("gj04", 0, "*", "Cat the mat on sat the."),
        ("gj04", 1, "", "They walked quickly."), ("gj04", 0, "*", "Walked they quickly the."),
        ("gj04", 1, "", "She sees the big dog."), ("gj04", 0, "*", "Sees she dog big the the.")]

CONLLU = """# newdoc id = doc{n}
# global.Entity = GRP-etype-infstat-salience-centering-minspan-link-identity
# sent_id = doc{n}-1
# text = The dog sat. It won't go.
1\tThe\tthe\tDET\tDT\t_\t2\tdet\t_\tEntity=(1-animal-new-sssss-cf1-1-coref
2\tdog\tdog\tNOUN\tNN\t_\t3\tnsubj\t_\tEntity=1)
3\tsat\tsit\tVERB\tVBD\t_\t0\troot\t_\tSpaceAfter=No
4\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_
5\tIt\tit\tPRON\tPRP\t_\t8\tnsubj\t_\tEntity=(1-animal-giv-sssss-cf1-1-coref)
6-7\twon't\t_\t_\t_\t_\t_\t_\t_\t_
6\two\twill\tAUX\tMD\t_\t8\taux\t_\t_
7\tn't\tnot\tPART\tRB\t_\t8\tadvmod\t_\t_
8\tgo\tgo\tVERB\tVB\t_\t3\tparataxis\t_\tSpaceAfter=No
9\t.\t.\tPUNCT\t.\t_\t3\tpunct\t_\t_

# sent_id = doc{n}-2
# text = She sees the big house.
1\tShe\tshe\tPRON\tPRP\t_\t2\tnsubj\t_\tEntity=(2-person-new-sssss-cf1-1-sgl)
2\tsees\tsee\tVERB\tVBZ\t_\t0\troot\t_\t_
3\tthe\tthe\tDET\tDT\t_\t5\tdet\t_\tEntity=(3-place-new-sssss-cf1-1-sgl
4\tbig\tbig\tADJ\tJJ\t_\t5\tamod\t_\t_
5\thouse\thouse\tNOUN\tNN\t_\t2\tobj\t_\tEntity=3)|SpaceAfter=No
6\t.\t.\tPUNCT\t.\t_\t2\tpunct\t_\t_

"""

WIKI = "\n".join([
    " = Dogs = ", " The dog sat on the mat . It was big .", " They walked quickly on the mat .",
    " The cat sat . She sees the house .", " = = Cats = = ", " The big cat ran .", " It did not go .",
    " = Houses = ", " The house is red .", " The small house is new .", " We saw it .", ""])


def write_mirror(root: Path) -> Path:
    rows = "\n".join("\t".join(map(str, r)) for r in COLA) + "\n"
    write_in_mirror(root, "cola", "train", rows * 3)
    write_in_mirror(root, "cola", "dev", rows)
    for split, n in (("train", 12), ("dev", 6), ("test", 4)):
        data = [f"dog\tN\t1-{i % 2}\tThe dog sat .\t{'dog ran' if i % 2 else 'A dog'} quickly ." for i in range(n)]
        write_in_mirror(root, "wic", split, "\n".join(data) + "\n",
                        "\n".join("T" if i % 2 else "F" for i in range(n)) + "\n")
    for treebank in ("ewt", "gum"):
        for split in ("train", "dev", "test"):
            write_in_mirror(root, treebank, split, "".join(CONLLU.format(n=i) for i in range(3)))
    # RTE: in the mirror, but not in the study until a test adds it
    pairs = [f"{i}\tThe dog sat on the mat.\t{'A dog sat.' if i % 2 else 'The cat ran.'}\t"
             f"{'entailment' if i % 2 else 'not_entailment'}" for i in range(12)]
    write_in_mirror(root, "rte", "train", "index\tsentence1\tsentence2\tlabel\n" + "\n".join(pairs) + "\n")
    write_in_mirror(root, "rte", "dev", "index\tsentence1\tsentence2\tlabel\n" + "\n".join(pairs[:6]) + "\n")
    write_in_mirror(root, "wiki", "segments", WIKI)
    words = ["the", "dog", "sat", "it", "go", "she", "sees", "big", "house", "."]
    vectors = [w + " " + " ".join(f"{(i * 7 + j) % 11 / 10:.1f}" for j in range(50)) for i, w in enumerate(words)]
    write_in_mirror(root, "glove", "vectors", "\n".join(vectors) + "\n")
    return root


def write_tiny_study(work: Path, model: Path, num_shards: int = 1, relative_mirror: bool = False) -> Path:
    """A tiny study in ``work``: a tiny mirror (``work/mirror``) and ``work/tiny.yaml`` for the tiny model
    saved in ``model``; returns ``work``. Each dump is one shard unless ``num_shards`` says otherwise (the shared
    tiny study of tests/conftest.py has two: its tests check sharding). ``relative_mirror``: the config names the
    mirror relative to the study's folder, so that a copy of the study reads its own mirror with the same config."""
    mirror = write_mirror(work / "mirror")
    config = {
        "mirror": "mirror" if relative_mirror else str(mirror), "offline": True,
        # One task and two treebank splits keep the DAG small but cover every stage.
        "study": {"models": ["tiny"], "tasks": ["cola"], "treebanks": ["ewt", "gum"],
                  "wiki": True, "glove": True},
        "models": {"tiny": {"path": str(model), "max_length": 32}},
        "data": {"wiki": {"n_segments": 4, "seed": 1, "max_words": 24}, "treebank_splits": ["train", "dev"]},
        "annotation": {"annotator": "spacy"},
        # The attention weights alone: a second signal doubles the study's analyses (the norm signal goes through
        # the decoder and families study, tests/support/decoder_families.py).
        "attention": {"checkpoints": ["pretrained", "random"], "num_shards": num_shards, "threads": 1,
                      "signals": ["attention"],
                      "corpora": {"wiki": ["segments"], "ewt": ["train", "dev"], "gum": ["dev"]}},
        # Diagnostic sequences short enough for the tiny model's max_length (24 in one rerun test).
        "surface": {"diagnostics": {"sequences": 4, "length": 8, "batch_size": 4}},
        "ablation": {"max_examples": 8, "threads": 1},
        "finetune": {"epochs": 1, "batch_size": 4, "max_train_examples": 8, "threads": 1, "save_steps": []},
    }
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    return work
