"""Tests for the import style: ruff and isort themselves are the oracles.

Seeded random import blocks are written with :mod:`auxcheck.migrate.style` under
real configuration files; ``ruff check --select I`` must find nothing and
``isort`` must leave them unchanged.  Conversely the tools' own fix of the same
statements, shuffled, must equal what the module writes, and the module's keys
must order the fixed output.
"""

from __future__ import annotations

import ast
import json
import random
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path

import isort
import pytest
from helpers.paths import RUFF

from auxcheck._core.errors import StyleConfigError
from auxcheck.errors import AuxcheckError
from auxcheck.migrate import style as _style
from auxcheck.migrate.style import (
    FIRST_PARTY,
    FUTURE,
    LOCAL_FOLDER,
    STDLIB,
    THIRD_PARTY,
    ImportStatement,
    ImportStyle,
    find_style,
    member_key,
    render_from,
    render_import,
    section_of,
    sort_block,
    statement_key,
)
from auxcheck.migrate.style.model import WRAP_MODES
from auxcheck.migrate.style.ordering import NatOrd

BLOCKS = 40  # generated blocks per configuration

# ---------------------------------------------------------------- generated blocks

STDLIB_MODULES = ["os", "os.path", "sys", "re", "json", "typing", "collections",
                  "collections.abc", "itertools", "functools", "pathlib", "dataclasses", "abc",
                  "importlib.metadata", "xml.etree.ElementTree", "concurrent.futures",
                  "urllib.parse", "string", "__future__"]
OTHER_MODULES = ["numpy", "torch", "Foo", "foo", "bar", "Bar", "a", "a1", "a.b", "a10", "a9",
                 "zeta", "Zeta", "requests.adapters", "myplugin", "myplugin.core",
                 "myplugin.sub.mod", "sglang.srt.managers.auxiliary_output",
                 "a_rather_long_third_party_package.with_a_fairly_long_submodule_name"]
RELATIVE = ["", "sib", "pkg.mod", "Up", "x1"]
MEMBERS = ["B", "c", "D_E", "x10", "x9", "x1", "f", "CONST", "Class", "var", "Foo", "foo",
           "FOO", "_private", "X", "a_very_long_member_name_number_one",
           "another_quite_long_member_name_two", "HostAuxiliaryOutput", "CommittedTokens"]
ALIASES = ["g", "alias1", "Al", "z", "a_long_alias_for_the_member"]
COMMENTS = ["# noqa: F401", "# keep", "# type: ignore"]


def generated_statements(rng: random.Random) -> list[ImportStatement]:
    """Returns one random import block: 1 to 8 statements of every kind."""
    return [generated_statement(rng) for _ in range(rng.randint(1, 8))]


def generated_statement(rng: random.Random) -> ImportStatement:
    """Returns one random ``import`` or ``from`` statement."""
    comment = rng.choice(COMMENTS) if rng.random() < 0.15 else None
    if rng.random() < 0.3:
        count = 1 if rng.random() < 0.8 else 2
        modules = rng.sample([m for m in STDLIB_MODULES + OTHER_MODULES if m != "__future__"],
                             count)
        # isort gives every later module of `import a, b as c` a plain import too once
        # `a` was imported before (parse.py's sticky straight_import): not mirrored.
        alias = rng.choice(ALIASES) if count == 1 and rng.random() < 0.25 else None
        return ImportStatement("import", tuple((m, alias) for m in modules), comment=comment)
    level = rng.choice([0, 0, 0, 1, 2, 3])
    module = rng.choice(RELATIVE) if level else rng.choice(STDLIB_MODULES + OTHER_MODULES)
    if module == "__future__":
        return ImportStatement("from", (("annotations", None),), module, comment=comment)
    if rng.random() < 0.03:
        return ImportStatement("from", (("*", None),), module, level, comment)
    members = rng.sample(MEMBERS, rng.randint(1, 6))
    names = tuple((m, rng.choice(ALIASES) if rng.random() < 0.25 else None) for m in members)
    return ImportStatement("from", names, module, level, comment, rng.random() < 0.15)


