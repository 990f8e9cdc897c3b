"""The arithmetic of a model's training and forward passes: ``fp32``, ``tf32`` or ``bf16`` (the fine-tuning
setting ``precision``; docs/finetune.md). The weights stay float32 in every case; what changes is how the matrix
products are computed, so the same checkpoint format and the same later stages read the result.

- ``fp32``: float32 throughout, TensorFloat-32 switched off: the results of the runs before this option existed.
- ``tf32``: a GPU's matrix products in TensorFloat-32 (10-bit mantissa inputs, float32 sums); on a CPU, fp32.
- ``bf16``: the forward and backward passes under bfloat16 autocast (torch.autocast), on a GPU or a CPU; the loss,
  the softmax and the normalisations stay float32 where autocast keeps them so.
"""

from __future__ import annotations

import contextlib
from typing import Any

PRECISIONS = ("fp32", "tf32", "bf16")


def set_matmul_precision(precision: str, device: str) -> None:
    """Allow TensorFloat-32 products on a GPU for ``tf32``, and forbid them otherwise (process-wide)."""
    import torch

    if precision not in PRECISIONS:
        raise ValueError(f"precision {precision!r} is not one of {', '.join(PRECISIONS)}")
    if device.startswith("cuda"):
        torch.backends.cuda.matmul.allow_tf32 = precision == "tf32"
        torch.backends.cudnn.allow_tf32 = precision == "tf32"


def autocast(precision: str, device: str) -> Any:
    """The context a forward (and its backward) runs in: bfloat16 autocast for ``bf16``, nothing otherwise."""
    import torch

    if precision == "bf16":
        return torch.autocast(device_type=device.split(":")[0], dtype=torch.bfloat16)
    return contextlib.nullcontext()
