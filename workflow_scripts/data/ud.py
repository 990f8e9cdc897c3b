"""Universal Dependencies treebanks (EWT, GUM): CoNLL-U to sentence and mention tables.

Parsing of each sentence block is left to the ``conllu`` package; this module
adds what the study needs on top: 0-based heads, character offsets of every
word in the sentence text (for alignment to model tokens, METHODS 6), and
GUM's coreference mentions from the CorefUD ``Entity=`` bracket notation.
``ud_checks`` rejects what ``conllu`` lets through (a non-integer HEAD, a
sentence with no root, two roots or a cycle), naming the offending line.
"""

from __future__ import annotations

import logging
from collections.abc import Iterator
from dataclasses import dataclass
from pathlib import Path

import conllu
import pyarrow as pa

from ..core.errors import InputFormatError
from .tables import MENTION_SCHEMA, TREEBANK_SCHEMA
from .text_files import open_text
from .ud_checks import check_head_column, check_tree, unparsable_line
from .ud_sentence import Sentence, Word

log = logging.getLogger(__name__)


def _blocks(path: Path) -> Iterator[tuple[int, str]]:
    """Yield (first line number, text) of every blank-line-separated sentence block."""
    lines: list[str] = []
    start = 1
    # utf-8-sig: a leading byte-order mark (Windows editors add one) is dropped, as in the CSV/TSV readers;
    # left in, it would be glued to line 1 and reported as a malformed first line.
    with open_text(path, encoding="utf-8-sig") as handle:
        for number, line in enumerate(handle, start=1):
            if line.strip() == "":
                if lines:
                    yield start, "".join(lines)
                lines = []
                start = number + 1
            else:
                lines.append(line)
    if lines:
        yield start, "".join(lines)


def _line_numbers(block_start: int, block: str) -> dict[str, int]:
    """Line number of each ID's first token line inside a block (for messages and Word.line): one pass over the
    block, where asking line by line for each word took a quarter of the parse of a large treebank."""
    numbers: dict[str, int] = {}
    for offset, line in enumerate(block.split("\n")):
        numbers.setdefault(line.split("\t", 1)[0], block_start + offset)
    return numbers


def _word_line(lines: dict[str, int], block_start: int, token_id: object) -> int:
    """Line number of the token line with this ID (``lines``: the block's _line_numbers)."""
    wanted = "".join(map(str, token_id)) if isinstance(token_id, tuple) else str(token_id)
    return lines.get(wanted, block_start)


def _locate(text: str, form: str, cursor: int, path: Path, line: int) -> int:
    """Start of ``form`` in ``text`` at or after ``cursor``, skipping only whitespace."""
    if not form.strip():  # whitespace is what the search skips: such a form could never be found in the text
        points = " ".join(f"U+{ord(c):04X}" for c in form) or "nothing"
        raise InputFormatError(
            path, line, f"the FORM column holds only whitespace ({points}): a word must have characters",
            "put the word's characters in FORM (a space inside a word, e.g. a number like '10 000', is allowed "
            "between characters), or remove the token line")
    position = cursor
    while position < len(text) and text[position].isspace():
        position += 1
    if text.startswith(form, position):
        return position
    raise InputFormatError(
        path, line, f"token {form!r} does not follow at character {position} of the sentence "
        f"text {text!r}", "the '# text' comment and the FORM column must agree")


def parse_conllu(path: str | Path) -> list[Sentence]:
    """Parse a CoNLL-U file into sentences with 0-based heads and character offsets."""
    path = Path(path)
    sentences: list[Sentence] = []
    doc_id: str | None = None
    for block_start, block in _blocks(path):
        check_head_column(path, block_start, block)
        try:
            parsed = conllu.parse(block)
        except Exception as exc:
            raise InputFormatError(path, unparsable_line(block_start, block),
                                   f"unreadable CoNLL-U sentence: {exc}",
                                   "each token line needs 10 tab-separated columns") from exc
        if not parsed:
            continue
        tokenlist = parsed[0]
        for token in tokenlist:
            if len(token) < 10:
                line = _word_line(_line_numbers(block_start, block), block_start, token.get("id"))
                raise InputFormatError(path, line,
                                       f"token line has {len(token)} columns, CoNLL-U needs 10",
                                       "separate ID FORM LEMMA UPOS XPOS FEATS HEAD DEPREL DEPS MISC by tabs")
        meta = tokenlist.metadata
        doc_id = meta.get("newdoc id", doc_id)
        words = [t for t in tokenlist if isinstance(t["id"], int)]
        if not words:
            raise InputFormatError(path, block_start, "sentence has no word lines",
                                   "remove the empty sentence or add its tokens")
        sent_id = meta.get("sent_id") or f"{path.stem}-{len(sentences) + 1}"
        text = meta.get("text")
        if text is None:
            # UD defines the text as the surface tokens joined according to SpaceAfter.
            text = "".join(
                t["form"] + ("" if (t["misc"] or {}).get("SpaceAfter") == "No" else " ")
                for t in tokenlist if not (isinstance(t["id"], tuple) and t["id"][1] == ".") and
                not (isinstance(t["id"], int) and _in_range(t["id"], tokenlist))
            ).rstrip()
        sentence = Sentence(len(sentences), sent_id, doc_id, text, line=block_start)
        _add_words(sentence, tokenlist, words, path, block_start, block)
        check_tree(sentence, path)
        sentences.append(sentence)
    if not sentences:
        raise InputFormatError(path, None, "no sentences found", "is this a CoNLL-U file?")
    return sentences


