"""transformers' load reports (models/families.py, entrypoints.run): the weights a load leaves new or unused that
the workflow plans (a task head) are no warning; a weight of the encoder itself new, unused or of another shape is
one, naming it; and a job's library log handlers, bound to the console when a warm server imported them, write to
the job's log."""

from __future__ import annotations

import logging
import shutil
import sys

from safetensors.torch import load_file, save_file

from workflow_scripts.entrypoints import _library_handlers_to
from workflow_scripts.models.families import load_pretrained


def warnings_of(caplog) -> list[str]:
    return [r.getMessage() for r in caplog.records
            if r.name.startswith("workflow_scripts") and r.levelno >= logging.WARNING]


def test_the_loads_the_workflow_plans_say_nothing(tiny_bert, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    classifier, info = load_pretrained("classifier", tiny_bert, num_labels=2, output_loading_info=True)
    assert {"classifier.weight", "classifier.bias"} <= set(info["missing_keys"])  # a new head: planned
    classifier.save_pretrained(tmp_path / "finetuned")
    encoder = load_pretrained("base", tmp_path / "finetuned")  # its head left out: planned
    assert type(encoder).__name__ == "BertModel"
    load_pretrained("masked_lm", tmp_path / "finetuned")  # no masked-LM head saved: planned (the gradient skips)
    assert warnings_of(caplog) == []


def test_an_encoder_weight_missing_from_the_checkpoint_is_said_by_name(tiny_bert, tmp_path, caplog):
    caplog.set_level(logging.WARNING)
    broken = tmp_path / "broken"
    shutil.copytree(tiny_bert, broken)
    weights = load_file(broken / "model.safetensors")
    dropped = next(k for k in weights if "layer.1.attention.self.query.weight" in k)
    save_file({k: v for k, v in weights.items() if k != dropped}, broken / "model.safetensors",
              metadata={"format": "pt"})
    load_pretrained("base", broken)
    [message] = warnings_of(caplog)
    assert "encoder.layer.1.attention.self.query.weight" in message and "1 weights of the encoder" in message
    assert str(broken) in message


def test_a_library_handler_bound_to_the_console_writes_to_the_jobs_log(tmp_path):
    library = logging.getLogger("some_library_of_the_test")
    console_handler = logging.StreamHandler(sys.__stderr__)  # as a warm server's import left it
    library.addHandler(console_handler)
    own = logging.StreamHandler(sys.__stderr__)  # this package's console handler stays on the console
    job_log = open(tmp_path / "job.log", "w")  # noqa: SIM115 - closed below
    try:
        moved = _library_handlers_to(job_log, keep=[own])
        assert console_handler.stream is job_log and own.stream is sys.__stderr__
        library.warning("a LOAD REPORT")
        for handler, stream in moved:
            handler.setStream(stream)
        assert console_handler.stream is sys.__stderr__
    finally:
        library.removeHandler(console_handler)
        job_log.close()
    assert (tmp_path / "job.log").read_text() == "a LOAD REPORT\n"