def one_line(statement: ImportStatement) -> str:
    """Returns the statement as a user might write it, unsorted, on one line."""
    names = ", ".join(f"{name}{f' as {a}' if a else ''}" for name, a in statement.names)
    tail = f"  {statement.comment}" if statement.comment else ""
    if statement.kind == "import":
        return f"import {names}{tail}"
    members = f"({names},)" if statement.magic_comma else names
    return f"from {'.' * statement.level}{statement.module} import {members}{tail}"


@dataclass(frozen=True)
class Block:
    """A generated block: its statements and the indentation it sits at."""

    statements: list[ImportStatement]
    indent: str

    def wrap(self, body: str) -> str:
        """Returns ``body`` as a whole file (under ``if True:`` when indented)."""
        return f"if True:\n{body}" if self.indent else body

    def unsorted(self) -> str:
        """Returns the statements one per line, in generation order, as a whole file."""
        return self.wrap("".join(f"{self.indent}{one_line(s)}\n" for s in self.statements))


def generated_blocks(seed: int, count: int = BLOCKS) -> list[Block]:
    """Returns ``count`` seeded random blocks, a fifth of them indented."""
    rng = random.Random(seed)
    return [Block(generated_statements(rng), "    " if rng.random() < 0.2 else "")
            for _ in range(count)]


# ---------------------------------------------------------------- configurations

RUFF_CONFIGS = {
    "ruff defaults": {"ruff.toml": ""},
    "ruff line-length 100, combine-as, known-first-party": {"pyproject.toml": (
        "[tool.ruff]\nline-length = 100\n[tool.ruff.lint.isort]\ncombine-as-imports = true\n"
        'known-first-party = ["myplugin"]\n')},
    "ruff force-single-line, short lines": {".ruff.toml": (
        "line-length = 60\n[lint.isort]\nforce-single-line = true\n")},
    "ruff order-by-type false, case-sensitive": {"ruff.toml": (
        "line-length = 70\n[lint.isort]\norder-by-type = false\ncase-sensitive = true\n")},
    "ruff force-sort-within-sections, no magic comma (legacy table)": {"pyproject.toml": (
        "[tool.ruff]\nline-length = 72\n[tool.ruff.isort]\nforce-sort-within-sections = true\n"
        "split-on-trailing-comma = false\nrelative-imports-order = 'closest-to-furthest'\n")},
    "ruff from-first, lines-between-types, force-wrap-aliases": {"ruff.toml": (
        "[lint.isort]\nfrom-first = true\nlines-between-types = 1\nforce-wrap-aliases = true\n"
        "known-local-folder = ['zeta']\nforce-to-top = ['torch']\n")},
}

ISORT_CONFIGS = {
    "isort defaults (79, GRID)": {".isort.cfg": "[settings]\nline_length = 79\n"},
    "isort profile black": {"pyproject.toml": '[tool.isort]\nprofile = "black"\n'},
    "isort VERTICAL_HANGING_INDENT with trailing comma": {"setup.cfg": (
        "[isort]\nmulti_line_output = 3\ninclude_trailing_comma = true\nline_length = 70\n")},
    "isort combine_as_imports": {"tox.ini": (
        "[isort]\ncombine_as_imports = true\nline_length = 60\nknown_first_party = myplugin\n")},
    "isort force_single_line": {".isort.cfg": (
        "[isort]\nforce_single_line = True\nline_length = 60\n")},
    "isort VERTICAL": {"setup.cfg": "[tool:isort]\nmulti_line_output = 1\nline_length = 60\n"},
    "isort HANGING_INDENT": {"setup.cfg": "[isort]\nmulti_line_output = 2\nline_length = 60\n"},
    "isort VERTICAL_GRID with parentheses": {"setup.cfg": (
        "[isort]\nmulti_line_output = VERTICAL_GRID\nuse_parentheses = yes\nline_length = 60\n")},
    "isort VERTICAL_GRID_GROUPED, trailing comma, magic comma": {"pyproject.toml": (
        "[tool.isort]\nmulti_line_output = 5\ninclude_trailing_comma = true\n"
        "split_on_trailing_comma = true\nline_length = 64\n")},
    "isort force_sort_within_sections, case_sensitive, order_by_type false": {".isort.cfg": (
        "[settings]\nforce_sort_within_sections = true\ncase_sensitive = true\n"
        "order_by_type = false\nline_length = 70\nreverse_relative = true\n")},
    "isort profile django (combine_as, GRID_GROUPED)": {"pyproject.toml": (
        '[tool.isort]\nprofile = "django"\nforce_grid_wrap = 3\n')},
    "isort from_first, lines_between_types, force_to_top, known_local_folder": {"setup.cfg": (
        "[isort]\nfrom_first = true\nlines_between_types = 1\nforce_to_top = torch\n"
        "known_local_folder = zeta\nprofile = hug\n")},
}


