#!/usr/bin/env bash
# Runs `auxcheck validate` on the good example plugin (must be clean) and on every
# planted bug of the broken one (each must be reported with its code).
# Usage: bash examples/demo.sh .venv/bin      (the directory holding `auxcheck`)
set -uo pipefail
BIN=${1:-.venv/bin}
cd "$(dirname "$0")/.."
AUXCHECK="$BIN/auxcheck"
failures=0

heading() { printf '\n=== %s\n' "$1"; }

heading "good plugin: capture_plugin (expected: clean, exit 0)"
"$AUXCHECK" validate --path examples/capture_plugin \
    --pp-observer capture_plugin.outputs:make_observer \
    --static-buffers capture_plugin.outputs:static_buffers \
    capture_plugin.outputs:make_device_output \
    capture_plugin.outputs:make_host_output \
    capture_plugin.outputs:make_observer
status=$?
if [ "$status" -ne 0 ]; then
    echo "FAIL: the good plugin was not clean (exit $status)"
    failures=$((failures + 1))
fi

# class name, expected code (the same table as broken_plugin.outputs.PLANTED_BUGS)
planted="
WrongArityOutput AUX102
DoubleCopyOutput AUX104
KeepsDeviceTensorOutput AUX105
StaticBufferViewOutput AUX110
CrashesOnNoneOutput AUX202
MutatesCommitsOutput AUX203
ReturnsValueOutput AUX204
EmptyPPOutput AUX402
"
targets=()
while read -r name code; do
    [ -n "$name" ] && targets+=("broken_plugin.outputs:$name")
done <<<"$planted"

heading "broken plugin: one object per planted bug (expected: exit 1)"
output=$("$AUXCHECK" validate --path examples/broken_plugin \
    --static-buffers broken_plugin.outputs:static_buffers "${targets[@]}" 2>&1)
status=$?
printf '%s\n' "$output"
if [ "$status" -ne 1 ]; then
    echo "FAIL: expected exit 1 for the broken plugin, got exit $status"
    failures=$((failures + 1))
fi

heading "planted bug -> reported code"
while read -r name code; do
    [ -n "$name" ] || continue
    # The lines of this object's report: from its heading to the next unindented line.
    section=$(awk -v head="broken_plugin.outputs:$name:" \
        'index($0, head) == 1 {on = 1; next} /^[^ ]/ {on = 0} on' <<<"$output")
    if grep -q "^  $code " <<<"$section"; then
        printf '  ok    %-26s %s\n' "$name" "$code"
    else
        printf '  FAIL  %-26s %s not reported\n' "$name" "$code"
        failures=$((failures + 1))
    fi
done <<<"$planted"

heading "summary"
if [ "$failures" -eq 0 ]; then
    echo "demo passed: the good plugin is clean and all 8 planted bugs were reported"
    exit 0
fi
echo "demo FAILED: $failures expectation(s) not met"
exit 1
