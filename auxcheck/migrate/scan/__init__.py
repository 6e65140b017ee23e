"""The AUX501/AUX502 scanner: finds every remaining use of a moved name's old module.

It reads bytes first and parses only files that contain an old module's name (the
cheap prefilter), and it parses with :mod:`ast`, so ``auxcheck migrate --check`` and
``pytest --auxcheck`` never import libcst. :func:`analyze` also records what the
rewrite needs (module aliases, star imports, names already imported from the new
modules), so the libcst transform makes a single pass.
"""

from auxcheck.migrate.scan.analysis import (
    Analysis,
    Use,
    is_defining_module,
    is_new_then_old_fallback,
    moved_names,
    package_of,
    resolve_relative,
)
from auxcheck.migrate.scan.findings import scan_paths, scan_source
from auxcheck.migrate.scan.passes import analyze
from auxcheck.migrate.scan.strings import (
    TYPE_FORMS,
    StringRole,
    StringTarget,
    alias_spans,
    argument_role,
    assigned_role,
    rewrite_string,
    string_targets,
    subscript_roles,
    target_spans,
)

__all__ = [
    "TYPE_FORMS",
    "Analysis",
    "StringRole",
    "StringTarget",
    "Use",
    "alias_spans",
    "analyze",
    "argument_role",
    "assigned_role",
    "is_defining_module",
    "is_new_then_old_fallback",
    "moved_names",
    "package_of",
    "resolve_relative",
    "rewrite_string",
    "scan_paths",
    "scan_source",
    "string_targets",
    "subscript_roles",
    "target_spans",
]