def _in_range(word_id: int, tokenlist: conllu.TokenList) -> bool:
    return any(isinstance(t["id"], tuple) and t["id"][0] <= word_id <= t["id"][2] for t in tokenlist)


def _add_words(sentence: Sentence, tokenlist: conllu.TokenList, words: list, path: Path,
               block_start: int, block: str) -> None:
    # Word IDs must be 1..n in order: HEAD values and the 0-based heads below rely on it.
    for expected, word in enumerate(words, start=1):
        if word["id"] != expected:
            # By position, not by ID: a repeated ID would find its first occurrence.
            word_lines = [block_start + offset for offset, line in enumerate(block.split("\n"))
                          if line.split("\t", 1)[0].isdigit()]
            raise InputFormatError(path, word_lines[expected - 1],
                                   f"word ID {word['id']} where {expected} was expected in sentence "
                                   f"{sentence.sent_id!r}",
                                   "number the words of a sentence 1, 2, 3, ... in order, without gaps or repeats")
    index_of = {w["id"]: i for i, w in enumerate(words)}
    n_words = len(words)
    lines = _line_numbers(block_start, block)
    cursor = 0
    covered_until = 0  # last word id already placed through a multi-word token
    mwt_count = 0
    spans: dict[int, tuple[int, int, int]] = {}
    for token in tokenlist:
        token_id = token["id"]
        if isinstance(token_id, tuple) and token_id[1] == "-":
            first, last = token_id[0], token_id[2]
            line = _word_line(lines, block_start, token_id)
            start = _locate(sentence.text, token["form"], cursor, path, line)
            end = start + len(token["form"])
            parts = [w for w in words if first <= w["id"] <= last]
            # Split the surface span among the words when they spell it out (wo + n't).
            if "".join(p["form"] for p in parts).lower() == token["form"].lower():
                offset = start
                for part in parts:
                    spans[part["id"]] = (offset, offset + len(part["form"]), mwt_count)
                    offset += len(part["form"])
            else:
                for part in parts:
                    spans[part["id"]] = (start, end, mwt_count)
            mwt_count += 1
            cursor = end
            covered_until = last
        elif isinstance(token_id, int) and token_id > covered_until:
            line = _word_line(lines, block_start, token_id)
            start = _locate(sentence.text, token["form"], cursor, path, line)
            cursor = start + len(token["form"])
            spans[token_id] = (start, cursor, -1)
    for word in words:
        line = _word_line(lines, block_start, word["id"])
        head = word["head"]
        if head is None or not isinstance(head, int) or not 0 <= head <= n_words:
            raise InputFormatError(path, line, f"HEAD {head!r} of word {word['id']} is not a word of "
                                   f"this sentence (1..{n_words}) or 0", "fix the HEAD column")
        misc = word["misc"] or {}
        start, end, mwt = spans[word["id"]]
        sentence.words.append(Word(
            form=word["form"], lemma=word["lemma"] or "_", upos=word["upos"] or "_",
            xpos=word["xpos"] or "_", head=index_of[head] if head else -1,
            deprel=word["deprel"] or "_", start=start, end=end, mwt=mwt,
            entity=misc.get("Entity"), line=line,
        ))


def treebank_table(sentences: list[Sentence]) -> pa.Table:
    """One row per sentence with per-word list columns (see ``TREEBANK_SCHEMA``)."""
    def per_word(attribute: str) -> list[list]:
        return [[getattr(w, attribute) for w in s.words] for s in sentences]

    return pa.Table.from_pydict({
        "example_id": [s.example_id for s in sentences],
        "sent_id": [s.sent_id for s in sentences],
        "doc_id": [s.doc_id for s in sentences],
        "text": [s.text for s in sentences],
        "words": per_word("form"),
        "lemmas": per_word("lemma"),
        "upos": per_word("upos"),
        "xpos": per_word("xpos"),
        "head": per_word("head"),
        "deprel": per_word("deprel"),
        "char_start": per_word("start"),
        "char_end": per_word("end"),
        "mwt": per_word("mwt"),
    }, schema=TREEBANK_SCHEMA)


# --- coreference ---------------------------------------------------------------

ENTITY_FIELDS = ("entity", "etype", "infstat", "salience", "centering", "minspan", "link", "identity")


@dataclass
class _OpenMention:
    attributes: dict[str, str]
    start: int
    line: int


