"""Shared fixtures for every test folder: tiny models built by the tests themselves, and the studies the end-to-end
tests share, each built once per run of the suite, by the first of its xdist workers that asks for it
(tests/support/shared_builds.py).

Plain helpers (no fixtures) live in tests/support and are imported from there, never from here.
"""

from __future__ import annotations

# First of all, before huggingface_hub or torch is imported: the suite runs the same whatever the user's shell holds
# (HF_HUB_OFFLINE, ATLAS_WARM_START, thread counts...; tests/support/environment.py).
from support.environment import clean_environment

clean_environment()

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from support.decoder_families import TARGETS as FAMILIES_TARGETS  # noqa: E402
from support.decoder_families import write_families_study  # noqa: E402
from support.mirror import write_tiny_study  # noqa: E402
from support.open_corpora import save_open_bert, write_open_study  # noqa: E402
from support.shared_builds import build_once, run_study, shared_root  # noqa: E402
from support.tiny_models import save_tiny_gpt2, save_tiny_model  # noqa: E402
from support.workflow_runs import copy_study  # noqa: E402


def pytest_collection_modifyitems(items):
    """The end-to-end tests first: each worker starts on the studies, the longest work, and the short unit tests fill
    in the end of the run (pyproject.toml's ``--dist loadfile`` hands the workers whole files in this order)."""
    items.sort(key=lambda item: item.get_closest_marker("e2e") is None)


def _built_once(request, name: str, build):
    """What ``build`` made of the folder ``name`` that the suite's workers share (tests/support/shared_builds.py)."""
    return build_once(shared_root(request.config, request.getfixturevalue("tmp_path_factory")), name, build)


def _shared(request, name: str, build) -> Path:
    return Path(_built_once(request, name, build))


@pytest.fixture(scope="session")
def tiny_bert(request) -> Path:
    return _shared(request, "tiny-bert", lambda folder: save_tiny_model(folder, kind="bert"))


@pytest.fixture(scope="session")
def tiny_bert_cased(request) -> Path:
    return _shared(request, "tiny-bert-cased", lambda folder: save_tiny_model(folder, kind="bert", cased=True))


@pytest.fixture(scope="session")
def tiny_roberta(request) -> Path:
    return _shared(request, "tiny-roberta",
                   lambda folder: save_tiny_model(folder, kind="roberta", layers=3, heads=4))


@pytest.fixture(scope="session")
def tiny_gpt2(request, tiny_roberta) -> Path:
    """A tiny GPT-2 (random weights) with a byte-level BPE tokenizer (the tiny RoBERTa's: GPT-2's vocabulary
    scheme)."""
    return _shared(request, "tiny-gpt2", lambda folder: save_tiny_gpt2(folder, tiny_roberta))


@pytest.fixture(scope="session")
def tiny_stanza(request) -> dict:
    """Tiny stanza models (tokenizer, multi-word token expander, tagger, parser) trained here, offline, on a
    tiny treebank the test writes (tests/support/stanza_models.py; about 15-25 s once per run)."""
    pytest.importorskip("stanza")
    from support.stanza_models import train_tiny_stanza

    return _built_once(request, "tiny-stanza", train_tiny_stanza)


# The studies the end-to-end tests share: each fixture writes its study (models, mirror, config) and runs the real
# DAG on it, once per run of the suite. A test reads a study or dry-runs it, never writes into it: one that damages,
# reruns or extends it works on a copy of its own (``support.workflow_runs.copy_study``).
@pytest.fixture(scope="session")
def tiny_study(request) -> Path:
    """The tiny study (tests/support/mirror.py: every stage on the tiny BERT, a tiny mirror, two shards per dump):
    the end-to-end tests of the study as a whole read it, and those that damage, rerun or extend it copy it."""
    tiny_bert = request.getfixturevalue("tiny_bert")
    return _shared(request, "tiny-study", lambda folder: run_study(
        write_tiny_study(folder, tiny_bert, num_shards=2, relative_mirror=True)))


@pytest.fixture(scope="session")
def families_study(request) -> Path:
    """The decoder and families study (tests/support/decoder_families.py: five families, a hand-set GPT-2 among
    them), built to the tables its tests read."""
    tiny_roberta = request.getfixturevalue("tiny_roberta")
    return _shared(request, "families-study", lambda folder: run_study(
        write_families_study(folder, tiny_roberta), *FAMILIES_TARGETS))


@pytest.fixture(scope="session")
def open_study(request) -> Path:
    """The study of the researcher's own corpora (tests/support/open_corpora.py: a French, a Chinese and a CorefUD
    treebank and a local CSV task)."""
    return _shared(request, "open-study", lambda folder: run_study(
        write_open_study(folder, save_open_bert(folder / "model")), configfile="open.yaml"))


@pytest.fixture(scope="session")
def stanza_study(request) -> Path:
    """The tiny study's CoLA annotated by tiny stanza models (tests/workflow/test_stanza_study.py): a copy of the built
    tiny study, whose data, model and dumps its run reuses, with the annotator changed."""
    from support.stanza_models import write_stanza_config

    stanza = request.getfixturevalue("tiny_stanza")
    tiny_study = request.getfixturevalue("tiny_study")
    return _shared(request, "stanza-study", lambda folder: run_study(
        write_stanza_config(copy_study(tiny_study, folder), stanza), configfile="stanza.yaml"))
