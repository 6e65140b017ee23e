"""auxcheck's verdict on a plugin's ``consume`` against what SGLang's real scheduler does with it.

Each host output of ``plugins.py`` runs inside SGLang 0.5.23's real result processing over
scenarios that reach every kind of commit (an abort while running, a chunked prefill, stops,
length), and through ``auxcheck``'s step loop (``check_sampling_observer``). A plugin that
crashes the real scheduler must get a failing finding whose fix names the real cause; one that
SGLang runs fine must get none.
"""

from __future__ import annotations

import importlib.util
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import torch
from helpers.sglang_cpu import Driver

from auxcheck.validate import check_sampling_observer

pytestmark = pytest.mark.slow

PLUGINS = Path(__file__).with_name("plugins.py")
SCENARIOS = [
    {"overlap": True, "requests": [{"rid": "a", "max_new_tokens": 8},
                                   {"rid": "b", "max_new_tokens": 3}],
     "steps": [{"a": "chunked"}, {}, {"a": "abort"}, {"b": "eos"}, {}]},
    {"overlap": False, "requests": [{"rid": "a", "max_new_tokens": 4},
                                    {"rid": "b", "max_new_tokens": 8}],
     "steps": [{}, {"b": "stop_str"}, {}, {}, {}]},
]


def plugins() -> ModuleType:
    spec = importlib.util.spec_from_file_location("sglang_cpu_plugins", PLUGINS)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def sglang_raised(driver: Driver, name: str) -> str | None:
    """Returns what the plugin's consume raised in SGLang's real scheduler, or None."""
    for scenario in SCENARIOS:
        result = driver.run({**scenario, "host": f"{PLUGINS}:{name}"})
        if "plugin_raised" in result:
            return str(result["plugin_raised"])
    return None


class Publishing:
    """A sampling observer publishing one host output of ``host_class`` a step."""

    def __init__(self, host_class: type) -> None:
        self.host_class = host_class

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
        return logits.amax(dim=-1).clone()

    def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
        host_class = self.host_class

        class Device:
            def copy_to_host(self, copy_tensor: Any) -> Any:
                copy_tensor(state)
                return host_class()

        return Device()


VERDICTS = {
    "VisibleTailFromFinishedLen": ("TypeError", "finished_len` None"),
    "VisibleTailGuarded": None,
    "TokensOfEveryCommit": ("AttributeError", "handle None commits"),
    "PerRequestBudget": None,
}
"""What SGLang's real scheduler raises for each plugin, and a phrase auxcheck's fix must hold."""


@pytest.mark.parametrize("name", list(VERDICTS))
def test_auxcheck_fails_exactly_the_plugins_that_crash_sglang(sglang: Driver, name: str) -> None:
    real = sglang_raised(sglang, name)
    report = check_sampling_observer(Publishing(getattr(plugins(), name)))
    failures = [f for f in report if not f.is_note]
    expected = VERDICTS[name]
    if expected is None:
        assert real is None
        assert failures == [], [str(f) for f in report]
        return
    error, fix = expected
    assert real is not None and real.startswith(error), real
    assert [f.code for f in failures] == ["AUX202"], [str(f) for f in report]
    assert error in failures[0].message
    assert fix in failures[0].hint, failures[0].hint


def test_the_sampler_edits_the_logits_before_after_sample_as_the_model_does(sglang: Driver) -> None:
    """SGLang's real sampler leaves probabilities in the tensor before_grammar was handed; so does
    the model, value for value, which is what AUX115 rests on."""
    from auxcheck._runtime.forward import FakeSamplingInfo
    from auxcheck._runtime.observer_hooks import _sample

    generator = torch.Generator().manual_seed(7)
    logits = torch.randn(3, 16, generator=generator)
    temperatures = [0.7, 1.0, 1.3]
    real = sglang.run({"sample": {"logits": logits.tolist(), "temperatures": temperatures}})
    assert real["before_grammar"] == logits.tolist()
    model = logits.clone()
    _sample(model, FakeSamplingInfo(torch.tensor(temperatures)[:, None], torch.ones(3),
                                    torch.full((3,), 16), torch.zeros(3), 16))
    assert torch.allclose(torch.tensor(real["after_sample"]), model, atol=1e-6)
    assert not torch.allclose(model, logits)


def test_an_after_sample_reading_kept_logits_is_aux115_and_a_clone_is_not() -> None:
    class Kept:
        def __init__(self, clone: bool) -> None:
            self.clone = clone

        def is_active(self, sampling_info: Any) -> bool:
            return True

        def before_grammar(self, logits: torch.Tensor, sampling_info: Any) -> torch.Tensor:
            return logits.clone() if self.clone else logits

        def after_sample(self, state: torch.Tensor, token_ids: torch.Tensor) -> Any:
            return Publishing(plugins().VisibleTailGuarded).after_sample(
                state.gather(1, token_ids[:, None]).squeeze(1).clone(), token_ids)

    assert check_sampling_observer(Kept(clone=False)).codes == ["AUX115"]
    assert check_sampling_observer(Kept(clone=True)).codes == []