def _parse_entity_value(value: str, path: Path, line: int) -> list[tuple[str, str]]:
    """Split an ``Entity=`` value into ("open", attributes), ("close", id) and ("single", attributes).

    ``(4-abstract-new-...-coref`` opens a mention of entity 4, ``4)`` closes it and
    ``(1-...-sgl)`` is a one-word mention. Several may follow each other.
    """
    events: list[tuple[str, str]] = []
    i = 0
    while i < len(value):
        if value[i] == "(":
            j = i + 1
            while j < len(value) and value[j] not in "()":
                j += 1
            attributes = value[i + 1:j]
            if not attributes:
                raise InputFormatError(path, line, f"empty mention bracket in Entity={value}")
            if j < len(value) and value[j] == ")":
                events.append(("single", attributes))
                i = j + 1
            else:
                events.append(("open", attributes))
                i = j
        else:
            j = value.find(")", i)
            if j == -1 or "(" in value[i:j]:
                raise InputFormatError(path, line, f"cannot read Entity={value} at {value[i:]!r}",
                                       "expected '(id-...' to open or 'id)' to close a mention")
            events.append(("close", value[i:j]))
            i = j + 1
    return events


def _attributes(raw: str, path: Path, line: int) -> dict[str, str]:
    # The identity (last field) may itself contain hyphens, so split at most 7 times.
    parts = raw.split("-", len(ENTITY_FIELDS) - 1)
    if "[" in parts[0]:
        raise InputFormatError(path, line, f"discontinuous mention {raw!r} is not supported",
                               "this parser reads the continuous mentions of CorefUD/GUM")
    return dict(zip(ENTITY_FIELDS, parts))


def mention_table(sentences: list[Sentence], path: str | Path) -> pa.Table:
    """All coreference mentions of a GUM-style file, with heads, chains and antecedents."""
    path = Path(path)
    mentions: list[dict] = []
    for sentence in sentences:
        open_by_entity: dict[str, list[_OpenMention]] = {}
        found: list[tuple[_OpenMention, int]] = []
        for index, word in enumerate(sentence.words):
            if not word.entity:
                continue
            for kind, payload in _parse_entity_value(word.entity, path, word.line):
                if kind in ("open", "single"):
                    mention = _OpenMention(_attributes(payload, path, word.line), index, word.line)
                    if kind == "single":
                        found.append((mention, index + 1))
                    else:
                        open_by_entity.setdefault(mention.attributes["entity"], []).append(mention)
                else:
                    stack = open_by_entity.get(payload)
                    if not stack:
                        raise InputFormatError(path, word.line,
                                               f"mention of entity {payload} closes but was never opened",
                                               "every 'id)' needs an earlier '(id-...'")
                    found.append((stack.pop(), index + 1))
        unclosed = [m for stack in open_by_entity.values() for m in stack]
        if unclosed:
            first = min(unclosed, key=lambda m: m.line)
            raise InputFormatError(path, first.line,
                                   f"mention of entity {first.attributes['entity']} opened here never "
                                   f"closes within sentence {sentence.sent_id}",
                                   "add the closing 'id)' on the mention's last word")
        found.sort(key=lambda item: (item[0].start, -item[1], item[0].line))
        for mention, end in found:
            head = _span_head(sentence, mention.start, end)
            mentions.append({
                "doc_id": sentence.doc_id or "", "entity": mention.attributes["entity"],
                "example_id": sentence.example_id, "sent_id": sentence.sent_id,
                "start": mention.start, "end": end, "head": head,
                "head_form": sentence.words[head].form, "head_upos": sentence.words[head].upos,
                "text": sentence.text[sentence.words[mention.start].start:sentence.words[end - 1].end],
                "etype": mention.attributes.get("etype"), "infstat": mention.attributes.get("infstat"),
                "link": mention.attributes.get("link"), "identity": mention.attributes.get("identity"),
                "line": mention.line,
            })
    chains: dict[tuple[str, str], list[int]] = {}
    for mention_id, mention in enumerate(mentions):
        mention["mention_id"] = mention_id
        chains.setdefault((mention["doc_id"], mention["entity"]), []).append(mention_id)
    for members in chains.values():
        for position, mention_id in enumerate(members):
            mentions[mention_id]["chain_position"] = position
            mentions[mention_id]["chain_size"] = len(members)
            mentions[mention_id]["antecedent"] = members[position - 1] if position else -1
    columns = {name: [m[name] for m in mentions] for name in MENTION_SCHEMA.names}
    return pa.Table.from_pydict(columns, schema=MENTION_SCHEMA)


def _span_head(sentence: Sentence, start: int, end: int) -> int:
    """The word of [start, end) whose head is outside the span; the shallowest if several."""
    def depth(index: int) -> int:
        # parse_conllu has checked that every chain of heads ends at the root (ud_checks.check_tree).
        steps = 0
        while sentence.words[index].head != -1:
            index = sentence.words[index].head
            steps += 1
        return steps

    candidates = [i for i in range(start, end) if not start <= sentence.words[i].head < end]
    return min(candidates, key=lambda i: (depth(i), i))
