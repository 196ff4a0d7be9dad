#!/usr/bin/env bash
# Runs every tests/e2e/test_*.sh against the tools in $BIN and prints "N passed, N failed".
# Each test script is run in its own temporary directory with helpers from lib.sh available.
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export BIN=${BIN:?BIN must point at the built tools}
export ROOT=$(cd "$here/../.." && pwd)
filter=${1:-}
passed=0; failed=0; failures=()
for t in "$here"/test_*.sh; do
  name=$(basename "$t" .sh)
  [[ -n $filter && $name != *$filter* ]] && continue
  work=$(mktemp -d)
  start=$(date +%s%N)
  if (cd "$work" && bash -euo pipefail -c "source '$here/lib.sh'; source '$t'") >"$work.log" 2>&1; then
    passed=$((passed + 1))
    ms=$((($(date +%s%N) - start) / 1000000))
    printf 'PASS %-36s %6d ms\n' "$name" "$ms"
  else
    failed=$((failed + 1)); failures+=("$name")
    echo "FAIL $name"; sed 's/^/    /' "$work.log" | tail -40
  fi
  rm -rf "$work" "$work.log"
done
echo "$passed passed, $failed failed"
((failed == 0))
