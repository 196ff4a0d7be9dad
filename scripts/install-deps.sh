#!/usr/bin/env bash
# Installs the Debian packages the suite builds and tests with, only those that are missing,
# and reports whether the CUDA toolkit (nvcc, cuBLAS, NCCL) was found.
# Run by `make deps`, on which `make test` and `make demo` depend.
set -euo pipefail

# Build and run-time libraries, plus what the tests and the demo use.
PACKAGES=(
  g++ make pkg-config git
  libsimdjson-dev libicu-dev libre2-dev libxxhash-dev libzstd-dev liblzma-dev libbz2-dev zlib1g-dev
  libgumbo-dev libcld2-dev libboost-program-options-dev doctest-dev
  libyaml-cpp-dev
  zstd xz-utils bzip2 time python3 python3-numpy
  # tests/e2e/test_fault_injection.sh: kills at each rename (strace -e inject=rename:signal=SIGKILL)
  strace
  # TensorBoard events read back by an independent reader; gpt-report tested in a headless browser
  protobuf-compiler python3-protobuf chromium
  # libFuzzer targets (tests/fuzz), run for a bounded time by CI
  clang libclang-rt-14-dev
  # the two-"host" test of the distributed runtime (network namespaces, tests/e2e/test_dist_netns.sh)
  iproute2
  # tests/slurm: a private single-host Slurm (daemons started by the tests, not by systemd)
  slurmctld slurmd slurm-client munge
  # test data: the language-identification test set of scrape-filter (free-licence fortune files)
  fortunes fortunes-de fortunes-es fortunes-ru fortunes-zh
)

missing=()
for p in "${PACKAGES[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
# tests/e2e/test_bpe_differential.sh: node + npm fetch the tokenizer oracles. Checked by command,
# not package: a NodeSource nodejs ships npm itself and conflicts with Debian's npm package.
command -v node >/dev/null || missing+=(nodejs)
command -v npm >/dev/null || missing+=(npm)

if ((${#missing[@]})); then
  echo "install-deps: missing Debian packages: ${missing[*]}"
  if [[ $(id -u) -eq 0 ]]; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    echo "install-deps: installed ${#missing[@]} package(s)"
  elif command -v sudo >/dev/null && sudo -n true 2>/dev/null; then
    sudo DEBIAN_FRONTEND=noninteractive apt-get update -qq
    sudo DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
    echo "install-deps: installed ${#missing[@]} package(s)"
  else
    echo "install-deps: not root; run this once, then try again:" >&2
    echo "  sudo apt-get install -y ${missing[*]}" >&2
    exit 1
  fi
fi

CUDA_HOME=${CUDA_HOME:-/usr/local/cuda}
nvcc=$(command -v nvcc || true)
[[ -z $nvcc && -x $CUDA_HOME/bin/nvcc ]] && nvcc=$CUDA_HOME/bin/nvcc
if [[ -n $nvcc ]]; then
  cublas=no; nccl=no
  ls "$CUDA_HOME"/lib64/libcublasLt.so* >/dev/null 2>&1 && cublas=yes
  { [[ -e $CUDA_HOME/include/nccl.h ]] || [[ -e /usr/include/nccl.h ]]; } && nccl=yes
  echo "install-deps: CUDA toolkit found: $($nvcc --version | tail -1); cuBLAS: $cublas; NCCL: $nccl"
  echo "install-deps: gpt-train is built with the cuda and cpu backends"
else
  echo "install-deps: CUDA toolkit not found (no nvcc on PATH or in $CUDA_HOME/bin):"
  echo "install-deps: gpt-train is built with the cpu backend only; every other tool is unaffected"
fi
