"""What ``consume`` may not change (AUX203): the one witness the step loop and the live guard use.

SGLang passes the *same* ``batch`` and ``commits`` objects to every host output of a
composite, in order, and streams ``batch.reqs`` afterwards, so a ``consume`` that changes
them corrupts its siblings and the responses. :class:`ConsumeWitness` is taken just
before ``consume`` runs and compared just after it:

- ``commits``: its length, each entry's identity, and each ``CommittedTokens``'s fields;
- ``batch.reqs``: the list's identity, length and each request's identity;
- each request's committed output: its ``output_ids`` (``full``) or their length and
  last token (the live guard's cheap fingerprint, blind to a change further back),
  ``finished_len``, ``finished_reason`` and ``is_retracted``.

The step loop puts everything back afterwards (:meth:`ConsumeWitness.restore`) so the
next sibling sees what SGLang would pass; the live guard only reports, so a server runs
the same with and without it.
"""

from __future__ import annotations

from array import array
from dataclasses import dataclass
from typing import Any

from auxcheck._core.plugin_calls import attempt
from auxcheck._core.report import Finding, describe

__all__ = ["ConsumeWitness"]


@dataclass(slots=True, eq=False)
class ConsumeWitness:
    """What ``consume(batch, commits)`` was given, kept to tell what it changed."""

    batch: Any
    commits: Any
    entries: tuple[Any, ...]
    values: list[tuple[Any, Any] | None]
    reqs: Any
    before: tuple[Any, ...]
    states: list[tuple[Any, ...]]
    full: bool

    @classmethod
    def take(cls, batch: Any, commits: Any, *, full: bool = True) -> ConsumeWitness:
        """Returns the witness of ``batch`` and ``commits`` as they are now.

        ``full`` keeps each request's whole ``output_ids`` (and lets :meth:`restore` put
        them back); otherwise only their length and last token are kept, a cost
        independent of how long the requests' outputs are.
        """
        reqs = batch.reqs
        entries = tuple(commits)
        values = [None if c is None else (c.output_index, c.token_ids) for c in entries]
        states = [_req_state(req, full=full) for req in reqs]
        return cls(batch, commits, entries, values, reqs, tuple(reqs), states, full)

    def findings(self, host: Any, at: str = "") -> list[Finding]:
        """Returns one AUX203 finding per kind of change ``consume`` of ``host`` made."""
        found: list[Finding] = []
        where = f" {at}" if at else ""
        changed = _commits_changed(self.commits, self.entries, self.values)
        if changed:
            found.append(Finding.of("AUX203", f"consume mutated commits{where}: {changed}",
                                    "expected commits left as passed", host))
        reqs = self.reqs
        if self.batch.reqs is not reqs or len(reqs) != len(self.before) or any(
                a is not b for a, b in zip(reqs, self.before)):
            how = "rebound" if self.batch.reqs is not reqs else "reordered or resized in place"
            found.append(Finding.of("AUX203", f"consume {how} batch.reqs{where}",
                                    "expected batch.reqs left as passed", host))
        changed_reqs = _changed_reqs(self.before, self.states, full=self.full)
        if changed_reqs:
            rid = describe(attempt(getattr, changed_reqs[0], "rid", changed_reqs[0]).value)
            found.append(Finding.of("AUX203", f"consume changed the committed output of "
                                    f"{len(changed_reqs)} request(s), request {rid} first"
                                    f"{',' if at else ''}{where}",
                                    "expected requests' output_ids left as committed", host))
        return found

    def finished_without_length(self) -> list[Any]:
        """Returns the requests committed a token while finished with no ``finished_len``.

        That is what SGLang hands ``consume`` for a request aborted while it ran (or
        finished by its grammar): the pass's token committed, ``finished_len`` still None.
        """
        return [req for req, state, commit in zip(self.before, self.states, self.entries)
                if commit is not None and state[1] is None and state[2] is not None]

    def restore(self) -> None:
        """Puts ``batch.reqs``, the requests' committed outputs and ``commits`` back.

        Only a ``full`` witness knows the outputs to put back; a cheap one restores the
        lists alone.
        """
        self.batch.reqs = self.reqs
        self.reqs[:] = self.before
        if self.full:
            changed = {id(req) for req in _changed_reqs(self.before, self.states, full=True)}
            for req, state in zip(self.before, self.states):
                if id(req) in changed:
                    _restore(req, state)
        self.commits[:] = list(self.entries)


def _req_state(req: Any, *, full: bool) -> tuple[Any, ...]:
    ids = req.output_ids
    outputs = list(ids) if full else (len(ids), ids[-1] if len(ids) else None)
    return (outputs, req.finished_len, getattr(req, "finished_reason", None),
            getattr(req, "is_retracted", False))


def _changed_reqs(reqs: tuple[Any, ...], states: list[tuple[Any, ...]], *,
                  full: bool) -> list[Any]:
    """Returns the requests that no longer show their state, in order.

    Plain requests are compared directly (the live guard runs this every step); one
    whose fields raise sends the whole batch through the guarded comparison.
    """
    try:
        return [req for req, state in zip(reqs, states)
                if not _same_state(_req_state(req, full=full), state)]
    except Exception:  # noqa: BLE001 - a field consume made unreadable: judged one by one
        return [req for req, state in zip(reqs, states) if _req_changed(req, state, full=full)]


def _same_state(now: tuple[Any, ...], state: tuple[Any, ...]) -> bool:
    return len(now) == len(state) and all(type(a) is type(b) and a == b
                                          for a, b in zip(now, state))


def _req_changed(req: Any, state: tuple[Any, ...], *, full: bool) -> bool:
    """Returns True when ``req`` no longer shows ``state``; fields consume made unreadable count."""
    now = attempt(_req_state, req, full=full)
    if now.error is not None:
        return True
    same = attempt(_same_state, now.value, state)
    return same.error is not None or same.value is not True


def _restore(req: Any, state: tuple[Any, ...]) -> None:
    req.output_ids = array("q", state[0])
    req.finished_len, req.finished_reason, req.is_retracted = state[1:]


def _commits_changed(commits: Any, entries: tuple[Any, ...],
                     values: list[tuple[Any, Any] | None]) -> str | None:
    """Returns how ``commits`` changed since it was passed, or None when unchanged."""
    if len(commits) != len(entries):
        return f"length {len(entries)} became {len(commits)}"
    for i, (now, was) in enumerate(zip(commits, entries)):
        if now is not was:
            return f"entry {i} was replaced"
        value = values[i]
        if value is not None and not _same_fields(was, value):
            return f"entry {i} was modified in place"
    return None


def _same_fields(commit: Any, value: tuple[Any, Any]) -> bool:
    """Returns True when ``commit`` still holds ``value`` (a field set to junk counts as changed)."""
    try:  # SGLang's own CommittedTokens: plain fields, compared directly
        return _same_state((commit.output_index, commit.token_ids), value)
    except Exception:  # noqa: BLE001 - a field consume set to junk: judged under the guard
        same = attempt(lambda: _same_state((commit.output_index, commit.token_ids), value))
        return same.value is True
