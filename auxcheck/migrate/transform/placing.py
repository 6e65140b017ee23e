"""Where each import to add goes: merged, sorted into its block, or kept where it was."""

from __future__ import annotations

from collections.abc import Iterable, Sequence

import libcst as cst

from auxcheck.migrate.transform.compat import CompatWriter
from auxcheck.migrate.transform.layout import joined_comments, suppressed
from auxcheck.migrate.transform.nodes import (
    Addition,
    Names,
    alias_items,
    has_comment,
    module_text,
    single_import,
)
from auxcheck.migrate.transform.state import ListContext, RewriteInputs
from auxcheck.migrate.transform.writing import StatementWriter

__all__ = ["ImportPlacer", "merge_addition", "restore_prefix"]


class ImportPlacer:
    """Places the imports a statement list gains where the project's sorter would (the
    statements from the writer, --compat's blocks from the compat writer)."""

    def __init__(self, inputs: RewriteInputs, writer: StatementWriter,
                 blocks: CompatWriter) -> None:
        self.inputs = inputs
        self.writer = writer
        self.blocks = blocks

    def _reachable(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                   add: Addition) -> Iterable[tuple[int, int, cst.Import | cst.ImportFrom]]:
        # Imports after the anchor's own block of imports run too late for code between.
        for s, slot in enumerate(slots[:max(add.anchor, block[1]) + 1]):
            for p, stmt in enumerate(slot):
                node = single_import(stmt)
                if node is not None:
                    yield s, p, node

    def _present(self, node: cst.Import | cst.ImportFrom, add: Addition) -> Names:
        """Returns the names of ``add`` that ``node`` already imports."""
        if not isinstance(node.names, Sequence):
            return []
        items = alias_items(node.names)
        if add.kind == "import":
            return [n for n in add.names if isinstance(node, cst.Import) and n in items]
        if isinstance(node, cst.ImportFrom) and (len(node.relative), module_text(node)) == (
                add.level, add.module):
            return [n for n in add.names if n in items]
        return []

    def place(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
              add: Addition, context: ListContext, compat: bool) -> None:
        """Puts ``add`` into ``slots`` for the import block ``block`` (as a --compat block
        when ``compat``), or drops the names something there already imports."""
        indent, frozen = context.indent, context.frozen
        reachable = list(self._reachable(slots, block, add))
        present = {n for _, _, node in reachable for n in self._present(node, add)}
        if present:
            add.names = [n for n in add.names if n not in present]
            add.original = None
        if not add.names:
            return
        if compat:
            self.blocks.place(slots, block, add, context)
            return
        if add.anchor in frozen:  # where the user's statement was, unsorted
            slots[add.anchor].extend(self.writer.frozen_statements(add, indent))
            return
        commented = add.comment or add.member_comments or any(
            line.comment for line in add.comments) or (
                add.original is not None and has_comment(add.original))
        if add.kind == "from" and not commented and self.writer.regroup(
                slots, max(add.anchor, block[1]), add.level, add.module, add.names, indent,
                frozen):
            return
        # A noqa the names carry would not survive a merge (it stays a statement's own).
        target = None if suppressed(add.comment) else next(
            ((s, p, node) for s, p, node in reachable
             if s not in frozen and self.writer.merge_target(node, add)), None)
        if target is not None:
            joining = [n for n in add.names if self.inputs.style.combine_as or n[1] is None]
            if joining:
                s, p, node = target
                assert isinstance(node, cst.ImportFrom)
                slots[s][p] = self.writer.merged(slots[s][p], node, joining, indent)
                add.names = [n for n in add.names if n not in joining]
                add.original = None
        if add.names:
            self._insert_sorted(slots, block, add, indent)

    def _insert_sorted(self, slots: list[list[cst.BaseStatement]], block: tuple[int, int],
                       add: Addition, indent: str) -> None:
        for new in self.writer.new_statements(add, indent):
            key = self.writer.statement_key(new)
            assert key is not None
            last: tuple[int, int] | None = None
            placed = False
            for s in range(block[0], block[1] + 1):
                for p, stmt in enumerate(slots[s]):
                    other = self.writer.statement_key(stmt)
                    if other is not None and other > key:
                        slots[s].insert(p, new)
                        placed = True
                        break
                    last = (s, p)
                if placed:
                    break
            if placed:
                continue
            if last is None:
                slots[add.anchor].append(new)
            else:
                slots[last[0]].insert(last[1] + 1, new)


def merge_addition(additions: dict[tuple[int, tuple[str, int, str, str | None]], Addition],
                   add: Addition, group: int = -1) -> None:
    """Adds ``add`` to ``additions``, merged into the addition of the same key and group."""
    known = additions.get((group, add.key))
    if known is None:
        additions[(group, add.key)] = add
        return
    known.original = None
    known.names += [n for n in add.names if n not in known.names]
    known.fallbacks.update(add.fallbacks)
    known.comments += add.comments
    known.comment = joined_comments(known.comment, add.comment)
    known.member_comments.update(add.member_comments)


def restore_prefix(slots: list[list[cst.BaseStatement]], start: int, end: int,
                   prefix: Sequence[cst.EmptyLine]) -> None:
    """Gives the first statement left in ``slots[start:end + 1]`` the block's blank lines."""
    for s in range(start, end + 1):
        if slots[s]:
            first = slots[s][0]
            assert isinstance(first, (cst.SimpleStatementLine, cst.If))
            own = [line for line in first.leading_lines if line.comment is not None]
            slots[s][0] = first.with_changes(leading_lines=[*prefix, *own])
            return
