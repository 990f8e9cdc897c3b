"""Report captions show config text literally: Snakemake fills a caption's RST with Jinja (unescaped) and renders
it with docutils, which would run a directive (``.. raw:: html``) or link a ``javascript:`` URI held by a value.
The annotator text holds free config text (annotation.spacy_model, stanza paths: study/annotation.py)."""

from __future__ import annotations

import html
import re
from types import SimpleNamespace

import pytest
from docutils.core import publish_parts
from jinja2 import Environment

from support.paths import REPO
from support.study_configs import MODEL, one_model, study_of

CAPTIONS = ["report/report_summary_figure.rst", "report/report_paper_comparison.rst"]
RAW = "x\n\n.. raw:: html\n\n   <script>window.__pwned=1</script>\n\n"
LINK = "javascript:alert(1)"


def _rendered(caption: str, context: dict, *, key: str = "annotator_caption") -> str:
    """The caption's HTML as snakemake --report makes it (snakemake/report/__init__.py: Environment with these
    options, then docutils' publish_parts)."""
    env = Environment(trim_blocks=True, lstrip_blocks=True)
    context = {**context, "annotator_caption": context[key]}
    snakemake = SimpleNamespace(params=SimpleNamespace(context=context), wildcards=SimpleNamespace(model=MODEL))
    text = env.from_string((REPO / caption).read_text(encoding="utf-8")).render(snakemake=snakemake)
    return publish_parts(text, writer="html")["body"]


def _text(body: str) -> str:
    return re.sub(r"\s+", " ", html.unescape(re.sub(r"<[^>]+>", "", body)))


@pytest.mark.parametrize("caption", CAPTIONS)
@pytest.mark.parametrize("annotation", [
    {"annotator": "spacy", "spacy_model": RAW},
    {"annotator": "spacy", "spacy_model": f"see {LINK} or `here <{LINK}>`_"},
    {"annotator": "stanza", "stanza_dir": f"{LINK}/.. include:: x", "stanza_models": None},
])
def test_config_text_in_a_caption_shows_literally_and_is_no_markup(caption, annotation):
    context = study_of({**one_model(tasks=["cola"]), "annotation": annotation}).report.report_context()
    body = _rendered(caption, context)
    assert "<script" not in body and "href=\"javascript" not in body and "system-message" not in body
    # The words are all there, as written (line breaks as spaces).
    assert re.sub(r"\s+", " ", context["annotator"]) in _text(body)


@pytest.mark.parametrize("caption", CAPTIONS)
def test_the_default_annotator_reads_as_before(caption):
    context = study_of(one_model(tasks=["cola"])).report.report_context()
    assert context["annotator"] == "stanza with the models of resources/stanza/en"  # config.yaml's
    assert f"by {context['annotator']}" in _text(_rendered(caption, context))


def test_the_same_text_unescaped_would_be_markup():
    """The check above is no tautology: the plain annotator text, put in as is, runs and links."""
    context = study_of({**one_model(tasks=["cola"]), "annotation": {"annotator": "spacy", "spacy_model": RAW}})
    rendered = _rendered(CAPTIONS[0], context.report.report_context(), key="annotator")
    assert "<script>window.__pwned=1</script>" in rendered
    linked = study_of({**one_model(tasks=["cola"]), "annotation": {"annotator": "spacy", "spacy_model": LINK}})
    assert 'href="javascript:' in _rendered(CAPTIONS[0], linked.report.report_context(), key="annotator")