def project(root: Path, files: dict[str, str]) -> Path:
    """Writes a project folder holding only these configuration files; returns it."""
    root.mkdir(parents=True, exist_ok=True)
    (root / ".git").mkdir(exist_ok=True)  # isort stops looking for configuration here
    for name, text in files.items():
        (root / name).write_text(text)
    return root


def ruff_run(root: Path, texts: list[str], *, fix: bool) -> tuple[list[str], set[int]]:
    """Runs ruff once over one file per text; returns the files after it and the flagged."""
    paths = [root / f"block_{index}.py" for index in range(len(texts))]
    for path, text in zip(paths, texts):
        path.write_text(text)
    command = [str(RUFF), "check", "--select", "I", "--no-cache", "--output-format", "json",
               *(["--fix"] if fix else []), "."]
    result = subprocess.run(command, cwd=root, capture_output=True, text=True, check=False)
    assert result.returncode in (0, 1), result.stderr
    flagged = {int(Path(d["filename"]).stem.split("_")[1]) for d in json.loads(result.stdout)}
    return [path.read_text() for path in paths], flagged


def isort_config(root: Path) -> isort.Config:
    """Returns isort's own reading of the configuration in ``root``."""
    return isort.Config(settings_path=str(root))


def rendered_singles(style: ImportStyle, blocks: list[Block]) -> list[str]:
    """Returns each generated ``from`` statement written alone by render_from, as a file."""
    files = []
    for block in blocks:
        for s in block.statements:
            if s.kind == "from" and s.module != "__future__":
                statements = render_from(style, s.level, s.module, list(s.names),
                                         indent=block.indent, magic_comma=s.magic_comma,
                                         comment=s.comment)
                files.append(block.wrap("".join(f"{text}\n" for text in statements)))
    return files


def isort_settled(text: str, config: isort.Config) -> str:
    """Returns isort's output once running it again changes nothing.

    isort does not always accept its own output (a wrapped aliased member makes
    the module's next statement explode, for one), and ``isort --check`` wants
    that settled form.
    """
    for _ in range(8):
        again = isort.code(text, config=config)
        if again == text:
            break
        text = again
    return text


def written(style: ImportStyle, block: Block) -> str:
    """Returns the block as the module writes it, as a whole file."""
    return block.wrap(sort_block(style, block.statements, indent=block.indent))


def describe(block: Block, ours: str, theirs: str) -> str:
    """Returns a readable failure message for one block."""
    return f"input:\n{block.unsorted()}\nours:\n{ours}\ntool:\n{theirs}"


# ---------------------------------------------------------------- oracle tests


@pytest.mark.parametrize("name", list(RUFF_CONFIGS))
def test_a_sorted_block_matches_ruff_on_generated_blocks(name: str, tmp_path: Path) -> None:
    """ruff finds nothing in the module's blocks, and its fix of the shuffled input is them."""
    root = project(tmp_path / "p", RUFF_CONFIGS[name])
    style = find_style(root)
    assert style.tool == "ruff"
    blocks = generated_blocks(seed=sum(map(ord, name)))
    ours = [written(style, block) for block in blocks]
    singles = rendered_singles(style, blocks)
    _, flagged = ruff_run(root, ours + singles, fix=False)
    texts = ours + singles
    assert not flagged, f"ruff flags:\n{texts[min(flagged)]}"
    fixed, _ = ruff_run(root, [block.unsorted() for block in blocks], fix=True)
    for block, mine, theirs in zip(blocks, ours, fixed):
        assert mine == theirs, describe(block, mine, theirs)
        assert_keys_order(style, theirs)


