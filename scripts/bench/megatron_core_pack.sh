#!/usr/bin/env bash
# Packs the Megatron-core reference for the device hosts (no network there) into one small
# tarball: a Megatron-LM snapshot's megatron/, pretrain_gpt.py, gpt_builders.py and
# model_provider.py, pybind11's headers (the dataset index helpers are compiled on first use and
# the hosts' Python may lack pybind11) and the snapshot's commit in MEGATRON_COMMIT. One change to
# the snapshot: compile_helpers() does nothing when the helpers were already built, which
# scripts/bench/megatron_core_run.sh does before torchrun (Megatron's own step runs `make` with
# `python3 -m pybind11`, absent there).
#   bash scripts/bench/megatron_core_pack.sh /work/.mirror/NVIDIA+Megatron-LM/repo .e2e/megatron-core.tar.gz
# GIT_DIR: a bare clone or mirror of NVIDIA/Megatron-LM; REF (default HEAD). PYBIND11_INCLUDE:
# the folder holding pybind11/ (default /usr/include: Debian's pybind11-dev).
set -euo pipefail
[[ $# == 2 ]] || { echo "usage: megatron_core_pack.sh GIT_DIR OUT.tar.gz" >&2; exit 2; }
git_dir=$1 out=$2
ref=${REF:-HEAD}
inc=${PYBIND11_INCLUDE:-/usr/include}
[[ -f $inc/pybind11/pybind11.h ]] ||
  { echo "megatron_core_pack.sh: no $inc/pybind11/pybind11.h (apt-get install pybind11-dev)" >&2; exit 1; }
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
mkdir -p "$work/megatron-core"
git --git-dir="$git_dir" archive "$ref" megatron pretrain_gpt.py gpt_builders.py model_provider.py |
  tar -x -C "$work/megatron-core"
git --git-dir="$git_dir" rev-parse "$ref" > "$work/megatron-core/MEGATRON_COMMIT"
# helpers.cpp includes <pybind11/pybind11.h>: the folder on the include path holds pybind11/.
mkdir -p "$work/megatron-core/pybind11_include"
cp -r "$inc/pybind11" "$work/megatron-core/pybind11_include/"
python3 - "$work/megatron-core/megatron/core/datasets/utils.py" <<'PY'
import sys
p = sys.argv[1]
s = open(p).read()
old = '    """Compile C++ helper functions at runtime. Make sure this is invoked on a single process."""\n'
assert old in s, "compile_helpers() not found: the snapshot changed"
new = old + ('    try:  # built by megatron_core_run.sh before the job started\n'
             '        from megatron.core.datasets import helpers_cpp  # noqa: F401\n'
             '        return\n'
             '    except ImportError:\n'
             '        pass\n')
open(p, "w").write(s.replace(old, new, 1))
PY
mkdir -p "$(dirname "$out")"
tar -C "$work" -czf "$out.tmp" megatron-core
mv "$out.tmp" "$out"
echo "$out: $(du -h "$out" | cut -f1), Megatron-LM $(cat "$work/megatron-core/MEGATRON_COMMIT")"
