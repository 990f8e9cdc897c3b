"""The pattern CNN (METHODS 8.1 b): labels files, training and prediction on tiny synthetic sets."""

from __future__ import annotations

import numpy as np
import pandas as pd
import pytest

from support.dumps import write_dump, write_token_roles
from support.maps import block_map, previous_token_map, roles, simple_words, uniform_map, vertical_map
from support.tiny_models import placeholder_checkpoint
from workflow_scripts.core.errors import InputFormatError
from workflow_scripts.finetune_effects.pattern_cnn import (
    f1_scores,
    holdout_split,
    map_images,
    merge_labels,
    predict,
    read_labels,
    seed_labels,
    train_cnn,
    train_pattern_cnn,
)
from workflow_scripts.finetune_effects.pattern_rules import CLASSES, Thresholds
from workflow_scripts.finetune_effects.pattern_shares import pattern_classes_part
from workflow_scripts.finetune_effects.patterns import pattern_features


def synthetic_map(kind: int, rng: np.random.Generator) -> tuple[np.ndarray, np.ndarray, np.ndarray]:
    """A noisy map of class ``kind`` (index into CLASSES) on a random pair layout."""
    special, segment = roles(int(rng.integers(5, 12)), int(rng.integers(5, 12)))
    n = len(special)
    shapes = [vertical_map(special), previous_token_map(n),
              0.5 * vertical_map(special) + 0.5 * previous_token_map(n), block_map(special, segment),
              rng.dirichlet(np.full(n, 0.3), size=n)]
    noise = rng.dirichlet(np.ones(n), size=n)
    return 0.9 * shapes[kind] + 0.1 * noise, special, segment


def test_map_images_are_fixed_size_and_scale_free():
    special, segment = roles(20, 30)
    maps = np.stack([vertical_map(special), uniform_map(len(special))])[None]  # (1, 2, T, T)
    images = map_images(maps, special, segment, 16)
    assert images.shape == (2, 3, 16, 16)
    assert images[:, 0].max(axis=(1, 2)) == pytest.approx([1.0, 1.0])
    small_special, small_segment = roles(2, 2)  # shorter than the image: upsampled
    assert map_images(uniform_map(7)[None], small_special, small_segment, 16).shape == (1, 3, 16, 16)


def test_the_cnn_trains_and_predicts_on_a_tiny_synthetic_set():
    rng = np.random.default_rng(0)
    kinds = np.repeat(np.arange(len(CLASSES)), 20)
    images = np.concatenate([map_images(*synthetic_map(k, rng), 16) for k in kinds])
    test = holdout_split(kinds, 0.25, seed=0)
    assert test.sum() == 25 and all(test[kinds == k].sum() == 5 for k in range(len(CLASSES)))
    model = train_cnn(images[~test], kinds[~test], epochs=25, seed=0, learning_rate=3e-3, batch_size=16, threads=1)
    predicted = predict(model, images[test])
    macro, accuracy, per_class = f1_scores(kinds[test], predicted)
    assert accuracy >= 0.8 and macro >= 0.8, (accuracy, per_class)


def test_holdout_keeps_a_lone_map_in_training():
    test = holdout_split([0, 0, 0, 0, 1], 0.5, seed=1)
    assert test[:4].sum() == 2 and not test[4]


def test_holdout_splits_whole_examples_stratified():
    # 40 examples with 1-6 labelled maps each (different heads of one input), classes mixed within examples.
    rng = np.random.default_rng(7)
    examples = np.repeat(np.arange(40), rng.integers(1, 7, 40))
    kinds = rng.integers(0, len(CLASSES), len(examples))
    test = holdout_split(kinds, 0.25, seed=0, groups=examples)
    assert not set(examples[test]) & set(examples[~test]), "an example on both sides"
    for k in range(len(CLASSES)):  # stratified: about a quarter of every class held out
        assert abs(int(test[kinds == k].sum()) - round(0.25 * (kinds == k).sum())) <= 1
    assert np.array_equal(test, holdout_split(kinds, 0.25, seed=0, groups=examples)), "seeded"


