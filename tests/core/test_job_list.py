"""tools/job_list.py: two copies of a workflow plan the same jobs only if every field is the same, the named inputs'
order and the threads above the machine's cores included."""

from __future__ import annotations

import importlib.util

from support.paths import REPO

spec = importlib.util.spec_from_file_location("job_list", REPO / "tools" / "job_list.py")
job_list = importlib.util.module_from_spec(spec)
spec.loader.exec_module(job_list)

# A two-job workflow: {dumps} and {tokens} named inputs, 8 threads and memory computed from them, a report entry
# whose category is filled from the wildcards.
SNAKEFILE = """
rule all:
    input: "out/a.txt"

rule make:
    input: dumps="{dumps}", tokens="{tokens}"
    output: report("out/{{name}}.txt", caption="caption.rst", category="Cat {{name}}")
    log: "{workdir}/logs/{{name}}.log"
    threads: {threads}
    resources: mem_mb=lambda wc, threads: 1000 * threads
    shell: "touch {{output}}"
"""


def jobs(folder, *, dumps="d.txt", tokens="t.txt", threads=8):
    folder.mkdir()
    for name in ("d.txt", "t.txt", "caption.rst"):
        (folder / name).write_text("")
    (folder / "Snakefile").write_text(SNAKEFILE.format(dumps=dumps, tokens=tokens, threads=threads, workdir=folder))
    return job_list.job_list(None, [], snakefile=folder / "Snakefile", workdir=folder)


def test_the_same_workflow_in_two_folders_plans_the_same_jobs(tmp_path):
    before, after = jobs(tmp_path / "a"), jobs(tmp_path / "b")
    assert job_list.compare(before, after) == []
    make = before["make name=a"]
    assert make["threads"] == 8 and make["resources"]["mem_mb"] == 8000  # not scaled down to this machine's cores
    assert make["input"] == {"files": ["d.txt", "t.txt"], "named": {"dumps": "d.txt", "tokens": "t.txt"}}
    assert make["log"]["files"] == ["<workflow>/logs/a.log"]
    assert make["report"] == {"out/a.txt": ["<workflow>/caption.rst", "Cat a", None]}


def test_swapped_named_inputs_and_other_threads_differ(tmp_path):
    before = jobs(tmp_path / "a")
    swapped = jobs(tmp_path / "b", dumps="t.txt", tokens="d.txt")
    assert job_list.compare(before, swapped) == [
        "make name=a: input differs: {'files': ['d.txt', 't.txt'], 'named': {'dumps': 'd.txt', 'tokens': 't.txt'}} "
        "-> {'files': ['t.txt', 'd.txt'], 'named': {'dumps': 't.txt', 'tokens': 'd.txt'}}"]
    more_threads = jobs(tmp_path / "c", threads=16)
    [line] = job_list.compare(before, more_threads)  # the first field that differs: the memory of 16 threads
    assert line.startswith("make name=a: resources differs: ") and "'mem_mb': 16000" in line
    assert more_threads["make name=a"]["threads"] == 16
