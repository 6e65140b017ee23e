"""mypy cannot know a class is a device output until the code says so.

Here the hook is annotated with the plugin's own class, never with the Protocol, so a
``copy_to_host`` without its ``copy_tensor`` parameter type-checks clean: auxcheck's
AUX102 (``auxcheck validate``, ``pytest --auxcheck``) finds it at run time. Name the
Protocol, as in fail_arity_where_the_protocol_is_named.py, to have mypy find it too.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import CommittedTokens
from sglang.srt.managers.schedule_batch import ScheduleBatch


class Host:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        pass


class NoCopyArgument:
    def copy_to_host(self) -> Host:
        return Host()


class NamesItsOwnClass:
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        return logits

    def after_sample(self, state: Any, token_ids: torch.Tensor) -> NoCopyArgument | None:
        return NoCopyArgument()
