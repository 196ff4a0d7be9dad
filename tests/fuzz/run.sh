#!/usr/bin/env bash
# Builds each libFuzzer target given on the command line (tests/fuzz/*_fuzz.cpp) with
# `clang++ -fsanitize=fuzzer,address` and runs it for ${FUZZ_SECONDS:-30} seconds, as many at a
# time as there are cores.
#
# Environment (set by `make fuzz`): BUILD (output root; binaries go to $BUILD/fuzz/), CPPFLAGS,
# LDLIBS, COMMON_SRC (the common/*.cpp files). A target may narrow the sources it links with a
# line `// fuzz-sources: DIR...` (directories under the repository root).
# A fresh corpus directory per target is seeded from tests/fuzz/corpus/<name without _fuzz>/;
# crashes are written to $BUILD/fuzz/crashes/.
set -euo pipefail

BUILD=${BUILD:-build}
FUZZ_SECONDS=${FUZZ_SECONDS:-30}
CLANGXX=${CLANGXX:-clang++}
CPPFLAGS=${CPPFLAGS:--I.}
LDLIBS=${LDLIBS:-}
COMMON_SRC=${COMMON_SRC:-$(find common -name '*.cpp' | LC_ALL=C sort)}

if [ $# -eq 0 ]; then
  echo "usage: run.sh tests/fuzz/NAME_fuzz.cpp..." >&2
  exit 2
fi
if ! command -v "$CLANGXX" >/dev/null; then
  echo "run.sh: $CLANGXX not found (apt-get install -y clang)" >&2
  exit 1
fi

out=$BUILD/fuzz
mkdir -p "$out/obj" "$out/crashes"
# Line tables are all a crash report needs, and they compile faster than full debug information.
FLAGS="-std=c++20 -O1 -gline-tables-only -fno-omit-frame-pointer"
jobs=$(nproc 2>/dev/null || echo 2)

obj_of() { local src=$1; echo "$out/obj/${src//\//_}.o"; }

# The common sources a target links: all of them, or those under its `// fuzz-sources:` folders.
sources_of() {
  local target=$1 dirs src d
  dirs=$(sed -n 's|^// fuzz-sources:||p' "$target" | head -n1)
  for src in $COMMON_SRC; do
    if [ -z "$dirs" ]; then echo "$src"; continue; fi
    for d in $dirs; do
      case $src in "$d"/*) echo "$src"; break ;; esac
    done
  done
}

# Every instrumented object once (targets share most of theirs), on every core.
all_srcs=$(for target in "$@"; do sources_of "$target"; echo "$target"; done | LC_ALL=C sort -u)
echo "fuzz: compiling $(echo "$all_srcs" | wc -l) sources for $# targets"
export CLANGXX CPPFLAGS FLAGS out
export -f obj_of
# shellcheck disable=SC2016  # expanded by the inner shell
echo "$all_srcs" | xargs -P "$jobs" -I{} bash -c \
  '"$CLANGXX" $FLAGS $CPPFLAGS -fsanitize=fuzzer-no-link,address -c "$1" -o "$(obj_of "$1")"' _ {}

# Link every target, then run them $jobs at a time: a fuzzer is one process on one core, so each
# still gets its FUZZ_SECONDS of a core. Outputs are shown target by target once all have ended.
for target in "$@"; do
  name=$(basename "$target" .cpp)
  objs=()
  for src in $(sources_of "$target"); do objs+=("$(obj_of "$src")"); done
  echo "fuzz: linking $name (${#objs[@]} common sources)"
  # shellcheck disable=SC2086  # FLAGS and LDLIBS are lists of words
  "$CLANGXX" $FLAGS -fsanitize=fuzzer,address "$(obj_of "$target")" "${objs[@]}" -o "$out/$name" $LDLIBS
done

# run_target NAME: runs a linked fuzzer on its corpus (seeded from tests/fuzz/corpus/); output and
# exit status go to $out/NAME.log and $out/NAME.rc.
run_target() {
  local name=$1 corpus=$out/corpus/$1 seeds=tests/fuzz/corpus/${1%_fuzz} rc=0
  rm -f "$out/$name.rc"
  mkdir -p "$corpus"
  if [ -d "$seeds" ]; then cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true; fi
  echo "fuzz: running $name for ${FUZZ_SECONDS}s"
  "$out/$name" -max_total_time="$FUZZ_SECONDS" -artifact_prefix="$out/crashes/$name-" \
    -print_final_stats=1 "$corpus" > "$out/$name.log" 2>&1 || rc=$?
  echo "$rc" > "$out/$name.rc"
}
names=()
for target in "$@"; do names+=("$(basename "$target" .cpp)"); done
export FUZZ_SECONDS
export -f run_target
printf '%s\n' "${names[@]}" | xargs -P "$jobs" -I{} bash -c 'run_target "$1"' _ {}

status=0
for name in "${names[@]}"; do
  echo "fuzz: $name:"
  cat "$out/$name.log"
  if [ "$(cat "$out/$name.rc" 2>/dev/null)" != 0 ]; then
    echo "fuzz: $name FAILED (artifacts in $out/crashes/)" >&2
    status=1
  fi
done
exit $status
