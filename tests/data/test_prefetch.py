"""The prefetch as a new user runs it: a tiny study whose release URLs (UD, WiC, GloVe) point at a local HTTP
server and whose models are a local folder and a hub id, fetched into a mirror and a model folder; then the
offline run from the config it wrote, with no network: the config resolves, the data builders read the mirror,
and Snakemake builds the data tables."""

from __future__ import annotations

import json
import shutil
import subprocess
import sys

import pyarrow.parquet as pq
import pytest
import yaml

from support.entries import GLOVE_RELEASE, UD_SOURCE, WIC_RELEASE
from support.paths import REPO
from support.release_server import WIC_SPLITS, free_port, git_blob_id, serve, write_contents_api, write_releases
from support.resolved_config import resolve
from workflow_scripts.core.io import read_metadata
from workflow_scripts.data.build import build_glove, build_treebank, build_wic
from workflow_scripts.data.corpora import Corpora
from workflow_scripts.entrypoints import prefetch
from workflow_scripts.models import hub


def study_config(base: str, model, *, models=("tiny",)) -> dict:
    return {
        "study": {"models": list(models), "tasks": ["wic"], "treebanks": ["ewt"], "wiki": False, "glove": True},
        "models": {"tiny": {"path": str(model), "max_length": 32}, "tinyhub": {"hub": "org/tiny", "max_length": 32}},
        "data": {"treebank_splits": ["train", "dev"], "ud_url": f"{base}/ud/{{repo}}/{{file}}",
                 "ud_api_url": f"{base}/api/{{repo}}/{{file}}?ref={{tag}}",
                 "wic": {"url": f"{base}/WiC_dataset.zip"}, "glove": {"url": f"{base}/glove.6B.zip"}},
        "annotation": {"annotator": "spacy"},
        "attention": {"corpora": {"ewt": ["dev"]}},
    }


def run_prefetch(work, config: dict, capsys, *extra: str) -> tuple[int, str]:
    (work / "study.yaml").write_text(yaml.safe_dump(config))
    code = prefetch.main(["--configfile", str(work / "study.yaml"), "--mirror", str(work / "mirror"),
                          "--models", str(work / "models"), "--write-config", str(work / "offline.yaml"), *extra])
    return code, capsys.readouterr().out


def run_prefetch_err(work, config: dict, capsys) -> tuple[int, str]:
    """The prefetch's exit status and what it wrote to stderr (where an invalid start is reported)."""
    (work / "study.yaml").write_text(yaml.safe_dump(config))
    code = prefetch.main(["--configfile", str(work / "study.yaml"), "--mirror", str(work / "mirror"),
                          "--models", str(work / "models")])
    return code, capsys.readouterr().err


@pytest.fixture
def releases(tmp_path):
    with serve(write_releases(tmp_path / "releases")) as (base, requests):
        yield base, requests


