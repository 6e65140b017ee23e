# Only the surface that HostAuxiliaryOutput.consume implementations touch.
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
    def finished(self) -> bool: ...
    def __getattr__(self, name: str) -> Incomplete: ...

class ScheduleBatch:
    reqs: list[Req]
    def __getattr__(self, name: str) -> Incomplete: ...

def __getattr__(name: str) -> Incomplete: ...
