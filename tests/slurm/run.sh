#!/usr/bin/env bash
# Runs every tests/slurm/test_*.sh against a private single-host Slurm started for the run (real
# sbatch, srun, squeue, scontrol, scancel) and prints "N passed, N failed". The cluster is stopped at
# the end, and the run fails if any of its processes is left. Needs root (the daemons run jobs as root).
set -uo pipefail
here=$(cd "$(dirname "$0")" && pwd)
export BIN=${BIN:?BIN must point at the built tools}
export ROOT=$(cd "$here/../.." && pwd)
filter=${1:-}
if [[ $(id -u) != 0 ]]; then
  echo "SKIP: tests/slurm: the private Slurm runs its daemons as root"; exit 0
fi
for c in munged mungekey slurmctld slurmd sbatch srun squeue scontrol scancel sinfo unshare; do
  command -v "$c" >/dev/null || { echo "tests/slurm: $c not found (make deps installs it)" >&2; exit 1; }
done
source "$here/cluster.sh"
top=$(mktemp -d)
trap 'cluster_stop; rm -rf "$top"' EXIT
cluster_start "$top/cluster" || exit 1
passed=0; failed=0
for t in "$here"/test_*.sh; do
  name=$(basename "$t" .sh)
  [[ -n $filter && $name != *$filter* ]] && continue
  work=$top/$name
  mkdir -p "$work"
  start=$(date +%s%N)
  if (cd "$work" && bash -euo pipefail -c \
      "source '$ROOT/tests/e2e/lib.sh'; source '$here/lib.sh'; source '$t'") >"$work.log" 2>&1; then
    ms=$((($(date +%s%N) - start) / 1000000))
    if grep -q '^SKIP: ' "$work.log"; then
      printf 'SKIP %-36s %s\n' "$name" "$(grep -m1 '^SKIP: ' "$work.log" | cut -c7-)"
    else
      printf 'PASS %-36s %6d ms\n' "$name" "$ms"
    fi
    passed=$((passed + 1))
  else
    failed=$((failed + 1))
    echo "FAIL $name"; sed 's/^/    /' "$work.log" | tail -40
  fi
  # A test's jobs end with the test, so that the next one starts on an idle node.
  ids=$(timeout 10 squeue -h -o %A 2>/dev/null)
  # shellcheck disable=SC2086
  [[ -n $ids ]] && scancel $ids && sleep 0.5
  rm -rf "$work"
done
if ! cluster_stop; then failed=$((failed + 1)); echo "FAIL cluster stop"; fi
trap 'rm -rf "$top"' EXIT
echo "$passed passed, $failed failed"
((failed == 0))
