# Only the surface that HostAuxiliaryOutput.consume implementations touch. The classes are
# partial: what they do not declare (constructor parameters, other fields, attributes a plugin
# sets) is accepted as SGLang's real classes accept it; `auxcheck check --sglang` judges
# constructor calls against each release's real signature.
from array import array
from typing import Any

from _typeshed import Incomplete

class Req:
    rid: str
    origin_input_ids: array[int]
    output_ids: array[int]
    finished_len: int | None
    is_retracted: bool
    customized_info: dict[str, list[Any]] | None
    def __init__(self, *args: Incomplete, **kwargs: Incomplete) -> None: ...
    def finished(self) -> bool: ...
    def __getattr__(self, name: str) -> Incomplete: ...
    def __setattr__(self, name: str, value: Incomplete) -> None: ...

class ScheduleBatch:
    reqs: list[Req]
    def __init__(self, *args: Incomplete, **kwargs: Incomplete) -> None: ...
    def __getattr__(self, name: str) -> Incomplete: ...
    def __setattr__(self, name: str, value: Incomplete) -> None: ...

def __getattr__(name: str) -> Incomplete: ...
