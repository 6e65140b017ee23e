"""Host outputs written as plugin authors write them, each judged by SGLang's real scheduler and by auxcheck.

Each class is a host output's ``consume``; the differential tier runs it inside SGLang's real
result processing and through ``auxcheck``'s step loop, and the two verdicts must agree.
"""

from __future__ import annotations

from typing import Any


class VisibleTailFromFinishedLen:
    """Counts the committed tokens still visible once a request finished: crashes on an abort."""

    def consume(self, batch: Any, commits: Any) -> None:
        for req, commit in zip(batch.reqs, commits):
            if commit is not None and req.finished():
                kept = req.finished_len - commit.output_index
                req.customized_info = {"kept": [kept]}


class VisibleTailGuarded:
    """The same count, reading the visible length as SGLang does."""

    def consume(self, batch: Any, commits: Any) -> None:
        for req, commit in zip(batch.reqs, commits):
            if commit is not None and req.finished():
                end = req.finished_len if req.finished_len is not None else len(req.output_ids)
                req.customized_info = {"kept": [end - commit.output_index]}


class TokensOfEveryCommit:
    """Reads every commit's tokens, forgetting the None ones: crashes on a chunked prefill."""

    def consume(self, batch: Any, commits: Any) -> None:
        for req, commit in zip(batch.reqs, commits):
            req.customized_info = {"n": [len(commit.token_ids)]}


class PerRequestBudget:
    """Reads the request's sampling parameters, where plugins keep per-request settings."""

    def consume(self, batch: Any, commits: Any) -> None:
        for req, commit in zip(batch.reqs, commits):
            if commit is None:
                continue
            params = req.sampling_params
            left = params.max_new_tokens - len(req.output_ids)
            settings = params.custom_params or {}
            req.customized_info = {"left": [left], "tag": [settings.get("tag")],
                                   "temperature": [params.temperature]}
