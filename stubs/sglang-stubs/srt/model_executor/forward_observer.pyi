# SGLang main after 0.5.23 (not in any release yet): a hook right after the forward pass.
# Its output is composed with the sampling observer's, forward first.
from typing import Any, Protocol

from sglang.srt.managers.auxiliary_output import DeviceAuxiliaryOutput
from sglang.srt.managers.schedule_batch import ScheduleBatch

class ForwardObserver(Protocol):
    def after_forward(
        self,
        batch: ScheduleBatch,
        forward_batch: Any,
        logits_output: Any,
        *,
        can_run_graph: bool,
    ) -> DeviceAuxiliaryOutput | None: ...
