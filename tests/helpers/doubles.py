"""Plugin doubles the tests share: objects that do nothing of note, and ones that raise."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

__all__ = ["ClassRaises", "ConstantForwardObserver", "NoOpHost", "NoOpSamplingObserver",
           "NoneObserver", "raises"]


def raises(exc: BaseException) -> Callable[..., Any]:
    """Returns a function that raises ``exc`` whatever it is called with."""
    def hostile(*args: Any, **kwargs: Any) -> Any:
        raise exc
    return hostile


class NoOpHost:
    """A host output whose ``consume`` does nothing; ``rows`` is what it was built over."""

    def __init__(self, rows: Any = None) -> None:
        self.rows = rows

    def consume(self, batch: Any, commits: Any) -> None:
        return None


class NoOpSamplingObserver:
    """A sampling observer that is always active, leaves the logits alone and publishes nothing."""

    def is_active(self, sampling_info: Any) -> bool:
        return True

    def before_grammar(self, logits: Any, sampling_info: Any) -> Any:
        return None

    def after_sample(self, state: Any, token_ids: Any) -> Any:
        return None


class ConstantForwardObserver:
    """A forward observer whose ``after_forward`` returns ``returns`` (None: nothing published)."""

    def __init__(self, returns: Any = None) -> None:
        self.returns = returns

    def after_forward(self, batch: Any, forward_batch: Any, logits_output: Any, *,
                      can_run_graph: bool) -> Any:
        return self.returns


class NoneObserver:
    """A PP observer whose ``from_pp_tensors`` rebuilds nothing: it returns None."""

    def from_pp_tensors(self, tensors: Any) -> Any:
        return None


class ClassRaises:
    """An object whose ``__class__`` raises SystemExit when read (``type()`` still answers)."""

    @property  # type: ignore[misc]
    def __class__(self) -> type:  # type: ignore[override]
        raise SystemExit("__class__")