def test_no_example_has_maps_on_both_sides_of_the_cnn_split(tmp_path):
    dumps, features = _tiny_study(tmp_path)
    # 60 of the 96 maps of 12 examples: most examples several times.
    seeded = seed_labels(features, 60, seed=0, balanced=True)
    seeded.to_csv(tmp_path / "seed.csv", index=False)
    metrics = train_pattern_cnn(tmp_path / "seed.csv", None, dumps, tmp_path / "cnn.safetensors",
                                tmp_path / "labels.csv", tmp_path / "classifier.csv", model="tiny", size=8, epochs=1,
                                seed=0, holdout=0.25, learning_rate=3e-3, batch_size=32,
                                thresholds=Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8), threads=1)
    labels = pd.read_csv(tmp_path / "labels.csv")
    sides = labels.groupby(["task", "example_id"])["split"].nunique()
    assert (sides == 1).all(), f"examples on both sides: {list(sides[sides > 1].index)}"
    heldout = labels[labels["split"] == "heldout"]
    assert 0 < len(heldout) < len(labels)
    row = metrics.iloc[0]
    examples = labels[["task", "example_id"]].drop_duplicates()
    assert row["n"] == len(heldout)
    assert row["n_heldout_examples"] == len(heldout[["task", "example_id"]].drop_duplicates())
    assert row["n_heldout_examples"] + row["n_train_examples"] == len(examples)


def test_labels_files_are_checked_and_human_labels_override(tmp_path):
    good = tmp_path / "human.csv"
    good.write_text("checkpoint,task,example_id,layer,head,class\n"
                    "pretrained,rte,1,0,1,vert+diag\npretrained,rte,2,1,0,Block\npretrained,rte,3,0,0,\n")
    human = read_labels(good, default_source="human")
    assert human["class"].tolist() == ["Vertical+Diagonal", "Block"] and (human["source"] == "human").all()
    bad = tmp_path / "bad.csv"
    bad.write_text("checkpoint,task,example_id,layer,head,class,source\npretrained,rte,1,0,1,Sideways,human\n")
    with pytest.raises(InputFormatError, match="bad.csv, line 2: unknown class 'Sideways'"):
        read_labels(bad)
    missing = tmp_path / "missing.csv"
    missing.write_text("checkpoint,example_id,class\npretrained,1,Block\n")
    with pytest.raises(InputFormatError, match="lacks the columns"):
        read_labels(missing)
    seeded = pd.DataFrame({"checkpoint": "pretrained", "task": "rte", "example_id": [1, 5], "layer": [0, 0],
                           "head": [1, 1], "class": ["Vertical", "Diagonal"], "source": "rule"})
    merged = merge_labels(seeded, human)
    assert len(merged) == 3
    assert merged.set_index("example_id").loc[1, "class"] == "Vertical+Diagonal"


def _tiny_study(tmp_path):
    """Two (checkpoint, task) dumps of 2 layers x 2 heads over 12 pair examples, with their feature tables."""
    rng = np.random.default_rng(3)
    dumps, features = {}, {}
    for checkpoint_name in ("pretrained", "rte.seed1.final"):
        maps, token_rows = {}, {}
        for example_id in range(12):
            heads = [synthetic_map(k, rng) for k in rng.permutation(len(CLASSES))[:1]]
            special, segment = heads[0][1], heads[0][2]
            n = len(special)
            four = [0.9 * s + 0.1 * uniform_map(n) for s in (vertical_map(special), previous_token_map(n),
                                                            block_map(special, segment), uniform_map(n))]
            maps[example_id] = np.stack(four).reshape(2, 2, n, n)
            token_rows[example_id] = (special, segment, simple_words(special))
        folder = tmp_path / checkpoint_name
        manifest = write_dump(folder / "dump", maps)
        tokens = write_token_roles(folder / "tokens.parquet", token_rows)
        dumps[(checkpoint_name, "rte")] = (manifest.parent, tokens)
        features[(checkpoint_name, "rte")] = folder / "features.parquet"
        pattern_features(manifest.parent, tokens, features[(checkpoint_name, "rte")],
                         thresholds=Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8))
    return dumps, features


