"""A plugin written as a new user would, from the README and SGLang 0.5.23's source, judged by
``pytest --auxcheck``: right as written, and each planted bug caught under its own code.

The observer publishes the chosen token's logprob ``[batch]`` and the top-k ids ``[batch, k]``
(they cross pipeline-parallel stages), composed with an entropy output (which never does), and
its host output reads one token per commit, as stock SGLang's steps give it.
"""

from __future__ import annotations

import textwrap

# In-process pytester runs drop the modules they imported afterwards, and torch cannot
# be imported twice in one process: import every heavy module the suite uses up front.
import pytest
import torch  # noqa: F401

import auxcheck._suite.item_runs
import auxcheck.machine
import auxcheck.migrate.scan  # noqa: F401

pytest_plugins = ["pytester"]

PLUGIN = textwrap.dedent("""
    import torch
    from auxcheck.protocols import append_auxiliary_output

    K = 2
    SEEN = []

    class TokenHost:
        def __init__(self, logprob, topk):
            self.logprob, self.topk = logprob, topk

        def consume(self, batch, commits):
            for i, (req, commit) in enumerate(zip(batch.reqs, commits)):
                if commit is not None:
                    (token,) = commit.token_ids
                    SEEN.append((req.rid, token, float(self.logprob[i]), self.topk[i].tolist()))

    class TokenOutput:
        def __init__(self, logprob, topk):
            self.logprob, self.topk = logprob, topk

        def copy_to_host(self, copy_tensor):
            return TokenHost(copy_tensor(self.logprob), copy_tensor(self.topk))

        def to_pp_tensors(self):
            return {"logprob": self.logprob, "topk": self.topk}

    class EntropyHost:
        def __init__(self, entropy):
            self.entropy = entropy

        def consume(self, batch, commits):
            return None

    class EntropyOutput:
        def __init__(self, entropy):
            self.entropy = entropy

        def copy_to_host(self, copy_tensor):
            return EntropyHost(copy_tensor(self.entropy))

    class TopKObserver:
        def is_active(self, sampling_info):
            return True

        def before_grammar(self, logits, sampling_info):
            return torch.log_softmax(logits.float(), dim=-1)

        def after_sample(self, logprobs, token_ids):
            chosen = logprobs.gather(1, token_ids.view(-1, 1).long()).view(-1)
            topk = logprobs.topk(K, dim=-1).indices
            entropy = -(logprobs.exp() * logprobs).sum(-1)
            return append_auxiliary_output(TokenOutput(chosen, topk), EntropyOutput(entropy))

        def from_pp_tensors(self, tensors):
            return TokenOutput(tensors["logprob"], tensors["topk"])

    def token_output(batch):
        n = len(batch.reqs)
        return TokenOutput(torch.zeros(n), torch.zeros(n, K, dtype=torch.long))

    def composed(batch):
        n = len(batch.reqs)
        return append_auxiliary_output(token_output(batch), EntropyOutput(torch.zeros(n)))

    # ------------------------------------------------ planted bugs, one each

    class MasksTheLogits(TopKObserver):
        def before_grammar(self, logits, sampling_info):
            kth = logits.topk(K, dim=-1).values[:, -1:]
            logits.masked_fill_(logits < kth, float("-inf"))  # every request becomes top-k
            return torch.log_softmax(logits.float(), dim=-1)

    class KeepsAViewOfTheLogits(TopKObserver):
        def before_grammar(self, logits, sampling_info):
            return logits  # the graph's buffer: rewritten by the next step's replay

        def after_sample(self, logits, token_ids):
            return TokenOutput(logits[:, 0], logits.topk(K, dim=-1).indices)

    class CopiesTwice(TokenOutput):
        def copy_to_host(self, copy_tensor):
            copy_tensor(self.logprob)
            return TokenHost(copy_tensor(self.logprob), copy_tensor(self.topk))

    class KeepsTheDeviceTensor(TokenOutput):
        def copy_to_host(self, copy_tensor):
            copy_tensor(self.logprob)
            return TokenHost(self.logprob, copy_tensor(self.topk))

    class SortingHost(TokenHost):
        def consume(self, batch, commits):
            batch.reqs.sort(key=lambda req: req.rid)

    class SortsTheRequests(TokenOutput):
        def copy_to_host(self, copy_tensor):
            return SortingHost(copy_tensor(self.logprob), copy_tensor(self.topk))

    class CountingHost(TokenHost):
        def consume(self, batch, commits):
            return len(commits)

    class ReturnsACount(TokenOutput):
        def copy_to_host(self, copy_tensor):
            return CountingHost(copy_tensor(self.logprob), copy_tensor(self.topk))

    class SendsNothingAcross(TokenOutput):
        def to_pp_tensors(self):
            return {}

    def planted(kind):
        def make(batch):
            n = len(batch.reqs)
            return kind(torch.zeros(n), torch.zeros(n, K, dtype=torch.long))
        return make
""")

