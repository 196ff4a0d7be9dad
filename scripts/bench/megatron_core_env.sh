# shellcheck shell=bash
# Sourced by the scripts that run Megatron-core itself (megatron_core_run.sh,
# megatron_import_check.sh): unpacks the snapshot megatron_core_pack.sh made, checks the Python
# packages pretrain_gpt.py imports, builds its dataset index helpers, and names the flags these
# hosts need (../shared/specs/distributed-training.md section 10: --transformer-impl local and the
# fused kernels off; CUDA_DEVICE_MAX_CONNECTIONS=1; NVLink multicast off).
#   megatron_core_setup NAME TARBALL DIR   (NAME: the calling script's, for its messages)
# sets mc (the unpacked snapshot, pretrain_gpt.py in it), PY and TORCHRUN, and prints the
# snapshot's commit and torch's version. Env: PYTHON (python3 with torch; torchrun beside it,
# else on PATH), CXX.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export CUDA_DEVICE_MAX_CONNECTIONS=1

# shellcheck disable=SC2034  # used by the scripts that source this file
megatron_local_flags=(--transformer-impl local --no-persist-layer-norm --no-masked-softmax-fusion
                      --no-bias-gelu-fusion --no-bias-dropout-fusion --no-gradient-accumulation-fusion)

megatron_core_setup() {
  local name=$1 tarball=$2 dir=$3
  [[ -f $tarball ]] || { echo "$name: no $tarball (megatron_core_pack.sh makes it)" >&2; return 1; }
  PY=${PYTHON:-python3}
  TORCHRUN=$(dirname "$(command -v "$PY" || echo /nonexistent/python3)")/torchrun
  [[ -x $TORCHRUN ]] || TORCHRUN=torchrun
  tar -xzf "$tarball" -C "$dir" || { echo "$name: cannot unpack $tarball" >&2; return 1; }
  mc=$dir/megatron-core
  echo "Megatron-LM $(cat "$mc/MEGATRON_COMMIT"), $("$PY" -c 'import torch; print("torch", torch.__version__)')"

  # The Python packages pretrain_gpt.py imports at start-up (torch aside).
  local missing
  missing=$("$PY" - <<'PY'
import importlib.util
need = ["numpy", "packaging", "typing_extensions", "triton"]
print(" ".join(m for m in need if importlib.util.find_spec(m) is None))
PY
)
  [[ -z $missing ]] || { echo "$name: $PY lacks the Python package(s): $missing" >&2; return 1; }

  # The dataset index helpers (C++, pybind11), built once for this Python.
  local ds=$mc/megatron/core/datasets suffix pyinc
  suffix=$("$PY" -c 'import sysconfig; print(sysconfig.get_config_var("EXT_SUFFIX"))')
  pyinc=$("$PY" -c 'import sysconfig; print(sysconfig.get_paths()["include"])')
  if [[ ! -f $ds/helpers_cpp$suffix ]]; then
    [[ -f $pyinc/Python.h ]] || { echo "$name: no Python.h in $pyinc (the helpers need it)" >&2; return 1; }
    ${CXX:-g++} -O3 -Wall -shared -std=c++17 -fPIC -I"$mc/pybind11_include" -I"$pyinc" \
      "$ds/helpers.cpp" -o "$ds/helpers_cpp$suffix" ||
      { echo "$name: building the dataset helpers failed" >&2; return 1; }
  fi
}