def test_cnn_training_from_seeded_and_human_labels_end_to_end(tmp_path):
    dumps, features = _tiny_study(tmp_path)
    seeded = seed_labels(features, 60, seed=0, balanced=True)
    assert len(seeded) == 60 and (seeded["source"] == "rule").all()
    counts = seeded["class"].value_counts()
    assert counts["Vertical"] >= 12 and counts["Block"] >= 12, "balanced: every present class gets its quota"
    seeded.to_csv(tmp_path / "seed.csv", index=False)
    first = seeded.iloc[0]
    (tmp_path / "human.csv").write_text(
        "checkpoint,task,example_id,layer,head,class\n"
        f"{first['checkpoint']},rte,{first['example_id']},{first['layer']},{first['head']},Heterogeneous\n"
        "pretrained,rte,11,1,1,Heterogeneous\n")
    metrics = train_pattern_cnn(tmp_path / "seed.csv", tmp_path / "human.csv", dumps, tmp_path / "cnn.safetensors",
                                tmp_path / "labels.csv", tmp_path / "classifier.csv", model="tiny", size=16,
                                epochs=15, seed=0, learning_rate=3e-3, batch_size=16, holdout=0.25,
                                thresholds=Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8), threads=1)
    assert metrics["evaluated_on"].tolist() == ["heldout", "heldout_human", "human"]
    heldout = metrics.iloc[0]
    assert heldout["label_source"] == "mixed" and heldout["n_human"] == 2 and heldout["n"] > 0
    assert 0 <= heldout["macro_f1"] <= 1
    labels = pd.read_csv(tmp_path / "labels.csv")
    extra = ((seeded["checkpoint"] == "pretrained") & (seeded["example_id"] == 11) & (seeded["layer"] == 1)
             & (seeded["head"] == 1)).sum() == 0
    assert len(labels) == 60 + extra and set(labels["split"]) == {"train", "heldout"}
    overridden = labels[(labels["example_id"] == first["example_id"]) & (labels["layer"] == first["layer"])
                        & (labels["head"] == first["head"]) & (labels["checkpoint"] == first["checkpoint"])]
    assert overridden["class"].tolist() == ["Heterogeneous"] and overridden["source"].tolist() == ["human"]
    assert overridden["rule_class"].tolist() == [first["class"]]
    # The trained CNN classifies every map of a dump for the class shares.
    dump, tokens = dumps[("pretrained", "rte")]
    shares = pattern_classes_part(features[("pretrained", "rte")], tmp_path / "shares.csv", model="tiny",
                                  checkpoint="pretrained", task="rte",
                                  checkpoint_manifest=placeholder_checkpoint(tmp_path / "ckpt"), classifier="cnn",
                                  cnn_model=tmp_path / "cnn.safetensors", dump_dir=dump, token_table=tokens,
                                  resamples=50, seed=0, threads=1)
    assert shares["share"].sum() == pytest.approx(1.0) and (shares["n"] == 48).all()
    assert (shares["classifier"] == "cnn").all()


def test_labels_for_a_dump_the_study_lacks_are_named(tmp_path):
    dumps, features = _tiny_study(tmp_path)
    (tmp_path / "seed.csv").write_text("checkpoint,task,example_id,layer,head,class,source\n"
                                       "random,cola,1,0,0,Block,human\n")
    with pytest.raises(Exception, match="random.*cola.*no attention dump"):
        train_pattern_cnn(tmp_path / "seed.csv", None, dumps, tmp_path / "cnn.safetensors", tmp_path / "l.csv",
                          tmp_path / "m.csv", model="tiny", size=8, epochs=1, seed=0, learning_rate=3e-3,
                          batch_size=32, holdout=0.25,
                          thresholds=Thresholds(structured=0.6, vertical=0.3, diagonal=0.3, block=0.8), threads=1)


def test_the_labelling_tool_writes_a_page_and_a_template(tmp_path):
    import importlib.util

    import pyarrow as pa
    import pyarrow.parquet as pq

    from support.paths import REPO

    special, segment = roles(5, 6)
    n = len(special)
    maps = {i: np.stack([vertical_map(special), previous_token_map(n), block_map(special, segment),
                         uniform_map(n)]).reshape(2, 2, n, n) for i in range(4)}
    write_dump(tmp_path / "results/attention/m/pretrained/rte/dev", maps)
    (tmp_path / "results/tokens/m/rte").mkdir(parents=True)
    table = pq.read_table(write_token_roles(tmp_path / "plain.parquet",
                                       {i: (special, segment, simple_words(special)) for i in range(4)}))
    table = table.append_column("token", pa.array([f"t{i}" for i in range(table.num_rows)]))
    pq.write_table(table, tmp_path / "results/tokens/m/rte/dev.parquet")
    spec = importlib.util.spec_from_file_location("label_maps", REPO / "tools" / "label_maps.py")
    tool = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(tool)
    assert tool.main(["--results", str(tmp_path / "results"), "--model", "m", "--tasks", "rte", "--sample", "6",
                      "--out", str(tmp_path / "out")]) == 0
    page = (tmp_path / "out" / "index.html").read_text()
    assert page.count('class="card"') == 6 and page.count("data:image/png;base64,") == 6
    template = pd.read_csv(tmp_path / "out" / "labels_template.csv")
    assert len(template) == 6 and set(template["rule_suggestion"]) <= set(CLASSES)
    template["class"] = template["rule_suggestion"]
    template.to_csv(tmp_path / "filled.csv", index=False)
    assert len(read_labels(tmp_path / "filled.csv")) == 6, "a filled template is a valid human labels file"