def test_the_prefetch_fills_the_mirror_and_the_offline_run_reads_it(tmp_path, releases, tiny_bert, capsys):
    base, requests = releases
    code, out = run_prefetch(tmp_path, study_config(base, tiny_bert), capsys)
    assert code == 0, out
    mirror = tmp_path / "mirror"
    expected = ["ud/UD_English-EWT/en_ewt-ud-train.conllu", "ud/UD_English-EWT/en_ewt-ud-dev.conllu",
                *(f"wic/{s}/{s}.{k}.txt" for s in WIC_SPLITS for k in ("data", "gold")), "glove/glove.6B.50d.txt"]
    assert all((mirror / rel).is_file() for rel in expected)
    assert not list(mirror.glob(".prefetch-*")), "the downloaded archives are removed once unpacked"
    record = json.loads((mirror / "PREFETCH.json").read_text())["files"]
    assert sorted(record) == sorted(expected)
    dev_file = "ud/UD_English-EWT/en_ewt-ud-dev.conllu"
    assert record[dev_file]["source"] == f"{base}/{dev_file}"
    assert record[dev_file]["verified"] == "git blob id matches the release (GitHub API)"
    assert record["glove/glove.6B.50d.txt"]["source"] == f"{base}/glove.6B.zip!glove.6B.50d.txt"
    assert "unverified" in record["wic/dev/dev.data.txt"]["verified"]  # a user's URL with no checksum: recorded
    assert (tmp_path / "models" / "tiny" / "config.json").is_file()
    written = yaml.safe_load((tmp_path / "offline.yaml").read_text())
    assert written == {"offline": True, "mirror": str(mirror.resolve()),
                       "models": {"tiny": {"path": str((tmp_path / "models" / "tiny").resolve())}}}
    assert "fetched" in out and "summary:" in out and "offline config written" in out

    # A second prefetch finds everything there, verified, and asks the server for nothing.
    served = len(requests)
    code, out = run_prefetch(tmp_path, study_config(base, tiny_bert), capsys)
    assert code == 0 and len(requests) == served and "summary: 5 present" in out, out

    # Offline, from what it wrote: the config resolves as the workflow's, every split is in the mirror.
    config = resolve(tmp_path / "study.yaml", tmp_path / "offline.yaml")
    assert config["offline"] is True and config["models"]["tiny"]["path"] == written["models"]["tiny"]["path"]
    corpora = Corpora(config)
    files = {(c, s): corpora.source_files(c, s) for c in ("ewt", "wic", "glove") for s in corpora.splits(c)
             if c != "ewt" or s in ("train", "dev")}
    assert all(files.values()), files
    out_dir = tmp_path / "tables"
    build_treebank(corpora.treebanks["ewt"], "dev", files[("ewt", "dev")], out_dir / "ewt.parquet",
                   mirror=config["mirror"], offline=True, download_dir=tmp_path / "dl", ud_tag="r2.16", **UD_SOURCE)
    build_wic("test", files[("wic", "test")], out_dir / "wic.parquet", mirror=config["mirror"], offline=True,
              download_dir=tmp_path / "dl", **WIC_RELEASE)
    build_glove(files[("glove", "vectors")], out_dir / "glove.parquet", max_words=None, mirror=config["mirror"],
                offline=True, download_dir=tmp_path / "dl", **GLOVE_RELEASE)
    assert pq.read_table(out_dir / "ewt.parquet").num_rows == 4 and pq.read_table(out_dir / "wic.parquet").num_rows == 2
    assert read_metadata(out_dir / "glove.parquet")["source"] == f"mirror:{mirror.resolve()}/glove/glove.6B.50d.txt"
    assert not (tmp_path / "dl").exists()
    # The tables keep what the prefetch recorded: the URL each mirror file came from, its sha256, how it was checked.
    recorded = read_metadata(out_dir / "ewt.parquet")["downloads"]
    assert recorded == [{"url": f"{base}/{dev_file}", "sha256": record[dev_file]["sha256"],
                         "verified": "prefetched: " + record[dev_file]["verified"]}]


@pytest.mark.e2e
def test_snakemake_builds_the_data_tables_offline_from_the_prefetch(tmp_path, releases, tiny_bert, capsys):
    base, _ = releases
    assert run_prefetch(tmp_path, study_config(base, tiny_bert), capsys)[0] == 0
    shutil.rmtree(tmp_path / "releases")  # nothing left to download from, should anything try
    targets = [f"results/data/{c}/{s}.parquet" for c, s in (("ewt", "dev"), ("wic", "dev"), ("glove", "vectors"))]
    result = subprocess.run(
        [sys.executable, "-m", "snakemake", "--snakefile", str(REPO / "Snakefile"), "--directory", str(tmp_path),
         "--configfile", "study.yaml", "offline.yaml", "--cores", "1", *targets],
        capture_output=True, text=True, timeout=300, cwd=tmp_path)
    assert result.returncode == 0, result.stderr[-3000:]
    assert all((tmp_path / t).is_file() for t in targets)
    assert read_metadata(tmp_path / targets[1])["source"].startswith(f"mirror:{(tmp_path / 'mirror').resolve()}")


def test_a_hub_model_is_downloaded_into_its_folder_and_the_config_turns_it_local(tmp_path, releases, tiny_bert,
                                                                                capsys, monkeypatch):
    base, _ = releases
    calls = []

    def fake_hub(repo_id, revision, local_dir=None):  # the hub, served by a local folder
        calls.append((repo_id, revision, local_dir))
        shutil.copytree(tiny_bert, local_dir, dirs_exist_ok=True)
        return local_dir

    monkeypatch.setattr(hub, "fetch_hub_model", fake_hub)
    code, out = run_prefetch(tmp_path, study_config(base, tiny_bert, models=("tinyhub",)), capsys)
    assert code == 0, out
    assert calls == [("org/tiny", None, (tmp_path / "models" / "tinyhub").resolve())]
    written = yaml.safe_load((tmp_path / "offline.yaml").read_text())
    assert written["models"] == {"tinyhub": {"path": str((tmp_path / "models" / "tinyhub").resolve()), "hub": None}}
    config = resolve(tmp_path / "study.yaml", tmp_path / "offline.yaml")  # hub: null leaves path the one source
    assert config["models"]["tinyhub"]["path"] == written["models"]["tinyhub"]["path"]


