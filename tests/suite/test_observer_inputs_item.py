"""Tests for the ``AUX113-inputs-read-only`` item of ``pytest --auxcheck``'s observer groups, run
with pytester: an observer that writes to what SGLang handed it fails it; a clean one passes."""

from __future__ import annotations

import textwrap

# In-process pytester runs drop the modules they imported afterwards, and torch cannot
# be imported twice in one process: import every heavy module the suite uses up front.
import pytest
import torch  # noqa: F401

import auxcheck._suite.item_runs  # noqa: F401

pytest_plugins = ["pytester"]

OBSERVERS = textwrap.dedent("""
    import torch

    class Host:
        def __init__(self, rows):
            self.rows = rows

        def consume(self, batch, commits):
            return None

    class Rows:
        def __init__(self, rows):
            self.rows = rows

        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.rows))

    class Clean:
        def is_active(self, info):
            return True

        def before_grammar(self, logits, info):
            masked = logits.clone()
            kth = masked.topk(5, dim=-1).values[:, -1:]
            return masked.masked_fill_(masked < kth, float("-inf")).topk(2, dim=-1).values

        def after_sample(self, state, token_ids):
            return Rows(state)

    class Masking(Clean):
        def before_grammar(self, logits, info):
            kth = logits.topk(5, dim=-1).values[:, -1:]
            logits.masked_fill_(logits < kth, float("-inf"))
            return logits.topk(2, dim=-1).values.clone()

    class ScalesHidden:
        def after_forward(self, batch, forward_batch, logits_output, *, can_run_graph):
            logits_output.hidden_states.mul_(2)
            return Rows(logits_output.hidden_states.clone())

    class Output:
        def __init__(self):
            self.rows = torch.zeros(2, 2)

        def copy_to_host(self, copy_tensor):
            return Host(copy_tensor(self.rows))
""")

CONFTEST = textwrap.dedent("""
    import pytest
    import observers

    @pytest.fixture(params=["masking", "clean"])
    def auxcheck_sampling_observer(request):
        return observers.Masking() if request.param == "masking" else observers.Clean()

    @pytest.fixture
    def auxcheck_forward_observer():
        return observers.ScalesHidden()

    @pytest.fixture
    def auxcheck_device_output():
        return observers.Output()
""")

FAST = ("--auxcheck", "-p", "no:randomly", "-k", "not impl and not imports")


@pytest.fixture
def project(pytester: pytest.Pytester) -> pytest.Pytester:
    """Returns a pytester project whose conftest gives a masking, a clean and a forward observer."""
    pytester.makepyfile(observers=OBSERVERS)
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    return pytester


def _outcomes(result: pytest.RunResult) -> dict[str, str]:
    """Returns the outcome of each AUX113 item of a ``-rA`` run, by node id."""
    found = {}
    for line in result.outlines:
        word, _, rest = line.partition(" ")
        if word in ("PASSED", "FAILED", "SKIPPED") and "AUX113" in rest:
            found[rest.split(" ")[0]] = word
    return found


def test_the_masking_observer_fails_aux113_and_the_clean_one_passes(
    project: pytest.Pytester,
) -> None:
    """In-place masking of the logits fails the item, naming the call and the tensor."""
    result = project.runpytest_inprocess(*FAST, "-rA", "-k", "AUX113")
    assert _outcomes(result) == {
        "auxcheck::auxcheck_forward_observer::AUX113-inputs-read-only": "FAILED",
        "auxcheck::auxcheck_sampling_observer::AUX113-inputs-read-only[clean]": "PASSED",
        "auxcheck::auxcheck_sampling_observer::AUX113-inputs-read-only[masking]": "FAILED",
    }
    result.stdout.fnmatch_lines([
        ("*seen:*before_grammar at step 1 wrote to `logits` [[]3, 32] float32: 81 of 96 "
         "values changed"),
        "*seen:*after_forward at step 1 wrote to `logits_output.hidden_states` *",
    ])


def test_a_device_output_group_has_no_aux113_item(project: pytest.Pytester) -> None:
    """AUX113 is about hooks: a device output's group never collects it."""
    result = project.runpytest_inprocess(*FAST, "--co", "-q")
    items = [line for line in result.outlines if "AUX113" in line]
    assert items and not any("auxcheck_device_output" in line for line in items)