@pytest.mark.parametrize("name", list(ISORT_CONFIGS))
def test_a_sorted_block_matches_isort_on_generated_blocks(name: str, tmp_path: Path) -> None:
    """isort leaves the module's blocks unchanged, and its sort of the shuffled input is them."""
    root = project(tmp_path / "p", ISORT_CONFIGS[name])
    style, config = find_style(root), isort_config(root)
    assert style.tool == "isort"
    blocks = generated_blocks(seed=sum(map(ord, name)))
    for single in rendered_singles(style, blocks):
        assert isort.code(single, config=config) == single, single
    for block in blocks:
        mine = written(style, block)
        assert isort.code(mine, config=config) == mine, describe(block, mine, isort.code(
            mine, config=config))
        theirs = isort_settled(block.unsorted(), config)
        assert mine == theirs, describe(block, mine, theirs)
        assert_keys_order(style, theirs)


def assert_keys_order(style: ImportStyle, text: str) -> None:
    """The module's keys order the members and, within a section, the statements of text."""
    nodes = [node for node in ast.walk(ast.parse(text))
             if isinstance(node, (ast.Import, ast.ImportFrom))]
    nodes.sort(key=lambda node: node.lineno)
    previous: tuple[int, tuple[object, ...]] | None = None
    for node in nodes:
        names = [(alias.name, alias.asname) for alias in node.names]
        if isinstance(node, ast.Import):
            level, module = 0, names[0][0]
            key = statement_key(style, kind="import", level=0, module=module,
                                asname=names[0][1])
        else:
            level, module = node.level, node.module or ""
            ordered = sorted(names, key=lambda n: member_key(style, *n))
            assert ordered == names, ast.unparse(node)
            key = statement_key(style, kind="from", level=level, module=module, first=names[0],
                                names=names)
        section = section_of(style, level, module)
        if previous is not None and previous[0] == section:
            assert previous[1] <= key, ast.unparse(node)
        previous = (section, key)


def test_the_tools_disagree_where_the_module_says_they_do(tmp_path: Path) -> None:
    """ruff puts ``a.b`` before ``a1`` and keeps plain members together; isort does neither."""
    ruff_style = find_style(project(tmp_path / "r", {"ruff.toml": ""}))
    isort_style = find_style(project(tmp_path / "i", {".isort.cfg": "[isort]\nline_length=79\n"}))
    block = [ImportStatement("import", (("a1", None),)), ImportStatement("import", (("a.b", None),)),
             ImportStatement("from", (("b", "x"), ("c", None), ("d", "y"), ("e", None)), "m")]
    assert sort_block(ruff_style, block) == (
        "import a.b\nimport a1\nfrom m import b as x\nfrom m import c, e\nfrom m import d as y\n")
    assert sort_block(isort_style, block) == (
        "import a1\nimport a.b\nfrom m import b as x\nfrom m import c\nfrom m import d as y\n"
        "from m import e\n")


# ---------------------------------------------------------------- render_from cases

RENDER_CASES = {
    "ruff wraps a long statement vertically with a trailing comma": (
        {}, {"level": 0, "module": "pkg", "names": [("x" * 40, None), ("y" * 40, None)]},
        [f"from pkg import (\n    {'x' * 40},\n    {'y' * 40},\n)"]),
    "ruff honours a lone member's magic comma": (
        {}, {"level": 0, "module": "m", "names": [("b", None)], "magic_comma": True},
        ["from m import (\n    b,\n)"]),
    "ruff counts the comment and keeps it after the parenthesis": (
        {"line_length": 30}, {"level": 0, "module": "m", "names": [("bb", None), ("cc", None)],
                              "comment": "# a remark"},
        ["from m import (  # a remark\n    bb,\n    cc,\n)"]),
    "ruff does not count a pragma comment": (
        {"line_length": 20}, {"level": 0, "module": "m", "names": [("bb", None), ("cc", None)],
                              "comment": "# type: ignore[attr-defined]"},
        ["from m import bb, cc  # type: ignore[attr-defined]"]),
    "ruff keeps a lone member's comment on the member": (
        {"line_length": 20}, {"level": 0, "module": "module", "names": [("name", None)],
                              "comment": "# noqa: F401"},
        ["from module import (\n    name,  # noqa: F401\n)"]),
    "ruff counts the block indentation": (
        {"line_length": 20}, {"level": 2, "module": "mod", "names": [("a", None), ("b", None)],
                              "indent": "        "},
        ["        from ..mod import (\n            a,\n            b,\n        )"]),
    "ruff keeps the given order when asked": (
        {}, {"level": 0, "module": "m", "names": [("b", None), ("a", None)], "sort": False},
        ["from m import b, a"]),
    "isort GRID aligns continuation lines under the parenthesis": (
        {"tool": "isort", "line_length": 30, "wrap": "grid", "trailing_comma": False},
        {"level": 0, "module": "m", "names": [("alpha", None), ("beta", None), ("gamma", None),
                                         ("delta", None)]},
        ["from m import (alpha, beta,\n               delta, gamma)"]),
    "isort ignores a magic comma on an aliased member": (
        {"tool": "isort"}, {"level": 0, "module": "o", "names": [("b", "c")], "magic_comma": True},
        ["from o import b as c"]),
    "isort cuts the plain members at every aliased one": (
        {"tool": "isort"}, {"level": 0, "module": "m", "names": [("b", "x"), ("c", None), ("d", "y"),
                                                           ("e", None)]},
        ["from m import b as x", "from m import c", "from m import d as y", "from m import e"]),
    "isort force_single_line writes one statement per member": (
        {"tool": "isort", "force_single_line": True},
        {"level": 1, "module": "", "names": [("b", None), ("A", None)]},
        ["from . import A", "from . import b"]),
}


