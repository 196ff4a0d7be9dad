# Helpers for end-to-end tests (sourced; each test runs with `set -euo pipefail` in a temp dir).
DATA=$ROOT/tests/data
GOLDEN=$ROOT/tests/data/golden
VOCAB=$ROOT/data/gpt2/vocab.json
MERGES=$ROOT/data/gpt2/merges.txt

fail() { echo "FAILED: $*" >&2; exit 1; }

# expect_exit CODE cmd...: runs cmd, stderr to ./stderr, and checks the exit status.
expect_exit() {
  local want=$1; shift
  local got=0
  "$@" 2>stderr || got=$?
  [[ $got == "$want" ]] || { cat stderr >&2; fail "expected exit $want, got $got: $*"; }
}

# expect_stderr PATTERN: the last command's stderr matches the extended regex.
expect_stderr() { grep -Eq -- "$1" stderr || { cat stderr >&2; fail "stderr does not match: $1"; }; }

# stdout_matches REGEX cmd...: cmd exits 0 and some line of its stdout matches the extended regex.
# Not `cmd | grep -q`: under pipefail, grep leaving at the first match can kill cmd with SIGPIPE
# while it still writes, and the check then fails (or, after `&& fail`, passes) by timing alone.
stdout_matches() {
  local re=$1 out; shift
  out=$("$@") || { echo "exit $?: $*" >&2; return 1; }
  grep -Eq -- "$re" <<< "$out"
}

# A TCP port free on this host now (for --master-port).
free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'; }

same_file() { cmp -s "$1" "$2" || fail "files differ: $1 $2"; }

# A Python 3 that imports numpy: Debian's python3-numpy (scripts/install-deps.sh) belongs to
# /usr/bin/python3, which an earlier python3 on PATH (pyenv's, a venv's) may not see.
python_with_numpy() {
  local p
  for p in python3 /usr/bin/python3; do
    "$p" -c 'import numpy' 2> /dev/null && { echo "$p"; return; }
  done
  fail "no python3 with numpy (scripts/install-deps.sh installs python3-numpy)"
}
