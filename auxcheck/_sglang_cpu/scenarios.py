"""The fixed requests ``auxcheck live`` sends a real server: each a path through SGLang's scheduler a plugin must survive.

Every scenario runs against a server started with ``--chunked-prefill-size 256`` (so a
long prompt is prefilled in chunks), once with overlap scheduling and once without.
A scenario fails when a request gets an error answer, ends in a way it was not asked to
(an abort nobody sent, an error finish), or gets no answer within the scenario's time
limit (hung). What the tiny random model writes is noise, and a plugin may change it:
no scenario judges the text, only that SGLang served the request to its end: an abort nobody
sent or an error is a failure, a stop where a plugin may have added one is not.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any

from auxcheck._core.errors import RequestFailed, ScenarioFailed
from auxcheck._sglang_cpu.server import Server

__all__ = ["CHUNK", "SCENARIOS", "Outcome", "Scenario", "run_scenario"]

CHUNK = 256
"""The chunked-prefill size every server is started with (``--chunked-prefill-size``): a
multiple of every page size a plugin may set (SGLang asserts that it divides the chunk), and
under the tiny model's 512-token context, so that the long prompt takes two chunks."""
LONG = 450
"""The long prompt's length in characters (tokens, for the tiny model's tokenizer)."""


@dataclass(frozen=True, slots=True)
class Scenario:
    """One documented scenario: its name, what it sends, and the code that sends it."""

    name: str
    what: str
    run: Callable[[Server, float], str]


@dataclass(frozen=True, slots=True)
class Outcome:
    """How one scenario went on one server: ``ok``, else ``hung`` or failed with ``message``."""

    scenario: str
    ok: bool
    message: str
    seconds: float
    hung: bool = False


def _finished(answer: Mapping[str, Any], allowed: Iterable[str], what: str) -> str:
    reason = (answer.get("meta_info") or {}).get("finish_reason") or {}
    kind = reason.get("type") if isinstance(reason, dict) else None
    if kind not in set(allowed):
        detail = f": {reason.get('message')}" if isinstance(reason, dict) and reason.get(
            "message") else ""
        raise ScenarioFailed(f"{what} ended with finish reason {kind!r}{detail}, expected "
                             f"{' or '.join(sorted(set(allowed)))}")
    return str(kind)


def _greedy(server: Server, timeout: float) -> dict[str, Any]:
    return server.generate("the quick brown fox", timeout=timeout, temperature=0.0,
                           max_new_tokens=12, ignore_eos=True)


def _concurrent(server: Server, timeout: float) -> str:
    """Four requests at once: prompts of 3 to 40 characters, 4 to 23 new tokens each."""
    lengths = [(3, 4), (11, 9), (24, 16), (40, 23)]
    answers: list[Any] = [None] * len(lengths)

    def send(index: int, prompt: int, tokens: int) -> None:
        try:
            answers[index] = server.generate(("abcdefghij" * 4)[:prompt], timeout=timeout,
                                             max_new_tokens=tokens, ignore_eos=True)
        except RequestFailed as error:
            answers[index] = error

    threads = [threading.Thread(target=send, args=(i, p, t), daemon=True)
               for i, (p, t) in enumerate(lengths)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout)
    for (prompt, tokens), answer in zip(lengths, answers):
        what = f"the request of {prompt} characters for {tokens} tokens"
        if answer is None:
            raise RequestFailed(f"{what} got no answer in {timeout:g} s", hung=True)
        if isinstance(answer, RequestFailed):
            raise type(answer)(f"{what}: {answer}", hung=answer.hung)
        _finished(answer, {"length", "stop"}, what)
    return f"{len(lengths)} requests served together"


def _stop_token(server: Server, timeout: float) -> str:
    """A greedy request, then the same one stopping at the third token it produced."""
    ids = _greedy(server, timeout).get("output_ids") or []
    if len(ids) < 3:
        return "the model produced fewer than 3 tokens: no stop token to ask for"
    answer = server.generate("the quick brown fox", timeout=timeout, temperature=0.0,
                             max_new_tokens=12, stop_token_ids=[ids[2]])
    return _finished(answer, {"stop", "length"}, "the request with a stop token")


def _stop_string(server: Server, timeout: float) -> str:
    """A greedy request, then the same one stopping at two characters of what it wrote."""
    text = str(_greedy(server, timeout).get("text") or "")
    if len(text) < 4:
        return "the model wrote fewer than 4 characters: no stop string to ask for"
    answer = server.generate("the quick brown fox", timeout=timeout, temperature=0.0,
                             max_new_tokens=12, stop=[text[2:4]])
    return _finished(answer, {"stop", "length"}, "the request with a stop string")


def _long_prompt(server: Server, timeout: float) -> str:
    """A prompt of LONG characters: prefilled in chunks of CHUNK tokens."""
    answer = server.generate(("lorem ipsum dolor sit amet " * 20)[:LONG],
                             timeout=timeout, max_new_tokens=6, ignore_eos=True)
    return _finished(answer, {"length", "stop"}, f"the request longer than the chunk of {CHUNK}")


def _grammar(server: Server, timeout: float) -> str:
    """A regex-constrained request (xgrammar; sampling is delayed while it runs)."""
    answer = server.generate("spell a word:", timeout=timeout, max_new_tokens=8,
                             regex="[a-z]{5}")
    return _finished(answer, {"stop", "length"}, "the grammar-constrained request")


def _abort(server: Server, timeout: float) -> str:
    """A streamed request of 400 tokens, aborted after its first token."""
    for attempt in range(3):
        rid = f"auxcheck-abort-{attempt}-{time.monotonic_ns()}"
        last: dict[str, Any] = {}
        chunks = server.stream("hello world", rid, timeout=timeout, max_new_tokens=400,
                               ignore_eos=True)
        for chunk in chunks:
            if not last:
                server.abort(rid, timeout=timeout)
            last = chunk
        if not last:
            raise ScenarioFailed("the aborted request streamed nothing")
        kind = _finished(last, {"abort", "length"}, "the aborted request")
        if kind == "abort":
            return "aborted while running"
    return "the request finished before the abort reached it, three times"


SCENARIOS: tuple[Scenario, ...] = (
    Scenario("concurrent", "four requests at once, prompts of 3-40 characters, 4-23 tokens each",
             _concurrent),
    Scenario("stop-token", "a greedy request stopping at a token id it produces", _stop_token),
    Scenario("stop-string", "a greedy request stopping at a string it writes", _stop_string),
    Scenario("long-prompt", f"a {LONG}-character prompt, prefilled in chunks of {CHUNK} tokens",
             _long_prompt),
    Scenario("grammar", "a request constrained by the regex [a-z]{5} (xgrammar)", _grammar),
    Scenario("abort", "a streamed 400-token request aborted after its first token", _abort),
)
"""The scenarios, in the order they run."""


def run_scenario(server: Server, scenario: Scenario, timeout: float) -> Outcome:
    """Runs ``scenario`` with ``timeout`` seconds for each request; returns how it went."""
    start = time.monotonic()
    try:
        text = scenario.run(server, timeout)
    except RequestFailed as error:
        return Outcome(scenario.name, False, str(error), time.monotonic() - start, error.hung)
    return Outcome(scenario.name, True, text, time.monotonic() - start)
