"""The passes that turn what the Scanner collected into uses; analyze runs the visit and them."""

from __future__ import annotations

import ast
import re
from collections.abc import Mapping

from auxcheck._core.constants import string_constants, string_value
from auxcheck._core.pyast import dotted_name as _dotted_name
from auxcheck.migrate.moves import MoveTable
from auxcheck.migrate.scan.analysis import Analysis, listed, moved_names
from auxcheck.migrate.scan.scanner import Scanner, Scopes
from auxcheck.migrate.scan.strings import (
    DOTTED,
    TYPE_EXPRESSION,
    StringTarget,
    alias_spans,
    string_targets,
    target_names,
    target_spans,
)

__all__ = ["analyze"]


def _shadowed_aliases(scanner: Scanner) -> None:
    """Drops module aliases, and dotted old modules whose top package, that something else
    binds too (a parameter, a loop or ``with`` target, a class attribute): their uses
    cannot be told apart by name, so each is AUX502 and left as it is. So is one a function
    imports under ``global`` or ``nonlocal``: a new name it bound there would be its own."""
    result = scanner.result
    declared = scanner.declared_bindings
    for alias in sorted(set(result.aliases) & (scanner.local_bound | scanner.shadowing)
                        - declared):
        old = result.aliases.pop(alias)
        where = "in a function" if alias in scanner.local_bound else "in this module"
        scanner.flag("AUX502", scanner.alias_imports.get(alias, ast.Pass(lineno=1, col_offset=0)),
                     f"module alias {alias} of {old} is also bound to something else {where}",
                     "rename the alias, then run `auxcheck migrate` again")
    for alias in sorted(set(result.aliases) & declared):
        old = result.aliases.pop(alias)
        scanner.flag("AUX502", scanner.alias_imports.get(alias, ast.Pass(lineno=1, col_offset=0)),
                     f"module alias {alias} of {old} is imported in a function that declares "
                     "it global or nonlocal, so a new name bound there would stay local",
                     "import the moved names by hand where they are used")
    for old in sorted(result.dotted):
        top = old.partition(".")[0]
        if old in declared:
            seen = (f"{old} is imported in a function that declares {top} global or "
                    "nonlocal, so a new name bound there would stay local")
            fix = "import the moved names by hand where they are used"
        elif top in scanner.shadowing:
            seen = f"{top}, the top package of {old}, is also bound to something else"
            fix = f"rename the other {top}, then run `auxcheck migrate` again"
        else:
            continue
        result.dotted.discard(old)
        result.module_imports.discard(old)
        scanner.shadowed_dotted.add(old)
        scanner.flag("AUX502", scanner.alias_imports.get(old, ast.Pass(lineno=1, col_offset=0)),
                     seen, fix)


def _bindings(result: Analysis, owner: str, scopes: Scopes) -> set[int]:
    """Returns the bodies whose binding of ``owner`` a use inside ``scopes`` reads: the
    innermost that binds it, as Python looks names up (a class body only for its own
    code); every body binding it when none around does (the file reads it some other way)."""
    bound = result.binding_scopes.get(owner, set())
    name = owner.partition(".")[0]
    for depth in range(len(scopes) - 1, -1, -1):
        scope = scopes[depth]
        if (scope.is_class and depth < len(scopes) - 1) or name in scope.declared:
            continue
        if scope.index in bound:
            return {scope.index}
    return {0} if 0 in bound else bound


def _moved_use(result: Analysis, owner: str, name: str, scopes: Scopes) -> None:
    """Records ``name``, a moved name, used through ``owner`` inside ``scopes``."""
    result.owner_moved.setdefault(owner, set()).add(name)
    for scope in _bindings(result, owner, scopes):
        result.binding_moved.setdefault((owner, scope), set()).add(name)


def _other_use(result: Analysis, owner: str, scopes: Scopes) -> None:
    """Records ``owner`` used inside ``scopes`` for something other than a moved name."""
    result.alias_other_uses.add(owner)
    result.binding_other.update((owner, scope) for scope in _bindings(result, owner, scopes))


