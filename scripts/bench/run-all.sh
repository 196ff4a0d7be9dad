#!/usr/bin/env bash
# Runs every benchmark in this folder (each runs our tool and its reference in the same run).
# Results worth keeping go into RESULTS.md with the date, machine and command.
set -uo pipefail
cd "$(dirname "$0")"
status=0
for b in *.sh; do
  [[ $b == lib.sh || $b == run-all.sh ]] && continue
  echo "== $b"
  bash "$b" || { echo "bench: $b failed"; status=1; }
done
exit $status
