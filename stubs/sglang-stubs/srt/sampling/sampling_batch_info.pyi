# Only the surface a SamplingObserver reads to decide whether it is active. Partial: what it
# does not declare is accepted as SGLang's real class accepts it.
import torch
from _typeshed import Incomplete

class SamplingBatchInfo:
    temperatures: torch.Tensor
    top_ps: torch.Tensor
    top_ks: torch.Tensor
    min_ps: torch.Tensor
    is_all_greedy: bool
    vocab_size: int
    device: str
    def __init__(self, *args: Incomplete, **kwargs: Incomplete) -> None: ...
    def __getattr__(self, name: str) -> Incomplete: ...
    def __setattr__(self, name: str, value: Incomplete) -> None: ...

def __getattr__(name: str) -> Incomplete: ...
