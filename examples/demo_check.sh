#!/usr/bin/env bash
# The plugin author's view: `auxcheck check` on the good plugin (clean), on the broken
# one (every planted bug reported by its code), on the hook plugin (its hooks and calls
# judged per SGLang release), then `auxcheck migrate --diff` on the legacy one. Usage: bash examples/demo_check.sh .venv/bin   (the folder holding `auxcheck`)
# What stderr shows is auxcheck's progress, not pytest's own output (that takes -v): a line
# as each stage starts and ends (`auxcheck check: [2/4] mypy ...`), and inside a stage past
# a couple of seconds its progress (`auxcheck check: contract: 40 items (12 s)`, downloads,
# index building); on a terminal that line is redrawn in place.
set -uo pipefail
BIN=${1:-.venv/bin}
cd "$(dirname "$0")/.."
AUXCHECK="$BIN/auxcheck"
JOBS=()
"$BIN/python" -c "import xdist" 2>/dev/null && JOBS=(--jobs 2)
failures=0

heading() { printf '\n=== %s\n' "$1"; }

heading "auxcheck check examples/capture_plugin (expected: every stage ok, exit 0)"
"$AUXCHECK" check "${JOBS[@]}" examples/capture_plugin
status=$?
if [ "$status" -ne 0 ]; then
    echo "FAIL: the good plugin did not pass (exit $status)"
    failures=$((failures + 1))
fi

heading "auxcheck check examples/broken_plugin (expected: the contract stage fails, exit 1)"
output=$("$AUXCHECK" check "${JOBS[@]}" --skip mypy examples/broken_plugin)
status=$?
printf '%s\n' "$output"
if [ "$status" -ne 1 ]; then
    echo "FAIL: expected exit 1 for the broken plugin, got exit $status"
    failures=$((failures + 1))
fi

heading "planted bug -> the one item that reported it (no cascade: every other item of it passed or was skipped)"
planted=$("$BIN/python" -c "
import sys; sys.path.insert(0, 'examples/broken_plugin')
from broken_plugin.outputs import PLANTED_BUGS, PLANTED_OBSERVER_BUGS
for name, code in {**PLANTED_BUGS, **PLANTED_OBSERVER_BUGS}.items(): print(name, code)")
while read -r name code; do
    [ -n "$name" ] || continue
    failed=$(grep -cE "\[${name}-${code}\]: " <<<"$output")
    line=$(grep -E "::${code}-[a-z0-9-]+\[${name}-${code}\]: ${code} " <<<"$output" | head -1)
    if [ -n "$line" ] && [ "$failed" -eq 1 ]; then
        printf '  ok    %-26s %s  %s (1 failed item)\n' "$name" "$code" "${line%%]: *}]"
    else
        printf '  FAIL  %-26s %s reported by its code: %s; failed items: %s\n' "$name" "$code" \
            "$([ -n "$line" ] && echo yes || echo no)" "$failed"
        failures=$((failures + 1))
    fi
done <<<"$planted"

heading "auxcheck check examples/hook_plugin --sglang (expected: AUX703-AUX706 where SGLang moved, exit 1)"
output=$("$AUXCHECK" check --skip mypy --skip contract examples/hook_plugin)
status=$?
printf '%s\n' "$output"
expected="0.5.19   ok (5)   ok (13)     FAIL 1 AUX703            FAIL 1 AUX704  ok (8)         ok (1)        -
0.5.20   ok (5)   ok (13)     FAIL 1 AUX703, 1 AUX706  FAIL 1 AUX704  ok (8)         ok (1)        -
0.5.23   ok (5)   ok (13)     FAIL 4 AUX703, 1 AUX706  FAIL 1 AUX704  FAIL 1 AUX705  ok (1)        -"
if [ "$status" -ne 1 ] || ! grep -qF "$expected" <<<"$output"; then
    echo "FAIL: expected exit 1 and the hook plugin's release matrix above, got exit $status"
    failures=$((failures + 1))
fi

heading "auxcheck migrate --diff examples/legacy_plugin (the rewrite it would make)"
"$AUXCHECK" migrate --diff examples/legacy_plugin

heading "summary"
if [ "$failures" -eq 0 ]; then
    echo "demo passed: capture_plugin is clean, every planted bug was reported by its code, and"
    echo "hook_plugin fails exactly where SGLang moved (signatures, classes, hooks that never run)"
    exit 0
fi
echo "demo FAILED: $failures expectation(s) not met"
exit 1
