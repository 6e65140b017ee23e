"""The rule table: every finding's code, title and fix hint, in one place.

Messages, docs/rules.md's rule table and ``auxcheck rules`` are all rendered from
:data:`RULES`, so a code's wording cannot drift between them.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from types import MappingProxyType
from typing import Literal

from auxcheck._core.errors import InvalidArgument

__all__ = ["RULES", "Rule", "Severity", "get_rule", "parse_codes", "render_table"]

Severity = Literal["error", "note"]
"""An error fails a check; a note is reported but never fails one."""


@dataclass(frozen=True, slots=True)
class Rule:
    """One contract rule: a stable code, what it finds, and how to fix it."""

    code: str
    title: str
    hint: str
    severity: Severity = "error"

    @property
    def family(self) -> str:
        """Returns the rule's family: its code with the last two digits dropped (``AUX1``)."""
        return self.code[:-2]


_TABLE: tuple[tuple[str, str, str], ...] = (
    ("AUX101", "device output has no callable `copy_to_host`",
     "define `copy_to_host(self, copy_tensor)` returning a host output"),
    ("AUX102", "`copy_to_host` cannot be called as `copy_to_host(copy_tensor)`",
     ("take exactly one positional argument after self (the scheduler passes it positionally); "
     "a @staticmethod must still accept that argument")),
    ("AUX103", "`copy_to_host` raised, or returned None / an object with no callable `consume`",
     "return a host output whose `consume(batch, commits)` is callable, and do not raise"),
    ("AUX104", "one copy passed the same tensor bytes to `copy_tensor` more than once",
     "pass each distinct tensor to `copy_tensor` once and reuse the host copy"),
    ("AUX105", ("the host output keeps a tensor it passed to `copy_tensor` (or copies one after "
                "`copy_to_host` returned): the copy was bypassed"),
     "keep only what `copy_tensor` returned in the host output, never the device tensors"),
    ("AUX106", ("note, not a failure: the output publishes device tensors without copying them "
                "(device publication)"),
     ("order the transfer yourself (a CUDA event) and keep the tensors graph-safe: AUX110, "
      "AUX111 and AUX112 still apply")),
    ("AUX110", "a device tensor overlaps a registered CUDA-graph static buffer",
     ("`clone()` the tensor before publishing it, or copy it inside the graph into a buffer "
     "the output owns")),
    ("AUX111", "a device tensor lies in a CUDA-graph private memory pool",
     "`clone()` the tensor outside graph capture before publishing it"),
    ("AUX112", ("a published device tensor changed between publication and copy (overwritten "
                "by the next step or replay)"),
     ("publish tensors the output owns: `clone()` views of graph buffers and of the logits, and "
      "allocate a fresh buffer each step instead of reusing one")),
    ("AUX113", ("an observer wrote to a tensor SGLang handed it (logits, token ids, logits output, "
                "forward batch)"),
     ("`clone()` before editing (`logits.clone().masked_fill_(...)`); never write in place to "
      "the tensors a hook is handed")),
    ("AUX114", ("`copy_to_host` read the values of a tensor `copy_tensor` returned before SGLang "
                "synchronizes the copy (`.tolist()`, `.item()`, indexing into Python)"),
     ("keep what `copy_tensor` returns as tensors in the host output and read their values in "
      "`consume`: SGLang synchronizes the copy only after `copy_to_host` returns, and on a GPU "
      "the host tensor holds old bytes until then")),
    ("AUX115", ("an observer kept a tensor SGLang handed it and read it after SGLang edited it "
                "in place (the logits of `before_grammar` read in `after_sample`)"),
     ("compute in `before_grammar` what `after_sample` needs, or `clone()` the logits there: "
      "after `before_grammar` the sampler masks (grammar), biases, divides by the temperature "
      "and softmaxes the logits in place")),
    ("AUX201", "host output has no callable `consume(batch, commits)`",
     "define `consume(self, batch, commits)` taking two positional arguments"),
    ("AUX202", ("`consume` raised on a call SGLang makes: the batch its output was built for, "
                "with aligned commits (None entries included)"),
     "handle None commits and finished requests; index commits by position in `batch.reqs`"),
    ("AUX203", "`consume` mutated `commits` or `batch.reqs`",
     ("treat `batch.reqs` and `commits` as read-only: composites pass the same objects to "
     "every child; copy them first if you must change them")),
    ("AUX204", "`consume` returned a value",
     "return None from `consume`; publish results through the request, not a return value"),
    ("AUX205", ("note, not a failure: plugin code read a field SGLang's real object has that "
                "auxcheck's stand-in does not simulate, so auxcheck cannot tell what follows"),
     ("nothing to fix when the field is read as SGLang fills it; the rest of that hook or "
      "consume went unchecked: test it against a real server (or report the field to auxcheck)")),
    ("AUX301", "append nested a composite instead of flattening",
     "splice the children of a composite operand into the new composite"),
    ("AUX302", "append or composite broke append order",
     "keep children in append order: current's children first, then output's"),
    ("AUX303", "append mishandled None",
     "return the other operand unchanged when either side is None (None when both are)"),
    ("AUX304", "a composite copied a child more or less than once",
     ("call every child's `copy_to_host` exactly once, eagerly, inside the composite's "
     "`copy_to_host`")),
    ("AUX305", "a composite did not pass identical batch and commits to every child",
     "pass the very same batch and commits objects to every child, in order"),
    ("AUX306", "a composite is mutable",
     "make composites frozen dataclasses holding tuples"),
    ("AUX401", "output used in pipeline-parallel mode has no `to_pp_tensors` (composites included)",
     "implement `to_pp_tensors()`; do not compose outputs that must cross PP stages"),
    ("AUX402", "`to_pp_tensors` returned an empty mapping, a bad name or a non-tensor",
     "return a non-empty mapping of non-empty string names to tensors"),
    ("AUX403", "`from_pp_tensors` returned None, or its output copies to different host values",
     "rebuild an equivalent device output from exactly the tensors `to_pp_tensors` sent"),
    ("AUX501", "import of a moved name from its old module (fixable by `auxcheck migrate`)",
     "run `auxcheck migrate PATH` to import it from its new module"),
    ("AUX502", "use of an old module that cannot be rewritten safely (star import, dynamic import)",
     "import the moved names explicitly from their new module by hand"),
    ("AUX503", "import of a name that the target SGLang release does not provide",
     ("import it from the module that release defines it in (`auxcheck moves --from A --to B` "
      "lists the moves), or drop the release from the ones you support")),
    ("AUX504", "a Python file that cannot be read, decoded or parsed",
     ("make it valid Python for the Python version in use (readable, in the encoding its "
      "coding cookie declares, without null bytes), or leave it out of the scan: "
      "`--exclude GLOB` for `auxcheck migrate`, ini `auxcheck_paths` for `pytest --auxcheck`")),
    ("AUX601", "commits not aligned with `batch.reqs`, or a malformed `CommittedTokens`",
     ("build one entry per request in `batch.reqs`: None, or CommittedTokens(output_index>=0, "
     "non-empty tuple of ints)")),
    ("AUX701", ("a hook target (`HookRegistry.register`, `@plugin_hook`) does not exist in the "
                "target SGLang release"),
     ("hook a function, class or method the release has (class targets take only "
      "HookType.REPLACE); SGLang only logs a failed hook at server start")),
    ("AUX702", ("a `sglang.srt.plugins` entry point does not resolve to a module-level callable "
                "taking no arguments"),
     ('point the entry point at a module-level function of the plugin, '
      '`name = "package.module:register"`, that takes no arguments')),
    ("AUX703", ("a hook cannot take the call `HookRegistry` makes for its type on the target's "
                "signature in that release"),
     ("give the hook the target's parameters (after `result` for AFTER, `original_fn` for "
      "AROUND), or take `*args, **kwargs` and pass them on")),
    ("AUX704", "a call into SGLang does not bind to the callee's signature in that release",
     ("call it with the parameters that release declares, or branch on the release")),
    ("AUX705", ("SGLang cannot use a plugin class in that release: an abstract method of its "
                "SGLang base is missing, or SGLang builds it or calls one of its overrides with "
                "arguments it cannot take"),
     ("define every abstract method of the base, and give `__init__` and each override the "
      "parameters the release passes (or take `*args, **kwargs`)")),
    ("AUX706", ("a hook or patch cannot take effect in that release: nothing calls its target, "
                "or the class binds the method before any hook can wrap it (msgspec)"),
     ("hook or patch what that release calls instead (the finding names it where a move is "
      "known), or drop the hook for that release")),
    ("AUX801", ("the plugin did not load in SGLang's real server: its entry point failed to "
                "import, or its `register()` raised (SGLang logs this and serves without it)"),
     ("fix the error the traceback ends in; `python -c \"from MODULE import register; "
      "register()\"` beside SGLang shows it without a server")),
    ("AUX802", ("SGLang's real `HookRegistry.apply_hooks()` could not apply a hook (it logs "
                "this and serves without the hook)"),
     ("hook a target that release has, with a hook type it allows (class targets take only "
      "REPLACE); `auxcheck check --sglang` judges targets without a server")),
    ("AUX803", ("note, not a failure: a hook SGLang's real server applied was never called "
                "while the scenarios ran"),
     ("where the hook must run on every server its target is no longer on SGLang's path (see "
      "AUX706); where it serves paths a CPU cannot take (CUDA graphs, speculative decoding, "
      "disaggregation), test it on such a server")),
    ("AUX804", "SGLang's real server, or one of its processes, died with the plugin loaded",
     ("fix the error at the plugin's frame the finding names; the server log it names keeps "
      "SGLang's whole traceback")),
    ("AUX805", "a request failed or hung in SGLang's real server with the plugin loaded",
     ("read the server log the finding names: the same request is served without the plugin, "
      "so the plugin's hooks or observers are on its path")),
)

