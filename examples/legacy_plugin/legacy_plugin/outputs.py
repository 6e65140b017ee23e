"""Device and host outputs, importing the contract the pre-0.5.20 ways."""

from __future__ import annotations

from typing import Any, Optional, Sequence

import sglang.srt.sampling.sampling_observer as observer_api
from sglang.srt.sampling import sampling_observer
from sglang.srt.sampling.sampling_observer import (
    CommittedTokens as Committed,
    HostAuxiliaryOutput,
)


class TokenCountHost(HostAuxiliaryOutput):
    """Counts the tokens committed to each request."""

    def __init__(self, counts: Any) -> None:
        self.counts = counts

    def consume(self, batch: Any, commits: Sequence[Optional[Committed]]) -> None:
        for req, commit in zip(batch.reqs, commits):
            if commit is not None:
                req.customized_info = {"count": [len(commit.token_ids)]}


class TokenCountDevice(observer_api.DeviceAuxiliaryOutput):
    """Holds one count per request until the scheduler copies it."""

    def __init__(self, counts: Any) -> None:
        self.counts = counts

    def copy_to_host(self, copy_tensor: Any) -> TokenCountHost:
        return TokenCountHost(copy_tensor(self.counts))


def empty_commit(index: int) -> sampling_observer.CommittedTokens:
    """Returns a commit of no token at ``index`` (the attribute form of the old import)."""
    return sampling_observer.CommittedTokens(index, ())
