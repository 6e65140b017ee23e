# Only SamplingObserver lives here since SGLang 0.5.20. CommittedTokens,
# DeviceAuxiliaryOutput and HostAuxiliaryOutput moved to
# sglang.srt.managers.auxiliary_output and are deliberately absent, so an
# import from their old home is a mypy error.
from typing import Any, Protocol

import torch
from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput
from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo

# Called positionally by SGLang (ModelRunner, SamplingBatchInfo): positional-only here, so
# an implementation may name its parameters as it likes.
class SamplingObserver(Protocol):
    def is_active(self, sampling_info: SamplingBatchInfo, /) -> bool: ...
    def before_grammar(self, logits: torch.Tensor, sampling_info: SamplingBatchInfo, /) -> Any: ...
    def after_sample(
        self, state: Any, token_ids: torch.Tensor, /
    ) -> DeviceAuxiliaryOutput | None: ...
