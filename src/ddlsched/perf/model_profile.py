"""A DNN's per-iteration costs on one GPU: the input of the Wang/Yu performance models.

It lives in ``perf`` (the layer below ``core``) so that the models need nothing from the
engine; ``ddlsched.core.job`` re-exports it under its old name.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True)
class ModelProfile:
    """A DNN's per-iteration costs on one GPU (Wang Table III).

    ``t_forward``/``t_backward`` in seconds per iteration at ``batch_size``; ``size_mb`` is the
    gradient (= model) size exchanged by one all-reduce; ``memory_mb`` the GPU memory of one worker.
    """

    name: str
    size_mb: float
    memory_mb: float
    batch_size: int
    t_forward: float
    t_backward: float

    @property
    def t_compute(self) -> float:
        return self.t_forward + self.t_backward