def test_each_revision_of_a_hub_model_is_its_own_folder_and_the_offline_run_keeps_its_settings(
        tmp_path, releases, tiny_bert, capsys, monkeypatch):
    base, _ = releases
    calls = []

    def fake_hub(repo_id, revision, local_dir=None):
        calls.append((repo_id, revision, local_dir))
        shutil.copytree(tiny_bert, local_dir, dirs_exist_ok=True)
        return local_dir

    monkeypatch.setattr(hub, "fetch_hub_model", fake_hub)
    config = study_config(base, tiny_bert, models=("tinyhub",))
    config["models"]["tinyhub"]["revisions"] = ["step1", "step2"]
    code, out = run_prefetch(tmp_path, config, capsys)
    assert code == 0, out
    folders = {revision: (tmp_path / "models" / f"tinyhub-{revision}").resolve() for revision in ("step1", "step2")}
    assert calls == [("org/tiny", revision, folder) for revision, folder in folders.items()]
    written = yaml.safe_load((tmp_path / "offline.yaml").read_text())
    assert written["models"] == {f"tinyhub-{r}": {"path": str(folder), "hub": None} for r, folder in folders.items()}
    offline = resolve(tmp_path / "study.yaml", tmp_path / "offline.yaml")
    assert offline["study"]["models"] == ["tinyhub-step1", "tinyhub-step2"]
    for revision, folder in folders.items():  # the local copy, with the entry's max_length; no revision to pin
        entry = offline["models"][f"tinyhub-{revision}"]
        assert (entry["path"], entry["hub"], entry["max_length"], "revision" in entry) == (str(folder), None, 32, False)


def test_model_files_are_the_config_tokenizer_and_one_set_of_weights():
    repository = ["config.json", "tokenizer.json", "vocab.txt", "model.safetensors", "pytorch_model.bin",
                  "tf_model.h5", "flax_model.msgpack", "onnx/model.onnx", "onnx/config.json", "README.md"]
    assert hub.model_files(repository) == ["config.json", "model.safetensors", "tokenizer.json", "vocab.txt"]
    assert "pytorch_model.bin" in hub.model_files([n for n in repository if n != "model.safetensors"])


def test_an_unreachable_source_names_the_url_and_the_fix(tmp_path, releases, tiny_bert, capsys):
    base, _ = releases
    config = study_config(base, tiny_bert)
    dead = f"http://127.0.0.1:{free_port()}/WiC_dataset.zip"  # nothing listens there
    config["data"]["wic"]["url"] = dead
    code, out = run_prefetch(tmp_path, config, capsys)
    assert code == 1 and not (tmp_path / "offline.yaml").exists()
    assert f"FAILED   wic/train,dev,test: wic: {dead} could not be fetched" in out
    assert "fix: run the prefetch where" in out and "config key 'data.wic.url'" in out
    assert "fetched  ewt/dev" in out  # the other sources are fetched all the same


def test_a_checksum_that_does_not_match_fails_the_prefetch_with_both_digests(tmp_path, releases, tiny_bert, capsys):
    base, _ = releases
    config = study_config(base, tiny_bert)
    config["data"]["glove"]["sha256"] = "b" * 64
    code, out = run_prefetch(tmp_path, config, capsys)
    assert code == 1
    assert f"expected sha256 {'b' * 64} (config key 'data.glove.sha256')" in out and "received sha256 " in out
    assert not (tmp_path / "mirror" / "glove").exists()


