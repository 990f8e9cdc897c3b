"""Shared fixtures for every test folder: tiny models built by the tests themselves, and the studies the end-to-end
tests share, each built once per session, in the background from its start (``shared_studies``).

Plain helpers (no fixtures) live in tests/support and are imported from there, never from here.
"""

from __future__ import annotations

# First of all, before huggingface_hub or torch is imported: the suite runs the same whatever the user's shell holds
# (HF_HUB_OFFLINE, ATLAS_WARM_START, thread counts...; tests/support/environment.py).
from support.environment import clean_environment

clean_environment()

from pathlib import Path  # noqa: E402

import pytest  # noqa: E402

from support.background_builds import Build, BuildQueue  # noqa: E402
from support.decoder_families import write_families_study  # noqa: E402
from support.mirror import write_tiny_study  # noqa: E402
from support.open_corpora import save_open_bert, write_open_study  # noqa: E402
from support.tiny_models import save_tiny_gpt2, save_tiny_model  # noqa: E402
from support.workflow_runs import console, copy_study  # noqa: E402


@pytest.fixture(scope="session")
def tiny_bert(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert"), kind="bert")


@pytest.fixture(scope="session")
def tiny_bert_cased(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-bert-cased"), kind="bert", cased=True)


@pytest.fixture(scope="session")
def tiny_roberta(tmp_path_factory) -> Path:
    return save_tiny_model(tmp_path_factory.mktemp("tiny-roberta"), kind="roberta", layers=3, heads=4)


@pytest.fixture(scope="session")
def tiny_gpt2(tmp_path_factory, tiny_roberta) -> Path:
    """A tiny GPT-2 (random weights) with a byte-level BPE tokenizer (the tiny RoBERTa's: GPT-2's vocabulary
    scheme)."""
    return save_tiny_gpt2(tmp_path_factory.mktemp("tiny-gpt2"), tiny_roberta)


@pytest.fixture(scope="session")
def tiny_stanza(tmp_path_factory) -> dict:
    """Tiny stanza models (tokenizer, multi-word token expander, tagger, parser) trained here, offline, on a
    tiny treebank the test writes (tests/support/stanza_models.py; about 15-25 s once per session)."""
    pytest.importorskip("stanza")
    from support.stanza_models import train_tiny_stanza

    return train_tiny_stanza(tmp_path_factory.mktemp("tiny-stanza"))


# The studies the end-to-end tests share, each written (models, mirror, config) with its run not started yet
# (tests/support/background_builds.py), by the fixture that gives it.
def _tiny_study(request, factory) -> Build:
    """Every stage on the tiny BERT, two shards per dump: the tiny study (tests/support/mirror.py)."""
    return Build(write_tiny_study(factory.mktemp("tiny-study"), request.getfixturevalue("tiny_bert"), num_shards=2,
                                  relative_mirror=True))


def _decoder_study(request, factory) -> Build:
    """Every stage on the tiny GPT-2 (tests/workflow/test_decoder_study.py)."""
    return Build(write_tiny_study(factory.mktemp("decoder-study"), request.getfixturevalue("tiny_gpt2")))


def _families_study(request, factory) -> Build:
    """Five families, to the tables their tests read (tests/workflow/test_decoder_families.py)."""
    return Build(*write_families_study(factory.mktemp("decoder-families"), request.getfixturevalue("tiny_roberta")))


def _open_study(request, factory) -> Build:
    """A French, a Chinese and a CorefUD treebank and a local CSV task (tests/workflow/test_open_study.py)."""
    work = factory.mktemp("open")
    return Build(write_open_study(work, save_open_bert(work / "model")), configfile="open.yaml")


def _stanza_study(request, factory) -> Build:
    """The tiny study's CoLA annotated by tiny stanza models (tests/workflow/test_stanza_study.py): a copy of the built
    tiny study, whose data, model and dumps its run reuses, with the annotator changed."""
    from support.stanza_models import write_stanza_config

    stanza = request.getfixturevalue("tiny_stanza")  # trained first: the study's run waits for nothing
    work = copy_study(request.getfixturevalue("tiny_study"), factory.mktemp("stanza-study") / "study")
    return Build(write_stanza_config(work, stanza), configfile="stanza.yaml")


SHARED_STUDIES = {"tiny_study": _tiny_study, "decoder_study": _decoder_study, "families_study": _families_study,
                  "open_study": _open_study, "stanza_study": _stanza_study}


@pytest.fixture(scope="session")
def shared_studies(request, tmp_path_factory):
    """The shared studies, each built once per session when a test first asks for it (the fixtures below).

    Queuing every study at the session's start, to build them in the background while the unit tests ran, did not
    pay: in its one full run (2026-11-28) the suite took 24 min (15.6 the day before without it), the first test
    waiting 773 s for the studies' setup (stanza's tiny models trained among it). So each is built when first asked
    for, by the queue's one thread, as before."""
    queue = BuildQueue()
    yield queue
    queue.close()


def _built(request, name: str) -> Path:
    """The shared study ``name`` once its run ended (queued now if the session did not), its folder."""
    queue = request.getfixturevalue("shared_studies")
    build = queue.builds.get(name) or queue.queue(name, SHARED_STUDIES[name](
        request, request.getfixturevalue("tmp_path_factory")))
    result = build.result()
    assert result.returncode == 0, console(result)[-6000:]
    return build.work


@pytest.fixture(scope="session")
def tiny_study(request) -> Path:
    """The tiny study (tests/support/mirror.py: every stage on the tiny BERT, a tiny mirror, two shards per dump),
    built with the real DAG once per test session, in the background from the session's start: the end-to-end
    tests of the study as a whole read it, and those that damage, rerun or extend it work on a copy of their own
    (``support.workflow_runs.copy_study``). Never write into it."""
    return _built(request, "tiny_study")


@pytest.fixture(scope="session")
def decoder_study(request) -> Path:
    """The tiny study on the tiny GPT-2, built whole once per session (tests/workflow/test_decoder_study.py reads
    it; a test that changes it works on a copy)."""
    return _built(request, "decoder_study")


@pytest.fixture(scope="session")
def families_study(request) -> Path:
    """The five-family study of tests/support/decoder_families.py, built to its tables once per session."""
    return _built(request, "families_study")


@pytest.fixture(scope="session")
def stanza_study(request) -> Path:
    """The tiny study's CoLA annotated by stanza (tests/support/stanza_models.py), built once per session."""
    return _built(request, "stanza_study")


@pytest.fixture(scope="session")
def open_study(request) -> Path:
    """The study of the researcher's own corpora (tests/support/open_corpora.py), built once per session."""
    return _built(request, "open_study")
