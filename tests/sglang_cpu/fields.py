"""Prints the attributes of SGLang's real request, batch and sampling objects (run in the CPU environment).

Instance fields come from real objects built as the scheduler builds them (``Req.__init__``,
``SamplingParams.normalize``) or from the dataclass fields (``ScheduleBatch``,
``SamplingBatchInfo``); methods and properties from the classes. One JSON object on stdout:
class name -> sorted names (private ones left out).
"""

from __future__ import annotations

import dataclasses
import json
from array import array


def public(names: object) -> list[str]:
    return sorted(n for n in names if not n.startswith("_"))  # type: ignore[attr-defined]


def main() -> None:
    from sglang.srt.constrained.base_grammar_backend import BaseGrammarObject
    from sglang.srt.managers.schedule_batch import Req, ScheduleBatch
    from sglang.srt.sampling.sampling_batch_info import SamplingBatchInfo
    from sglang.srt.sampling.sampling_params import SamplingParams

    params = SamplingParams(max_new_tokens=4)
    params.normalize(None)
    req = Req("r", "x", array("q", [1, 2]), params, vocab_size=128)
    out = {
        "Req": public(dir(req)),
        "SamplingParams": public(dir(params)),
        "ScheduleBatch": public({f.name for f in dataclasses.fields(ScheduleBatch)}
                                | set(dir(ScheduleBatch))),
        "SamplingBatchInfo": public({f.name for f in dataclasses.fields(SamplingBatchInfo)}
                                    | set(dir(SamplingBatchInfo))),
        "BaseGrammarObject": public(dir(BaseGrammarObject())),
    }
    print(json.dumps(out))


if __name__ == "__main__":
    main()