CONFTEST = textwrap.dedent("""
    import pytest
    from hypothesis import settings

    import plugin

    settings.register_profile("tiny", max_examples=5, deadline=None, database=None)

    OBSERVERS = {"as-written": plugin.TopKObserver, "masks-the-logits": plugin.MasksTheLogits,
                 "keeps-a-view-of-the-logits": plugin.KeepsAViewOfTheLogits}
    OUTPUTS = {"as-written": plugin.token_output,
               "copies-twice": plugin.planted(plugin.CopiesTwice),
               "keeps-the-device-tensor": plugin.planted(plugin.KeepsTheDeviceTensor),
               "sorts-the-requests": plugin.planted(plugin.SortsTheRequests),
               "returns-a-count": plugin.planted(plugin.ReturnsACount),
               "sends-nothing-across": plugin.planted(plugin.SendsNothingAcross)}

    @pytest.fixture(params=list(OBSERVERS))
    def auxcheck_sampling_observer(request):
        return OBSERVERS[request.param]()

    @pytest.fixture(params=[*OUTPUTS, pytest.param("composed", marks=pytest.mark.auxcheck_pp(False))])
    def auxcheck_device_output(request):
        return OUTPUTS.get(request.param, plugin.composed)

    @pytest.fixture
    def auxcheck_pp_observer():
        return plugin.TopKObserver()
""")

PLANTED = {
    "masks-the-logits": {"AUX113"},
    # a view of the graph's logits buffer, read again in after_sample: the next replay
    # rewrites it (AUX110), and by after_sample the sampler has made it probabilities (AUX115)
    "keeps-a-view-of-the-logits": {"AUX110", "AUX115"},
    "copies-twice": {"AUX104"},
    "keeps-the-device-tensor": {"AUX105"},
    "sorts-the-requests": {"AUX203"},
    "returns-a-count": {"AUX204"},
    "sends-nothing-across": {"AUX402"},
}
"""Each planted bug, by its fixture value's id, and the codes of the items it fails."""


def failed_items(pytester: pytest.Pytester, *args: str) -> dict[str, set[str]]:
    """Runs ``pytest --auxcheck`` on the plugin; returns each fixture value's failing codes."""
    pytester.makepyfile(plugin=PLUGIN)
    pytester.makeconftest(CONFTEST)
    pytester.syspathinsert()
    recorded = pytester.inline_run("--auxcheck", "--auxcheck-profile=tiny", "-p", "no:randomly",
                                   "-k", "not impl and not imports", *args)
    passed, _, failed = recorded.listoutcomes()
    assert passed, "the suite judged nothing"
    found: dict[str, set[str]] = {}
    for report in failed:
        name, _, value = report.nodeid.rpartition("::")[2].partition("[")
        found.setdefault(value.rstrip("]"), set()).add(name.partition("-")[0])
    return found


def test_the_plugin_as_written_passes_and_each_planted_bug_fails_its_own_code(
        pytester: pytest.Pytester) -> None:
    """One-token consume passes; the in-place mask fails AUX113; the planted bugs are caught."""
    found = failed_items(pytester)
    assert found == PLANTED


def test_declaring_speculative_decoding_fails_the_one_token_consume(
        pytester: pytest.Pytester) -> None:
    """Under speculative decoding the same consume unpacks several tokens: AUX202, as written."""
    found = failed_items(pytester, "--auxcheck-speculative")
    assert "AUX202" in found["as-written"]