@pytest.mark.parametrize("case", list(RENDER_CASES))
def test_render_from_writes_statements_as_the_tool_does(case: str) -> None:
    """A table of statements and what each tool writes for them."""
    overrides, arguments, expected = RENDER_CASES[case]
    style = replace(ImportStyle(), **overrides)
    arguments = dict(arguments)
    assert render_from(style, arguments.pop("level"), arguments.pop("module"),
                       arguments.pop("names"), **arguments) == expected


def test_render_import_puts_the_comment_after_two_spaces() -> None:
    """Neither tool wraps ``import x``; a comment follows after two spaces."""
    assert render_import(ImportStyle(), "a.b", "c", comment="#noqa") == "import a.b as c  # noqa"
    assert render_import(ImportStyle(), "os") == "import os"


# ---------------------------------------------------------------- keys and sections

SECTIONS = {
    "relative": (0, 2, "pkg", LOCAL_FOLDER),
    "future": (0, 0, "__future__", FUTURE),
    "stdlib submodule": (0, 0, "os.path", STDLIB),
    "unknown": (0, 0, "numpy", THIRD_PARTY),
    "known first party": (1, 0, "myplugin.core", FIRST_PARTY),
    "known first party beats stdlib": (1, 0, "json", FIRST_PARTY),
}


@pytest.mark.parametrize("case", list(SECTIONS))
def test_section_of_places_modules_as_the_tools_do(case: str) -> None:
    """Relative, future, known lists, the standard library, then third party."""
    known, level, module, expected = SECTIONS[case]
    style = replace(ImportStyle(), known_first_party=frozenset({"myplugin", "json"} if known
                                                               else set()))
    assert section_of(style, level, module) == expected


def test_member_key_orders_constants_classes_then_variables_naturally() -> None:
    """order_by_type: CONSTANT, Class, variable; digits compare as numbers in both tools."""
    names = ["x10", "Class", "x9", "CONST", "var", "D_E"]
    for style in (ImportStyle(), replace(ImportStyle(), tool="isort")):
        assert sorted(names, key=lambda n: member_key(style, n, None)) == [
            "CONST", "D_E", "Class", "var", "x9", "x10"]


def test_ruff_natord_compares_leading_zeros_digit_by_digit() -> None:
    """ruff's natord compares ``x01`` and ``x1`` left-aligned, and ``.`` before digits."""
    key = NatOrd
    assert key("x01") < key("x1") < key("x2") < key("x10")
    assert key("a.b") < key("a1")
    assert sorted(["x10", "x9", "x09"], key=key) == ["x09", "x9", "x10"]


# ---------------------------------------------------------------- find_style