def _attribute_uses(scanner: Scanner) -> None:
    result, moves = scanner.result, scanner.moves
    moved_values: set[int] = set()
    for index, node in enumerate(scanner.attributes):
        owner = _dotted_name(node.value)
        old = result.aliases.get(owner) if owner else None
        if old is None and owner in result.dotted:
            old = owner
        if old is None or owner is None:
            _indirect_use(scanner, node, owner)
            continue
        new = moved_names(moves)[old].get(node.attr)
        scopes = scanner.scopes_of(scanner.marks_attributes, index)
        if new is None:
            _other_use(result, owner, scopes)
            continue
        moved_values.add(id(node.value))
        _moved_use(result, owner, node.attr, scopes)
        scanner.flag("AUX501", node, f"{owner}.{node.attr} used from {old}",
                     f"use {new}.{node.attr}, where it moved", old=old)
    for index, name in enumerate(scanner.names):
        if name.id in result.aliases and id(name) not in moved_values:
            _other_use(result, name.id, scanner.scopes_of(scanner.marks_names, index))


def _indirect_use(scanner: Scanner, node: ast.Attribute, owner: str | None) -> None:
    """Reports ``X`` reached on an old module that no import of it names: through a
    package above it (``sampling.sampling_observer.X``) or ``sys.modules["old"].X``."""
    old, how = None, ""
    if owner is not None:
        top, dot, rest = owner.partition(".")
        full = scanner.packages.get(top, "") + dot + rest
        if full in scanner.moves.old_modules and owner not in scanner.shadowed_dotted:
            old, how = full, f"through {owner}"
    elif isinstance(node.value, ast.Subscript) and _dotted_name(node.value.value) in (
            "sys.modules", "modules"):
        key = node.value.slice
        name = key.value if isinstance(key, ast.Constant) else scanner.module_constants.get(
            key.id) if isinstance(key, ast.Name) else None
        if name in scanner.moves.old_modules:
            old, how = str(name), "through sys.modules"
    new = moved_names(scanner.moves).get(old or "", {}).get(node.attr)
    if old is not None and new is not None:
        scanner.flag("AUX502", node, f"{old}.{node.attr} reached {how}",
                     f"import {node.attr} from {new}, where it moved, by hand")


def _string_uses(scanner: Scanner) -> None:
    for node, role, scopes in scanner.strings:
        assert isinstance(node.value, str)
        typed = role == "type" and TYPE_EXPRESSION.fullmatch(node.value) is not None
        spans = _type_uses(scanner, node.value, scopes) if typed else []
        targets = string_targets([node.value], scanner.moves, scanner.segment(node))
        unspelled = [t for t in targets if t.verdict == "unspelled"]
        if unspelled:
            name = node.value[unspelled[0].start:unspelled[0].stop]
            scanner.flag("AUX502", node, f"string {node.value!r} spells {name} with "
                         "escapes, a line continuation or across implicit concatenation, "
                         "so it cannot be rewritten in place",
                         f"write {name} as plain text in one string literal, then run "
                         "`auxcheck migrate` again")
        if spans or len(unspelled) < len(targets):
            scanner.flag("AUX501", node, f"string {node.value!r} names a moved symbol's old "
                         "module", "point it at the new module")


def _type_uses(scanner: Scanner, text: str,
               scopes: Scopes) -> list[tuple[int, int, str, str, str]]:
    """Records what a type-expression string needs (``"m.X"`` through an alias, ``"old.X"``
    through a module-level ``import old`` or an import to add); returns its alias spans."""
    result, moved = scanner.result, moved_names(scanner.moves)
    spans = alias_spans(text, scanner.moves, result.aliases)
    for _, _, owner, name, _ in spans:
        _moved_use(result, owner, name, scopes)
    for match in DOTTED.finditer(text):  # "m.Staying" and "old.Staying" keep m's import
        owner, _, name = match.group().rpartition(".")
        old = result.aliases.get(owner) or (owner if owner in _imported_old(result) else None)
        if old is not None and name not in moved[old]:
            _other_use(result, owner, scopes)
    for old, name in target_names(text, scanner.moves):
        if old in _imported_old(result):
            _moved_use(result, old, name, scopes)
        elif moved[old][name] not in result.module_imports:
            result.type_imports.add(moved[old][name])
    return spans


def _imported_old(result: Analysis) -> set[str]:
    """Returns the old modules the file imports by dotted name at module level."""
    return result.dotted & result.module_imports


_FIELD_TAIL = re.compile(r"[.:]([A-Za-z_]\w*)")


