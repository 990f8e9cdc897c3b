"""What the surface stage's tests share."""

from __future__ import annotations

import pytest

from support.tiny_dumps import tiny_dump


@pytest.fixture(scope="session")
def three_shard_dump(tmp_path_factory, tiny_bert):
    """A real extraction of the tiny sentences into 3 shards (a tiny BERT), with its token table: (the dump's
    manifest, the token table). Read only: a test that changes a dump works on a copy of its own."""
    _, tokens, dump, _, _ = tiny_dump(tmp_path_factory.mktemp("dump"), tiny_bert, pairs=False, n_shards=3)
    return dump / "manifest.json", tokens
