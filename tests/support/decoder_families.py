"""The decoder and families study (``families_study`` of tests/conftest.py), read by
tests/workflow/test_decoder_families.py and test_decoder_study.py: tiny GPT-NeoX (Pythia's family) and Llama
(grouped-query attention) with random weights, OPT, a RoBERTa encoder, and a GPT-2 whose heads are set by hand
(support/induction_gpt2.py: a previous-token head in layer 0, an induction head and a sink in layer 1), fine-tuned by
LoRA, both signals (the suite's one study of the norm signal), run to the tables those tests read (``TABLES``) and
the atlas figure (``TARGETS``). Llama's token tables are made with prepend_bos false (rules/attention.smk's bos_
rules)."""

from __future__ import annotations

from pathlib import Path

import yaml

from .induction_gpt2 import TOKEN_CODES, save_induction_gpt2
from .mirror import write_tiny_study
from .tiny_models import save_from_config

# The families' models made from a config (support/tiny_models.tiny_config: llama's query heads share a value head
# per two).
FAMILIES = {"neox": "gpt_neox", "llama": "llama", "opt": "opt", "encoder": "roberta"}
# first_token (a head measure) and sep_gradient: the surface stage on decoders (test_decoder_study.py);
# role_agreement: each model's attention against its norm signal.
TABLES = ("attention_dumps", "head_diagnostics", "sink_rates", "first_token", "sep_gradient", "dependency_best",
          "finetune_metrics", "head_disabling", "finetune_change", "pattern_classes", "lexical_change", "atlas",
          "role_agreement", "models")
TARGETS = (*(f"results/tables/{name}.csv" for name in TABLES), "results/figures/report/atlas.png")


def write_families_study(work: Path, tokenizer_dir: Path) -> Path:
    """The models (under ``work/models``, with the tokenizer in ``tokenizer_dir``: the tiny RoBERTa's), the tiny
    mirror and ``work/tiny.yaml``; returns ``work``, whose run builds ``TARGETS``."""
    models = {name: save_from_config(work / "models" / name, model_type, tokenizer_dir)
              for name, model_type in FAMILIES.items()}
    models["gpt2"] = save_induction_gpt2(work / "models" / "induction-gpt2", tokenizer_dir, sink=True)
    write_tiny_study(work, models["neox"])
    config = yaml.safe_load((work / "tiny.yaml").read_text())
    config["models"] = {name: {"path": str(folder), "max_length": 32} for name, folder in models.items()}
    # Both tokenizers put <s> first (the tiny RoBERTa's): Llama's token tables are made without it.
    config["models"]["llama"]["prepend_bos"] = False
    config["study"]["models"] = list(models)
    # Dependency heads selected and scored on EWT's dev split (a study may, and says so): its train dumps would add 87
    # jobs (a fifth of the study) that no test of the families needs.
    config["attention"]["corpora"] = {"wiki": ["segments"], "ewt": ["dev"]}
    config["syntax"] = {"select_split": "dev"}
    config["attention"]["signals"] = ["attention", "norm"]
    # EWT alone: GUM's coreference windows would add 70 jobs, and no test of it reads them (unit tests take a causal
    # map through coreference).
    config["study"]["treebanks"] = ["ewt"]
    config["finetune"].update(method="lora", lora_rank=2, lora_alpha=4, lora_learning_rate=1.0e-2)
    # The fine-tuned checkpoints' roles are the tiny study's to test (tests/workflow/test_e2e.py): here they would add
    # about 15 jobs per model that no test of the families reads.
    config["roles"] = {"finetuned": []}
    # the hand-set GPT-2 codes token ids below TOKEN_CODES only: the random-token inputs draw from those
    config["surface"]["diagnostics"].update(token_range=[5, TOKEN_CODES], sequences=8)
    (work / "tiny.yaml").write_text(yaml.safe_dump(config))
    return work