def test_hub_sources_are_written_in_the_mirror_layout_and_read_back_as_the_hub_gave_them(tmp_path, monkeypatch):
    """GLUE and hub tasks (here from a stand-in for the hub) become the mirror's TSV / JSON Lines files, which
    the offline jobs read into the very examples the hub loaders return."""
    import pyarrow as pa

    from workflow_scripts.data import prefetch as data_prefetch
    from workflow_scripts.data.build import build_glue, build_task
    from workflow_scripts.data.entries import task_spec
    from workflow_scripts.data.tables import text_task_schema

    mrpc = pa.Table.from_pydict({"example_id": [0, 1], "source_id": ["7", "9"], "text_a": ['He said "no".', "A b."],
                                 "text_b": ["It is.", "C d."], "label": [1, 0]}, schema=text_task_schema(False))
    cola = pa.Table.from_pydict({"example_id": [0], "source_id": ["0"], "text_a": ["The cat sat."], "text_b": [None],
                                 "label": [1]}, schema=text_task_schema(False))
    reviews = pa.Table.from_pydict({"example_id": [0, 1], "source_id": ["0", "1"], "text_a": ["Great.", "Bad."],
                                    "text_b": [None, None], "label": [1, 0]}, schema=text_task_schema(False))
    monkeypatch.setattr(data_prefetch, "load_glue_from_hub", lambda task, split: {"mrpc": mrpc, "cola": cola}[task])
    monkeypatch.setattr(data_prefetch, "load_task_from_hub", lambda **kwargs: reviews)
    mirror = data_prefetch.Mirror.open(tmp_path / "mirror")
    assert data_prefetch.fetch_glue(mirror, "mrpc", "dev", "mrpc").status == "fetched"
    assert data_prefetch.fetch_glue(mirror, "cola", "train", "cola").status == "fetched"
    spec = task_spec("reviews", {"hub": {"dataset": "org/reviews", "config": None, "revision": None},
                                 "splits": {"dev": "validation"}, "text": ["review"], "label": "stars",
                                 "kind": "classification", "labels": ["neg", "pos"]})
    assert data_prefetch.fetch_hub_task(mirror, spec, "dev").status == "fetched"
    assert (mirror.root / "glue/MRPC/dev.tsv").read_text().splitlines()[:2] == [
        "index\t#1 String\t#2 String\tQuality", '7\tHe said "no".\tIt is.\tequivalent']
    jsonl = mirror.root / "hub/org/reviews/default/validation.jsonl"
    assert json.loads(jsonl.read_text().splitlines()[0]) == {"idx": "0", "review": "Great.", "stars": "pos"}
    mirror.save()

    out = tmp_path / "out"
    build_glue("mrpc", "dev", [mirror.root / "glue/MRPC/dev.tsv"], out / "mrpc.parquet", mirror=str(mirror.root),
               offline=True)
    build_task(spec, "dev", spec.local_files("dev") or [jsonl], out / "reviews.parquet", offline=True)
    for table, name in ((mrpc, "mrpc"), (reviews, "reviews")):
        read = pq.read_table(out / f"{name}.parquet")
        assert read.select(["source_id", "text_a", "text_b", "label"]).to_pylist() == \
            table.select(["source_id", "text_a", "text_b", "label"]).to_pylist()
        assert read_metadata(out / f"{name}.parquet")["downloads"][0]["verified"].startswith("prefetched: written")
    assert spec.mirror_candidates("dev") == [["hub/org/reviews/default/validation.jsonl"]]


def test_a_url_treebank_is_prefetched_under_its_urls_host_and_path(tmp_path, releases):
    from workflow_scripts.data import prefetch as data_prefetch
    from workflow_scripts.data.entries import treebank_entry

    base, _ = releases
    entry = treebank_entry("mine", {"url": f"{base}/ud/UD_English-EWT", "splits": {"dev": "en_ewt-ud-dev.conllu"}},
                           treebank_splits=["dev"])
    host = base.removeprefix("http://")
    assert entry.mirror_candidates("dev") == [[f"url/{host}/ud/UD_English-EWT/en_ewt-ud-dev.conllu"]]
    mirror = data_prefetch.Mirror.open(tmp_path / "mirror")
    step = data_prefetch.fetch_treebank(mirror, entry, "dev", ud_release="r2.16", ud_url="unused", ud_api_url=None)
    assert step.status == "fetched" and (mirror.root / entry.mirror_candidates("dev")[0][0]).is_file()


def test_a_changed_release_tag_fetches_the_file_again(tmp_path, releases, tiny_bert, capsys):
    """The mirror keeps a UD file under one path for every tag: the record's URL says which tag it holds."""
    base, _ = releases
    config = study_config(base, tiny_bert)
    config["data"]["ud_url"] = f"{base}/ud/{{repo}}/{{file}}?tag={{tag}}"  # the server ignores the query
    assert run_prefetch(tmp_path, config, capsys)[0] == 0
    served = tmp_path / "releases" / "ud" / "UD_English-EWT" / "en_ewt-ud-dev.conllu"
    release = served.read_text().replace("# text", "# newdoc\n# text", 1)  # the other tag's file
    served.write_text(release)
    write_contents_api(tmp_path / "releases", "UD_English-EWT", served.name, {"sha": git_blob_id(served.read_bytes())})
    config["data"]["ud_release"] = "r2.15"
    code, out = run_prefetch(tmp_path, config, capsys)
    assert code == 0 and "fetched  ewt/dev" in out and "fetched  ewt/train" in out, out
    mirror = tmp_path / "mirror"
    assert (mirror / "ud/UD_English-EWT/en_ewt-ud-dev.conllu").read_text() == release
    record = json.loads((mirror / "PREFETCH.json").read_text())["files"]["ud/UD_English-EWT/en_ewt-ud-dev.conllu"]
    assert record["source"] == f"{base}/ud/UD_English-EWT/en_ewt-ud-dev.conllu?tag=r2.15"
    assert "present  glove/vectors" in out  # sources that did not change stay


