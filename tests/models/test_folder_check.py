"""A model folder is what it claims (workflow_scripts/models/folder_check.py): the broken folders a user tried are
refused with what is wrong, and the real model and the tests' tiny models pass."""

from __future__ import annotations

import json
import shutil
from pathlib import Path

import pytest

from support.paths import minilm_dir
from workflow_scripts.core.errors import AtlasError
from workflow_scripts.models.cards import describe_model
from workflow_scripts.models.folder_check import check_model_folder, folder_problem


def _copy(source: Path, target: Path, *names: str) -> Path:
    target.mkdir()
    for name in names or [p.name for p in source.iterdir()]:
        shutil.copy(source / name, target / name)
    return target


def _edit_config(folder: Path, **changes) -> None:
    config = json.loads((folder / "config.json").read_text())
    (folder / "config.json").write_text(json.dumps({**config, **changes}))


def test_the_real_model_and_the_tiny_models_pass(tiny_bert, tiny_roberta, tiny_gpt2):
    folders = [tiny_bert, tiny_roberta, tiny_gpt2, *([minilm_dir()] if minilm_dir() else [])]
    for folder in folders:
        check = check_model_folder(folder)
        assert not check.problems, (folder, check.problems)
        assert check.checked[0].startswith("tokenizer: tokenizer.json,") and "layers 0 and" in check.checked[1]


def test_weights_and_config_without_a_tokenizer_are_refused(tiny_bert, tmp_path):
    folder = _copy(tiny_bert, tmp_path / "bad", "config.json", "model.safetensors")
    message = folder_problem("bad", "models.bad.path", folder)
    assert message.startswith(f"config key 'models.bad.path': model 'bad' in {folder} is not what it claims: it has "
                              "no tokenizer (none of tokenizer.json, vocab.txt, vocab.json with merges.txt"), message
    assert "Fix: use the folder the model was saved to as a whole" in message


def test_a_model_type_over_the_weights_of_another_architecture_is_refused(tiny_bert, tmp_path):
    folder = _copy(tiny_bert, tmp_path / "bad")
    _edit_config(folder, model_type="gpt2")
    problems = check_model_folder(folder).problems
    assert problems == [f"config.json declares model_type 'gpt2' with 2 layers, but the weights have no "
                        f"h.0.attn.c_attn.weight and no h.1.attn.c_attn.weight (their first weight: "
                        f"{sorted(_header_names(folder))[0]}): they are of another architecture, and would be ignored "
                        "and the model initialised at random"]


def _header_names(folder: Path) -> list[str]:
    from safetensors import safe_open

    with safe_open(folder / "model.safetensors", framework="numpy") as weights:
        return list(weights.keys())


@pytest.mark.parametrize(("change", "expected"), [
    ({"vocab_size": 60}, "has 125 tokens, more than config.json's vocab_size 60: ids past 59 have no embedding"),
    ({"vocab_size": 1000}, "has 125 tokens for config.json's vocab_size 1000: it is the tokenizer of another "
                           "vocabulary"),
    ({"pad_token_id": 125}, "config.json's pad_token_id 125 is outside its vocabulary (vocab_size 125)"),
])
def test_a_tokenizer_that_does_not_fit_the_config_is_refused(tiny_bert, tmp_path, change, expected):
    folder = _copy(tiny_bert, tmp_path / "bad")
    _edit_config(folder, **change)
    assert any(expected in problem for problem in check_model_folder(folder).problems), \
        check_model_folder(folder).problems


def test_a_truncated_weights_file_is_named(tiny_bert, tmp_path):
    folder = _copy(tiny_bert, tmp_path / "bad")
    weights = folder / "model.safetensors"
    weights.write_bytes(weights.read_bytes()[:20])
    assert check_model_folder(folder).problems[0].startswith("its safetensors weights cannot be read (")


def test_the_model_card_reads_bin_weights_and_records_the_check(tiny_bert, tmp_path):
    import torch
    from safetensors.torch import load_file

    card = describe_model("tiny", {"path": str(tiny_bert)}, tmp_path / "card.json", offline=True)
    assert card["folder_check"].startswith("tokenizer: tokenizer.json, 125 tokens for vocab_size 125; weights: ")
    # The same weights as pytorch_model.bin under another model type: the config checks cannot read them (no torch
    # there), the card's job does.
    folder = _copy(tiny_bert, tmp_path / "bin")
    torch.save(load_file(folder / "model.safetensors"), folder / "pytorch_model.bin")
    (folder / "model.safetensors").unlink()
    _edit_config(folder, model_type="gpt2", n_layer=2, n_head=2, n_embd=32)
    assert not check_model_folder(folder).problems  # nothing to read without torch
    with pytest.raises(AtlasError, match=rf"model 'bin' in {folder} is not what it claims: config.json declares "
                                         "model_type 'gpt2'"):
        describe_model("bin", {"path": str(folder)}, tmp_path / "bin.json", offline=True)


@pytest.mark.parametrize(("text", "expected"), [
    ('{"model_type": "bert",\n "vocab_size": 30522,', "is not valid JSON (line 2, column 22: Expecting property "
                                                     "name enclosed in double quotes); mend it"),
    ('["bert"]', "holds a JSON list, not the object of a model's config"),
    (b'{"model_type": "\xff"}', "is not UTF-8 text (invalid start byte at byte 16)"),
])
def test_a_damaged_config_json_is_named_with_where_it_breaks(tiny_bert, tmp_path, text, expected):
    folder = _copy(tiny_bert, tmp_path / "bad")
    config = folder / "config.json"
    config.write_bytes(text if isinstance(text, bytes) else text.encode())
    message = folder_problem("bad", "models.bad.path", folder)
    assert message.startswith(f"config key 'models.bad.path': model 'bad' in {folder} is not what it claims: "
                              f"{config} {expected}"), message
