#!/usr/bin/env bash
# Builds each libFuzzer target given on the command line (tests/fuzz/*_fuzz.cpp) with
# `clang++ -fsanitize=fuzzer,address` and runs it for ${FUZZ_SECONDS:-30} seconds.
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
flags=(-std=c++20 -O1 -g -fno-omit-frame-pointer)

# Compiles one source into an instrumented object under $out/obj and prints the object path.
compile() {
  local src=$1 mode=$2
  local obj=$out/obj/${src//\//_}.o
  # shellcheck disable=SC2086  # CPPFLAGS is a list of words
  "$CLANGXX" "${flags[@]}" $CPPFLAGS "-fsanitize=$mode,address" -c "$src" -o "$obj"
  echo "$obj"
}

status=0
for target in "$@"; do
  name=$(basename "$target" .cpp)
  dirs=$(sed -n 's|^// fuzz-sources:||p' "$target" | head -n1)
  srcs=()
  for src in $COMMON_SRC; do
    if [ -z "$dirs" ]; then
      srcs+=("$src")
      continue
    fi
    for d in $dirs; do
      case $src in "$d"/*) srcs+=("$src"); break ;; esac
    done
  done
  echo "fuzz: building $name (${#srcs[@]} common sources)"
  objs=()
  for src in "${srcs[@]}"; do objs+=("$(compile "$src" fuzzer-no-link)"); done
  main_obj=$(compile "$target" fuzzer-no-link)
  # shellcheck disable=SC2086
  "$CLANGXX" "${flags[@]}" -fsanitize=fuzzer,address "$main_obj" "${objs[@]}" -o "$out/$name" $LDLIBS

  corpus=$out/corpus/$name
  mkdir -p "$corpus"
  seeds=tests/fuzz/corpus/${name%_fuzz}
  if [ -d "$seeds" ]; then cp -n "$seeds"/* "$corpus"/ 2>/dev/null || true; fi
  echo "fuzz: running $name for ${FUZZ_SECONDS}s"
  if ! "$out/$name" -max_total_time="$FUZZ_SECONDS" -artifact_prefix="$out/crashes/$name-" \
      -print_final_stats=1 "$corpus"; then
    echo "fuzz: $name FAILED (artifacts in $out/crashes/)" >&2
    status=1
  fi
done
exit $status
