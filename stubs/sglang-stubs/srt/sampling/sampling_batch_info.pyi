# Only the surface a SamplingObserver reads to decide whether it is active.
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
    def __getattr__(self, name: str) -> Incomplete: ...

def __getattr__(name: str) -> Incomplete: ...