def test_a_changed_hub_revision_fetches_the_task_again(tmp_path, monkeypatch):
    import pyarrow as pa

    from workflow_scripts.data import prefetch as data_prefetch
    from workflow_scripts.data.entries import task_spec
    from workflow_scripts.data.tables import text_task_schema

    revisions = []

    def hub(**kwargs):
        revisions.append(kwargs["revision"])
        return pa.Table.from_pydict({"example_id": [0], "source_id": ["0"], "text_a": [f"At {kwargs['revision']}."],
                                     "text_b": [None], "label": [1]}, schema=text_task_schema(False))

    monkeypatch.setattr(data_prefetch, "load_task_from_hub", hub)
    mirror = data_prefetch.Mirror.open(tmp_path / "mirror")

    def spec(revision):
        return task_spec("reviews", {"hub": {"dataset": "org/reviews", "config": None, "revision": revision},
                                     "splits": {"dev": "validation"}, "text": ["review"], "label": "stars",
                                     "kind": "classification", "labels": ["neg", "pos"]})

    assert data_prefetch.fetch_hub_task(mirror, spec("v1"), "dev").status == "fetched"
    assert data_prefetch.fetch_hub_task(mirror, spec("v1"), "dev").status == "present"
    assert data_prefetch.fetch_hub_task(mirror, spec("v2"), "dev").status == "fetched"
    assert revisions == ["v1", "v2"]
    assert "At v2." in (mirror.root / "hub/org/reviews/default/validation.jsonl").read_text()
    assert mirror.files["hub/org/reviews/default/validation.jsonl"]["source"].endswith("(None, validation) @ v2")


def test_a_web_page_served_instead_of_the_archive_names_the_url_and_the_fix(tmp_path, releases, tiny_bert, capsys):
    base, _ = releases
    (tmp_path / "releases" / "login.html").write_text("<!DOCTYPE html><html><body>Sign in</body></html>")
    config = study_config(base, tiny_bert)
    config["data"]["wic"]["url"] = f"{base}/login.html"
    code, out = run_prefetch(tmp_path, config, capsys)
    assert code == 1 and not (tmp_path / "offline.yaml").exists()
    assert f"FAILED   wic/train,dev,test: {base}/login.html: the file received" in out
    assert "is not a zip archive (it starts like an HTML page)" in out and "config key 'data.wic.url'" in out
    assert "fetched  glove/vectors" in out  # the other sources are fetched all the same


@pytest.mark.parametrize("record", ["{not json", '{"files": {"ud/x.conllu": {"sha256": "00"}}}', "[]"])
def test_a_broken_prefetch_record_names_the_file_and_the_fix(tmp_path, releases, tiny_bert, capsys, record):
    base, _ = releases
    (tmp_path / "mirror").mkdir()
    (tmp_path / "mirror" / "PREFETCH.json").write_text(record)
    code, message = run_prefetch_err(tmp_path, study_config(base, tiny_bert), capsys)
    assert code == 2, message
    assert f"{(tmp_path / 'mirror' / 'PREFETCH.json').resolve()}: not a readable prefetch record" in message
    assert "fix: restore it, or move it away" in message

    # A data job reading a mirror file under it says the same.
    from workflow_scripts.data.build import prefetched
    from workflow_scripts.data.prefetch import PrefetchError

    (tmp_path / "mirror" / "ud").mkdir()
    (tmp_path / "mirror" / "ud" / "x.conllu").write_text("")
    with pytest.raises(PrefetchError, match="not a readable prefetch record"):
        prefetched([tmp_path / "mirror" / "ud" / "x.conllu"])


def test_a_broken_model_record_names_the_file_and_the_fix(tmp_path, releases, tiny_bert, capsys):
    base, _ = releases
    (tmp_path / "models").mkdir()
    (tmp_path / "models" / "PREFETCH.json").write_text('{"tiny": {"source": 1}}')
    code, message = run_prefetch_err(tmp_path, study_config(base, tiny_bert), capsys)
    assert code == 2 and "not a readable prefetch record of models" in message and "fix:" in message
    assert not (tmp_path / "mirror" / "ud").exists(), "nothing is fetched before the records are read"
