"""The tree pass beyond top-level imports: nested blocks, ``try``, attributes, strings' roles.

:class:`TreeRewriter` keeps its own place in the tree (the scopes, indents and string roles
around) and passes it to the collaborators it calls: the statement rewriter for each block it
leaves, the compat writer for the handlers of each ``try``, the string rewriter for each
string, the module-top editor at the end."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import TypeVar

import libcst as cst
from libcst.helpers import get_full_name_for_node

from auxcheck.migrate.scan import (
    StringRole,
    argument_role,
    assigned_role,
    is_new_then_old_fallback,
    subscript_roles,
)
from auxcheck.migrate.transform.compat import CompatWriter
from auxcheck.migrate.transform.module_top import ModuleTopEditor
from auxcheck.migrate.transform.nodes import (
    alias_items,
    catches_import_error,
    is_type_checking,
    last_name,
)
from auxcheck.migrate.transform.plan import ImportPlan
from auxcheck.migrate.transform.state import RewriteInputs
from auxcheck.migrate.transform.statements import StatementRewriter
from auxcheck.migrate.transform.strings import StringRewriter, concatenated

__all__ = ["TreeRewriter"]


_NodeT = TypeVar("_NodeT", bound=cst.CSTNode)
_TryT = TypeVar("_TryT", cst.Try, cst.TryStar)


class TreeRewriter(cst.CSTTransformer):
    """The single tree pass used when work lies beyond top-level import statements: blocks
    rewritten as they are left, ``try`` statements, attributes of old modules, and each
    string rewritten in the role it is read in."""

    def __init__(self, inputs: RewriteInputs, plan: ImportPlan, *,
                 statements: StatementRewriter, blocks: CompatWriter,
                 strings: StringRewriter, top: ModuleTopEditor) -> None:
        super().__init__()
        self.inputs = inputs
        self.plan = plan
        self.statements = statements
        self.blocks = blocks
        self.strings = strings
        self.top = top
        self.analysis = inputs.analysis
        self.indents: list[str] = []
        self.type_checking: list[bool] = []
        """Per indented block: whether it runs only for type checkers (``if TYPE_CHECKING:``)."""
        self.checking = False
        """Set by ``if TYPE_CHECKING:`` for the block (or one-line suite) that follows."""
        self.roles: list[StringRole] = ["runtime"]
        self.marks: dict[int, StringRole] = {}
        """ids of nodes whose strings are read in another role (as the scan marks them)."""
        self.quiet: set[int] = set()
        """ids of the handlers of the user's own new-then-old fallbacks: left as written."""
        self.pieces: set[int] = set()
        """ids of the strings of a concatenation: rewritten with it, as one string."""
        self.scopes = [0]
        """The numbers of the def and class bodies around (the module's is 0)."""
        self.defined = 0
        """How many defs and classes the walk has come to, counted as the scan counts them."""

    def on_visit(self, node: cst.CSTNode) -> bool:
        role = self.marks.get(id(node))
        if role is not None:
            self.roles.append(role)
        return super().on_visit(node)

    def on_leave(self, original_node: _NodeT, updated_node: _NodeT
                 ) -> _NodeT | cst.RemovalSentinel | cst.FlattenSentinel[_NodeT]:
        result = super().on_leave(original_node, updated_node)
        if self.marks.pop(id(original_node), None) is not None:
            self.roles.pop()
        return result

    def _mark(self, node: cst.CSTNode | None, role: StringRole | None) -> None:
        if node is not None and role is not None and role != self.roles[-1]:
            self.marks[id(node)] = role

    def visit_Import(self, node: cst.Import) -> bool:
        return False

    def visit_ImportFrom(self, node: cst.ImportFrom) -> bool:
        return False

    # -- try statements -----------------------------------------------------------------------

    def visit_Try(self, node: cst.Try | cst.TryStar) -> bool:
        catches = any(catches_import_error(h) for h in node.handlers)
        if is_new_then_old_fallback(catches, self._imported(node.body), self.inputs.moves):
            self.quiet.update(id(handler) for handler in node.handlers)
        return True

    visit_TryStar = visit_Try

    def _imported(self, suite: cst.BaseSuite) -> Iterable[str]:
        """Yields what the statements of ``suite`` import (as the scan reads a ``try``)."""
        for stmt in suite.body if isinstance(suite, cst.IndentedBlock) else [suite]:
            smalls = stmt.body if isinstance(stmt, (cst.SimpleStatementLine,
                                                    cst.SimpleStatementSuite)) else ()
            for small in smalls:
                if isinstance(small, cst.Import):
                    yield from (name for name, _ in alias_items(small.names))
                elif isinstance(small, cst.ImportFrom) and (module := self.plan.resolve(
                        small)) is not None:
                    yield module
                    if isinstance(small.names, Sequence):
                        yield from (f"{module}.{name}" for name, _ in alias_items(small.names))

    def visit_ExceptHandler(self, node: cst.ExceptHandler | cst.ExceptStarHandler) -> bool:
        return id(node) not in self.quiet

    visit_ExceptStarHandler = visit_ExceptHandler

    def leave_Try(self, original_node: cst.Try, updated_node: cst.Try) -> cst.Try:
        """Returns the ``try`` with each name the rewrite bound in its body bound in its
        import-error handlers too, to what the handler binds the user's alias to
        (``except ImportError: import fallback as so`` then ``auxiliary_output = so``)."""
        return self._rebound(original_node, updated_node)

    def leave_TryStar(self, original_node: cst.TryStar,
                      updated_node: cst.TryStar) -> cst.TryStar:
        """Returns the ``try``/``except*`` with the new names bound in its handlers too."""
        return self._rebound(original_node, updated_node)

    def _rebound(self, original_node: _TryT, updated_node: _TryT) -> _TryT:
        renamed = self.blocks.renamed_in(original_node.body, self.scopes[-1])
        if not renamed:
            return updated_node
        guard = self.statements.last_guard
        handlers = [self.blocks.rebound(handler, renamed, guard)
                    for handler in updated_node.handlers]
        return updated_node.with_changes(handlers=handlers)

    # -- scopes -------------------------------------------------------------------------------

    def visit_FunctionDef(self, node: cst.FunctionDef | cst.ClassDef) -> None:
        # The imports of its body bind names there (:attr:`Analysis.binding_scopes`).
        self.defined += 1
        self.scopes.append(self.defined)

    visit_ClassDef = visit_FunctionDef

    def leave_FunctionDef(self, original_node: cst.FunctionDef,
                          updated_node: cst.FunctionDef) -> cst.FunctionDef:
        self._leave_scope()
        return updated_node

    def leave_ClassDef(self, original_node: cst.ClassDef,
                       updated_node: cst.ClassDef) -> cst.ClassDef:
        self._leave_scope()
        return updated_node

    def _leave_scope(self) -> None:
        self.scopes.pop()

    # -- blocks -------------------------------------------------------------------------------

    def visit_If(self, node: cst.If) -> None:
        self.checking = is_type_checking(node.test)

    def visit_IndentedBlock(self, node: cst.IndentedBlock) -> None:
        outer = self.indents[-1] if self.indents else ""
        self.indents.append(outer + (node.indent or "    "))
        inherited = bool(self.type_checking) and self.type_checking[-1]
        self.type_checking.append(inherited or self.checking)
        self.checking = False

    def _compat(self) -> bool:
        return self.inputs.compat and not (self.type_checking and self.type_checking[-1])

    def leave_SimpleStatementSuite(self, original_node: cst.SimpleStatementSuite,
                                   updated_node: cst.SimpleStatementSuite) -> cst.BaseSuite:
        checking, self.checking = self.checking, False
        block = self.statements.expand_suite(updated_node, self.scopes[-1])
        if not isinstance(block, cst.IndentedBlock):
            return block
        outer = self.indents[-1] if self.indents else ""
        compat = self._compat() and not checking
        return block.with_changes(body=self.statements.rewrite_body(
            block.body, outer + "    ", scope=self.scopes[-1], compat=compat))

    def leave_IndentedBlock(self, original_node: cst.IndentedBlock,
                            updated_node: cst.IndentedBlock) -> cst.IndentedBlock:
        compat = self._compat()
        indent = self.indents.pop()
        self.type_checking.pop()
        return updated_node.with_changes(body=self.statements.rewrite_body(
            updated_node.body, indent, scope=self.scopes[-1], compat=compat))

    def leave_Module(self, original_node: cst.Module, updated_node: cst.Module) -> cst.Module:
        body = self.statements.rewrite_body(updated_node.body, "", scope=self.scopes[-1])
        return updated_node.with_changes(body=self.top.finish(body))

    # -- attributes ---------------------------------------------------------------------------

    def leave_Attribute(self, original_node: cst.Attribute,
                        updated_node: cst.Attribute) -> cst.BaseExpression:
        owner = get_full_name_for_node(updated_node.value)
        if owner is None:
            return updated_node
        old = self.analysis.aliases.get(owner)
        if old is None and owner in self.analysis.dotted:
            old = owner
        new = self.inputs.moved.get(old or "", {}).get(updated_node.attr.value)
        text = self.plan.given.get(owner, {}).get(new or "")
        if text is None or text == owner:
            return updated_node
        value = updated_node.value  # its parentheses, and a comment inside them, stay
        return updated_node.with_changes(value=cst.parse_expression(text).with_changes(
            lpar=value.lpar, rpar=value.rpar))

    # -- the role of each string (the scan marks the same ones) -------------------------------

    def visit_Annotation(self, node: cst.Annotation) -> None:
        self.roles.append("type")

    def leave_Annotation(self, original_node: cst.Annotation,
                         updated_node: cst.Annotation) -> cst.Annotation:
        self.roles.pop()
        return updated_node

    def visit_AnnAssign(self, node: cst.AnnAssign) -> None:
        self._mark(node.value, assigned_role(last_name(node.annotation.annotation)))

    def visit_Subscript(self, node: cst.Subscript) -> None:
        roles = subscript_roles(last_name(node.value), len(node.slice), self.roles[-1])
        for element, role in zip(node.slice, roles):
            if isinstance(element.slice, cst.Index):
                self._mark(element.slice.value, role)

    def visit_Call(self, node: cst.Call) -> None:
        function, position = last_name(node.func), 0
        for arg in node.args:
            if arg.keyword is not None:
                self._mark(arg.value, argument_role(function, arg.keyword.value))
            elif not arg.star:
                self._mark(arg.value, argument_role(function, position))
                position += 1

    def visit_Expr(self, node: cst.Expr) -> None:
        if isinstance(node.value, (cst.SimpleString, cst.ConcatenatedString)):
            self._mark(node.value, "value")  # a docstring: plain text, never an f-string

    def visit_MatchValue(self, node: cst.MatchValue) -> None:
        self._mark(node.value, "value")  # a pattern may only hold a literal

    def visit_MatchMappingElement(self, node: cst.MatchMappingElement) -> None:
        self._mark(node.key, "value")

    # -- strings (:class:`~.strings.StringRewriter` rewrites them) -----------------------------

    def visit_ConcatenatedString(self, node: cst.ConcatenatedString) -> None:
        if id(node) not in self.pieces:  # the whole string: its pieces go with it
            self.pieces.update(id(piece) for piece in concatenated(node))

    def leave_ConcatenatedString(self, original_node: cst.ConcatenatedString,
                                 updated_node: cst.ConcatenatedString) -> cst.BaseExpression:
        return self._string(original_node, updated_node)

    def leave_SimpleString(self, original_node: cst.SimpleString,
                           updated_node: cst.SimpleString) -> cst.BaseExpression:
        return self._string(original_node, updated_node)

    def leave_FormattedString(self, original_node: cst.FormattedString,
                              updated_node: cst.FormattedString) -> cst.BaseExpression:
        return self._string(original_node, updated_node)

    def leave_FormattedStringExpression(
            self, original_node: cst.FormattedStringExpression,
            updated_node: cst.FormattedStringExpression) -> cst.FormattedStringExpression:
        return self.strings.format_spec(updated_node, field=self._field())

    def _string(self, original_node: cst.SimpleString | cst.FormattedString
                | cst.ConcatenatedString, updated_node: cst.SimpleString
                | cst.FormattedString | cst.ConcatenatedString) -> cst.BaseExpression:
        if id(original_node) in self.pieces:  # rewritten with its concatenation
            return updated_node
        return self.strings.string(updated_node, self.roles[-1], field=self._field())

    def _field(self) -> bool:
        """Returns whether a target in a string here names the module found at import time
        (a runtime string in --compat code)."""
        return self._compat() and self.roles[-1] == "runtime"