FIND_CASES: dict[str, tuple[dict[str, str], str, dict[str, object]]] = {
    "no configuration gives ruff defaults": ({}, "", {"tool": "ruff", "line_length": 88}),
    "ruff.toml": ({"ruff.toml": "line-length = 100\n[lint.isort]\ncombine-as-imports = true\n"},
                  "", {"tool": "ruff", "line_length": 100, "combine_as": True}),
    ".ruff.toml beats ruff.toml": ({".ruff.toml": "line-length = 70\n",
                                    "ruff.toml": "line-length = 80\n"}, "", {"line_length": 70}),
    "pyproject [tool.ruff] legacy isort table": (
        {"pyproject.toml": "[tool.ruff]\n[tool.ruff.isort]\nforce-single-line = true\n"}, "",
        {"tool": "ruff", "force_single_line": True}),
    "lint.isort wins over the legacy table": (
        {"ruff.toml": "[isort]\ncase-sensitive = false\n[lint.isort]\ncase-sensitive = true\n"},
        "", {"case_sensitive": True}),
    "pyproject [tool.isort] profile black": (
        {"pyproject.toml": '[tool.isort]\nprofile = "black"\nline_length = 90\n'}, "",
        {"tool": "isort", "line_length": 90, "wrap": "vertical-hanging-indent",
         "trailing_comma": True, "split_on_trailing_comma": True}),
    ".isort.cfg [settings] defaults": (
        {".isort.cfg": "[settings]\nforce_single_line = 1\n"}, "",
        {"tool": "isort", "line_length": 79, "wrap": "grid", "trailing_comma": False,
         "force_single_line": True}),
    "setup.cfg [tool:isort]": ({"setup.cfg": "[tool:isort]\nknown_first_party = a, b\n"}, "",
                               {"known_first_party": frozenset({"a", "b"})}),
    "tox.ini [isort] wrap mode by name": (
        {"tox.ini": "[isort]\nmulti_line_output = VERTICAL_GRID_GROUPED\n"}, "",
        {"wrap": "vertical-grid-grouped"}),
    "a pyproject without either table is walked past": (
        {"ruff.toml": "line-length = 61\n", "sub/pyproject.toml": "[project]\nname = 'x'\n"},
        "sub", {"tool": "ruff", "line_length": 61}),
    "an empty isort table is walked past": (
        {"setup.cfg": "[isort]\nline_length = 62\n", "sub/pyproject.toml": "[tool.isort]\n"},
        "sub", {"tool": "isort", "line_length": 62}),
    "the nearest folder wins": (
        {"ruff.toml": "line-length = 63\n", "sub/.isort.cfg": "[isort]\nline_length = 64\n"},
        "sub/deeper", {"tool": "isort", "line_length": 64}),
    "ruff beats isort in the same folder": (
        {"pyproject.toml": "[tool.isort]\nline_length = 65\n[tool.ruff]\nline-length = 66\n"},
        "", {"tool": "ruff", "line_length": 66}),
    "isort configuration above a repository root is not used": (
        {"setup.cfg": "[isort]\nline_length = 67\n", "repo/.git/HEAD": ""}, "repo/src",
        {"tool": "ruff", "line_length": 88}),
    "ruff configuration above a repository root is used": (
        {"ruff.toml": "line-length = 68\n", "repo/.git/HEAD": ""}, "repo/src",
        {"tool": "ruff", "line_length": 68}),
    "a file's folder is used": ({"ruff.toml": "line-length = 69\n", "pkg/mod.py": ""},
                                "pkg/mod.py", {"line_length": 69}),
    "ruff extend merges the base file under the settings": (
        {"base.toml": "line-length = 71\n[lint.isort]\ncase-sensitive = true\n",
         "ruff.toml": 'extend = "base.toml"\n[lint.isort]\nforce-single-line = true\n'}, "",
        {"line_length": 71, "case_sensitive": True, "force_single_line": True}),
    "unknown keys are ignored": ({".isort.cfg": "[settings]\nno_such_key = 3\n"}, "",
                                 {"tool": "isort", "line_length": 79}),
}


@pytest.mark.parametrize("case", list(FIND_CASES))
def test_find_style_reads_the_nearest_configuration(case: str, tmp_path: Path) -> None:
    """Each configuration file kind, walking up, nearest first."""
    files, start, expected = FIND_CASES[case]
    root = tmp_path / "top"
    root.mkdir()
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)
    (root / start).parent.mkdir(parents=True, exist_ok=True)
    if not (root / start).exists():
        (root / start).mkdir(parents=True)
    style = find_style(root / start)
    assert {key: getattr(style, key) for key in expected} == expected