_NOTES = frozenset({"AUX106", "AUX205", "AUX803"})

RULES: Mapping[str, Rule] = MappingProxyType({
    code: Rule(code, t, h, "note" if code in _NOTES else "error") for code, t, h in _TABLE})
"""Every rule by code, in code order."""


def get_rule(code: str) -> Rule:
    """Returns the rule with this code; raises InvalidArgument naming the known codes."""
    try:
        return RULES[code]
    except KeyError:
        raise InvalidArgument(
            f"unknown rule code {code!r}; expected one of {', '.join(RULES)}"
        ) from None


def parse_codes(values: Iterable[str]) -> frozenset[str]:
    """Returns the codes named by ``values``: exact codes or family prefixes like ``AUX5``.

    Items may themselves be comma- or space-separated. An unknown code raises
    InvalidArgument naming it and the accepted values.
    """
    codes: set[str] = set()
    for value in values:
        for item in value.replace(",", " ").split():
            matched = [code for code in RULES if code.startswith(item.upper())]
            if not item.upper().startswith("AUX") or not matched:
                raise InvalidArgument(
                    f"unknown rule code {item!r}; expected a code such as AUX104 "
                    f"or a family prefix such as AUX1 (see `auxcheck rules`)"
                )
            codes.update(matched)
    return frozenset(codes)


def render_table(*, markdown: bool = False) -> str:
    """Returns the rule table as aligned text, or as a Markdown table."""
    if markdown:
        rows = ["| code | finding | fix |", "|---|---|---|"]
        rows += [f"| {r.code} | {r.title} | {r.hint} |" for r in RULES.values()]
        return "\n".join(rows)
    return "\n".join(f"{r.code}  {r.title}\n        fix: {r.hint}" for r in RULES.values())
