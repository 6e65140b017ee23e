"""auxcheck's stand-ins for SGLang's objects, held to the real objects of SGLang 0.5.23.

The table of real fields (``auxcheck/_runtime/sglang_fields.py``) must be what the real
objects carry; every field a stand-in simulates must exist on the real class; a plugin that
reads a real field the stand-in does not simulate gets a note (AUX205), never a failure,
while one that reads a field SGLang does not have still fails.
"""

from __future__ import annotations

import dataclasses
import json
import subprocess
from pathlib import Path
from typing import Any

import pytest
import torch
from helpers.sglang_cpu import environment

from auxcheck._runtime.forward import FakeSamplingInfo
from auxcheck._runtime.scheduler import FakeBatch, FakeReq, FakeSamplingParams
from auxcheck._runtime.sglang_fields import REAL_FIELDS, STAND_INS
from auxcheck.validate import check_sampling_observer

FIELDS = Path(__file__).with_name("fields.py")


@pytest.mark.slow
def test_the_table_of_real_fields_is_what_sglang_s_real_objects_carry() -> None:
    env = environment()
    done = subprocess.run([str(env.python), str(FIELDS)], capture_output=True, text=True,
                          env=env.environ(), check=True)
    real = {name: frozenset(names) for name, names in json.loads(done.stdout).items()}
    assert real == REAL_FIELDS, ("regenerate auxcheck/_runtime/sglang_fields.py from "
                                 "tests/sglang_cpu/fields.py")


@pytest.mark.parametrize("stand_in", [FakeReq, FakeBatch, FakeSamplingParams, FakeSamplingInfo],
                         ids=lambda c: c.__name__)
def test_every_field_a_stand_in_simulates_is_on_the_real_object(stand_in: type) -> None:
    simulated = {f.name for f in dataclasses.fields(stand_in)}
    simulated |= {n for n in vars(stand_in) if not n.startswith("_") and callable(vars(stand_in)[n])}
    assert simulated - REAL_FIELDS[STAND_INS[stand_in.__name__]] == set()


class Reading:
    """A sampling observer whose host output's consume, or whose before_grammar, reads ``field``."""

    def __init__(self, where: str, field: str) -> None:
        self.where, self.field = where, field

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        if self.where == "sampling_info":
            getattr(sampling_info, self.field)
        return logits.amax(dim=-1).clone()

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        where, field = self.where, self.field

        class Host:
            def consume(self, batch: Any, commits: Any) -> None:
                for req in batch.reqs if where != "sampling_info" else ():
                    getattr({"req": req, "batch": batch,
                             "params": req.sampling_params}.get(where, req), field)

        class Device:
            def copy_to_host(self, copy_tensor: Any) -> Any:
                copy_tensor(state)
                return Host()

        return Device()


READS = {
    "the request's time stats (real, not simulated)": ("req", "time_stats", "AUX205"),
    "the batch's sampling info (real, not simulated)": ("batch", "sampling_info", "AUX205"),
    "the sampling info's penalizer (real, not simulated)": ("sampling_info",
                                                            "penalizer_orchestrator", "AUX205"),
    "the request's sampling parameters (simulated)": ("req", "sampling_params", None),
    "the custom parameters (simulated)": ("params", "custom_params", None),
    "the batch's forward mode (simulated)": ("batch", "forward_mode", None),
    "the sampling info's grammars (simulated)": ("sampling_info", "grammars", None),
    "a field no SGLang request has (a typo)": ("req", "finish_len", "AUX202"),
    "a field no sampling info has (a typo)": ("sampling_info", "temperature", "AUX102"),
}


@pytest.mark.parametrize(("where", "field", "code"), list(READS.values()), ids=list(READS))
def test_a_plugin_reading(where: str, field: str, code: str | None) -> None:
    report = check_sampling_observer(Reading(where, field))
    everything = [*report, *report.notes]
    assert sorted({f.code for f in everything}) == ([code] if code else []), everything
    if code == "AUX205":
        assert report.ok
        assert f"`{field}`" in report.notes[0].message