def _fstring_uses(scanner: Scanner, constants: Mapping[str, str]) -> None:
    moves = scanner.moves
    moved = moved_names(moves)
    for node, outer in scanner.fstrings:
        parts = [v.value if isinstance(v, ast.Constant) and isinstance(v.value, str) else None
                 for v in node.values]
        whole = string_value(node, constants) if None in parts else None
        targets = string_targets(parts, moves, scanner.segment(outer))
        for target in targets:
            if whole is None or target.verdict in ("fix", "unspelled"):
                _fstring_use(scanner, node, (parts[target.part] or ""), target)
        if whole is not None:
            _constant_fstring_use(scanner, node, whole, targets)
            continue
        for i, value in enumerate(node.values[:-1]):
            following = parts[i + 1]
            if not (isinstance(value, ast.FormattedValue) and isinstance(value.value, ast.Name)
                    and following is not None):
                continue
            old = scanner.module_constants.get(value.value.id)
            tail = _FIELD_TAIL.match(following)
            if old is not None and tail is not None and tail.group(1) in moved.get(old, {}):
                scanner.flag("AUX502", node, f"f-string builds {old}.{tail.group(1)} from "
                             f"{value.value.id}, the old module's name",
                             f"write {moved[old][tail.group(1)]}{following[:tail.end()]} "
                             "in the string by hand")


def _constant_fstring_use(scanner: Scanner, node: ast.JoinedStr, whole: str,
                          written: list[StringTarget]) -> None:
    """Reports an f-string whose fields are the file's string constants (``f"{OLD}.X"``)
    when the string it builds names a moved symbol's old module: the text to change is
    partly in a constant, so a human writes it."""
    fixed = {t.old for t in written if t.verdict in ("fix", "unspelled")}
    for start, end, old, new in target_spans(whole, scanner.moves):
        if old in fixed:
            continue  # written out in a literal part: reported (and rewritten) as such
        dotted = re.match(r"[\w.:]*", whole[start:])
        shown = dotted.group() if dotted else old
        names = list(dict.fromkeys(v.value.id for v in node.values if isinstance(
            v, ast.FormattedValue) and isinstance(v.value, ast.Name)))
        if len(names) == 1 and scanner.module_constants.get(names[0]) == old:
            how = f"from {names[0]}, the old module's name"
        else:
            how = f"from the string constant{'s' if len(names) > 1 else ''} {listed(names)}"
        scanner.flag("AUX502", node, f"f-string builds {shown} {how}",
                     f"write {new}{whole[end:start + len(shown)]} in the string by hand")
        return


def _fstring_use(scanner: Scanner, node: ast.JoinedStr, text: str,
                 target: StringTarget) -> None:
    dotted = text[target.start:target.stop]
    if target.verdict == "dynamic":
        scanner.flag("AUX502", node, f"f-string names an attribute of {target.old} "
                     "computed at run time, which may be a moved name",
                     "write the target with the module the name lives in now")
    elif target.verdict == "unsafe":
        scanner.flag("AUX502", node, f"f-string joins {dotted} to a replacement field, "
                     "so the name it targets is only known at run time",
                     f"write the whole target with {target.new} by hand")
    elif target.verdict == "unspelled":
        scanner.flag("AUX502", node, f"f-string spells {dotted} with escapes, so it "
                     "cannot be rewritten in place",
                     f"write {dotted} as plain text, then run `auxcheck migrate` again")
    else:
        scanner.flag("AUX501", node, f"f-string naming {dotted} names a moved symbol's "
                     "old module", "point it at the new module")


def _computed_uses(scanner: Scanner) -> None:
    """Reports a moved name reached at run time through an old module: looked up on an
    alias (``getattr(m, "X")``, ``mock.patch.object(m, "X")``), or a target built from the
    old module's name (``OLD + ".X"``, ``"%s.X" % OLD``, ``"{}.X".format(OLD)``)."""
    result, moved = scanner.result, moved_names(scanner.moves)
    for call in scanner.lookups:
        owner, name = _dotted_name(call.args[0]), call.args[1]
        old = result.aliases.get(owner or "") or (owner if owner in result.dotted else None)
        if (old is not None and isinstance(name, ast.Constant) and isinstance(name.value, str)
                and name.value in moved[old]):
            scanner.flag("AUX502", call, f"{ast.unparse(call.func)}({owner}, {name.value!r}) "
                         f"looks up a moved name on {old}", f"look it up on "
                         f"{moved[old][name.value]}, where it moved (import that module by hand)")
    for join in scanner.joins:
        if isinstance(join.op, ast.Add):
            _joined_use(scanner, join)
        elif isinstance(join.op, ast.Mod) and isinstance(join.left, ast.Constant):
            right = join.right.elts if isinstance(join.right, ast.Tuple) else [join.right]
            _formatted_use(scanner, join, [join.left, *right])
    for call in scanner.formats:
        assert isinstance(call.func, ast.Attribute)
        _formatted_use(scanner, call, [call.func.value, *call.args,
                                       *(k.value for k in call.keywords)])