BAD_CONFIGS = {
    "ruff line-length not a number": (
        "ruff.toml", 'line-length = "x"\n',
        ("{path}: line-length: expected a whole number from 1 to 320, got 'x'; set line-length "
        "to a number such as 88")),
    "ruff boolean as a string": (
        "pyproject.toml", '[tool.ruff.lint.isort]\ncombine-as-imports = "yes"\n',
        ("{path}: [tool.ruff.lint.isort] combine-as-imports: expected a TOML boolean, got 'yes'; "
        "write combine-as-imports = true or combine-as-imports = false")),
    "isort unknown multi_line_output": (
        ".isort.cfg", "[settings]\nmulti_line_output = 42\n",
        ("{path}: [settings] multi_line_output: unsupported wrap mode '42'; use one of 0-5 (GRID, "
        "VERTICAL, HANGING_INDENT, VERTICAL_HANGING_INDENT, VERTICAL_GRID, "
        "VERTICAL_GRID_GROUPED)")),
    "isort line_length not a number": (
        "setup.cfg", "[isort]\nline_length = long\n",
        ("{path}: [isort] line_length: expected a whole number from 1 to 100000, got 'long'; "
        "set line_length to a number such as 88")),
    "isort bad boolean": (
        "tox.ini", "[isort]\nforce_single_line = maybe\n",
        ("{path}: [isort] force_single_line: expected true or false, got 'maybe'; set "
        "force_single_line to true or false")),
    "isort unknown profile": (
        "pyproject.toml", '[tool.isort]\nprofile = "nope"\n',
        ("{path}: [tool.isort] profile: profile 'nope' is not an isort profile; use one of "
        "attrs, black, django, hug, pycharm, wemake or set the options one by one")),
    "ruff extend names a missing file": (
        "ruff.toml", 'extend = "nowhere.toml"\n',
        ("{path}: extend: 'nowhere.toml' is not a readable ruff configuration (or extends "
         "itself); point extend at a ruff.toml or pyproject.toml")),
    "invalid TOML": (
        "ruff.toml", "line-length = = 3\n", None),
}


@pytest.mark.parametrize("case", list(BAD_CONFIGS))
def test_a_malformed_value_raises_an_error_naming_file_and_key(case: str,
                                                               tmp_path: Path) -> None:
    """The error names the file, the key, what was wrong and how to fix it."""
    name, text, message = BAD_CONFIGS[case]
    (tmp_path / name).write_text(text)
    with pytest.raises(StyleConfigError) as caught:
        find_style(tmp_path)
    path = str(tmp_path / name)
    assert isinstance(caught.value, AuxcheckError) and isinstance(caught.value, ValueError)
    assert caught.value.path == path
    if message is None:
        assert str(caught.value).startswith(f"{path}: (file): not valid TOML (")
    else:
        assert str(caught.value) == message.format(path=path)


def test_find_style_matches_isort_own_reading_of_the_file(tmp_path: Path) -> None:
    """For every isort configuration above, find_style reads what isort reads."""
    for index, files in enumerate(ISORT_CONFIGS.values()):
        root = project(tmp_path / str(index), files)
        style, config = find_style(root), isort_config(root)
        assert (style.line_length, style.trailing_comma, style.combine_as,
                style.force_single_line, style.order_by_type, style.case_sensitive,
                style.force_sort_within_sections, style.split_on_trailing_comma,
                style.use_parentheses, style.force_grid_wrap, style.indent) == (
            config.line_length, config.include_trailing_comma, config.combine_as_imports,
            config.force_single_line, config.order_by_type, config.case_sensitive,
            config.force_sort_within_sections, config.split_on_trailing_comma,
            config.use_parentheses, config.force_grid_wrap, config.indent)
        assert style.wrap == WRAP_MODES[int(config.multi_line_output)]


def test_all_lists_the_public_names() -> None:
    """``__all__`` holds exactly the documented public names, sorted, and all exist."""
    assert _style.__all__ == [
        "FIRST_PARTY", "FUTURE", "LOCAL_FOLDER", "STDLIB", "THIRD_PARTY", "ImportStatement",
        "ImportStyle", "Names", "StyleConfigError", "find_style", "member_key", "render_from",
        "render_import", "section_of", "sort_block", "statement_key"]
    assert all(hasattr(_style, name) for name in _style.__all__)
