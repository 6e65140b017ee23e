"""The bounded tail of what a child process writes: the one keeper of captured output.

Every place that captures a child's stdout and stderr (``auxcheck validate``'s units, ``auxcheck
check``'s mypy and pytest, the ``--impl`` probe) keeps only the last bytes in a :class:`Tail`,
so a child that prints without end costs a fixed amount of memory and the text handed on
(a table, a JSON document) says how much came before what it shows.
"""

from __future__ import annotations

__all__ = ["Tail"]


class Tail:
    """The last ``kept`` bytes a process wrote, and how many came before them."""

    def __init__(self, kept: int) -> None:
        self.kept = kept
        self.dropped = 0
        self._data = bytearray()

    def add(self, data: bytes) -> None:
        """Keeps ``data`` after what came before; the oldest bytes over ``kept`` are dropped
        (in batches, so a long stream of small writes costs time in proportion to its size)."""
        self._data += data
        if len(self._data) > 2 * self.kept:
            cut = len(self._data) - self.kept
            del self._data[:cut]
            self.dropped += cut

    def take(self) -> str:
        """Returns :meth:`text` and starts afresh."""
        text = self.text()
        self._data, self.dropped = bytearray(), 0
        return text

    def text(self) -> str:
        """Returns the bytes kept as text, headed by a line saying what was cut when any was."""
        extra = max(0, len(self._data) - self.kept)
        dropped, kept = self.dropped + extra, self._data[extra:]
        text = kept.decode(errors="replace")
        if dropped:
            text = (f"[auxcheck: output cut: {dropped + len(kept):,} bytes written, only the "
                    f"last {len(kept):,} kept]\n{text}")
        return text