def _joined_use(scanner: Scanner, join: ast.BinOp) -> None:
    left, right = join.left, join.right
    old = scanner.module_constants.get(left.id) if isinstance(left, ast.Name) else None
    text = right.value if isinstance(right, ast.Constant) and isinstance(
        right.value, str) else ""
    tail = _FIELD_TAIL.match(text)
    moved = moved_names(scanner.moves)
    if old is not None and tail is not None and tail.group(1) in moved.get(old, {}):
        scanner.flag("AUX502", join, f"{ast.unparse(join)} builds {old}.{tail.group(1)} "
                     "from the old module's name",
                     f"write \"{moved[old][tail.group(1)]}{text}\" by hand")


def _formatted_use(scanner: Scanner, node: ast.expr, pieces: list[ast.expr]) -> None:
    """Reports ``%`` or ``str.format`` formatting that joins an old module's name (a
    literal or a constant holding it) with one of its moved names."""
    texts = [p.value for p in pieces if isinstance(p, ast.Constant) and isinstance(p.value, str)]
    olds = [scanner.module_constants.get(p.id) if isinstance(p, ast.Name) else p.value
            if isinstance(p, ast.Constant) and isinstance(p.value, str) else None
            for p in pieces[1:]]
    moved = moved_names(scanner.moves)
    for old in olds:
        names = [n for n in moved.get(old or "", {})
                 if any(re.search(r"(?<!\w)" + n + r"(?!\w)", t) for t in texts)]
        if old is not None and names:
            scanner.flag("AUX502", node, f"{ast.unparse(node)} builds {old}.{names[0]} "
                         "from the old module's name",
                         f"write the target with {moved[old][names[0]]} by hand")
            return


def _star_uses(scanner: Scanner) -> None:
    result = scanner.result
    for name in scanner.names:
        result.all_names.add(name.id)
    # A name read where a function binds it is that function's own, not the star's.
    result.used_names.update(name for name, frames in scanner.loads
                             if not any(frame.binds(name) for frame in frames))
    result.used_names |= scanner.exported
    for old in sorted(result.star_modules):
        for moved, new in sorted(moved_names(scanner.moves)[old].items()):
            if moved in result.used_names and (new, moved) not in result.new_bound:
                scanner.flag("AUX501", _first_star(scanner, old), f"{moved} used through "
                             f"`from {old} import *`", f"import it explicitly from {new}",
                             old=old)


def _first_star(scanner: Scanner, old: str) -> ast.AST:
    uses = [u for u in scanner.result.uses if u.code == "AUX502" and old in u.seen]
    line = uses[0].line if uses else 1
    node = ast.Pass(lineno=line, col_offset=(uses[0].col - 1) if uses else 0)
    return node


def analyze(tree: ast.Module, moves: MoveTable, *, package: str | None = None,
            source: str | None = None) -> Analysis:
    """Returns what ``tree`` does with old modules: AUX501/AUX502 uses and rewrite needs.

    ``source`` is the text ``tree`` was parsed from: given, a string target that its
    source spells with escapes (which no rewrite of the source reaches) is AUX502.
    """
    scanner = Scanner(moves, package, source)
    scanner.visit(tree)
    constants = string_constants(tree)
    # Only a name bound once holds the old module for certain (``OLD = "old"``, never rebound).
    scanner.module_constants = {name: value for name, value in constants.items()
                                if value in moves.old_modules}
    _shadowed_aliases(scanner)
    _attribute_uses(scanner)
    _string_uses(scanner)
    _fstring_uses(scanner, constants)
    _computed_uses(scanner)
    _star_uses(scanner)
    scanner.result.uses.sort(key=lambda u: (u.line, u.col, u.code))
    return scanner.result
