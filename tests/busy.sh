#!/usr/bin/env bash
# `make test` RUNS times beside four busy loops, each run in an order shuffled by a new seed
# (or by $SEED): the suite must pass on a machine other work keeps busy, as CI's sometimes
# is. Stops at the first failing run and says how to run that order again.
set -euo pipefail
runs=${1:-3}
cd "$(dirname "$0")/.."
loops=()
trap 'kill "${loops[@]}" 2>/dev/null || true' EXIT
for _ in 1 2 3 4; do
  python3 -c "while True: pass" &
  loops+=($!)
done
for run in $(seq 1 "$runs"); do
  seed=${SEED:-$RANDOM}
  echo "== test-busy: run $run of $runs beside four busy loops, --suite-shuffle=$seed"
  start=$(date +%s)
  if ! make --no-print-directory test PYTEST_ARGS="--suite-shuffle=$seed"; then
    echo "== test-busy: run $run failed; the same order again: make test-busy RUNS=1 SEED=$seed"
    exit 1
  fi
  echo "== test-busy: run $run passed in $(( $(date +%s) - start )) s"
done
