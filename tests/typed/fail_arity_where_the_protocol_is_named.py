"""A wrong copy_to_host arity is an error wherever the code names the Protocol.

Annotating the hook's return type (``-> DeviceAuxiliaryOutput | None``), a variable or
a parameter, or subclassing the Protocol, is what lets mypy compare the class with the
contract.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import torch
from sglang.srt.managers.auxiliary_output import CommittedTokens, DeviceAuxiliaryOutput
from sglang.srt.managers.schedule_batch import ScheduleBatch


class Host:
    def consume(self, batch: ScheduleBatch, commits: Sequence[CommittedTokens | None]) -> None:
        pass


class NoCopyArgument:
    def copy_to_host(self) -> Host:
        return Host()


class NamesTheProtocol:
    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> Any:
        return logits

    def after_sample(self, state: Any, token_ids: torch.Tensor) -> DeviceAuxiliaryOutput | None:
        return NoCopyArgument()  # type: ignore[return-value]


def publish(output: DeviceAuxiliaryOutput) -> None:
    pass


publish(NoCopyArgument())  # type: ignore[arg-type]
