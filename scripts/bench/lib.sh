# Helpers for benchmark scripts: timing, peak memory, MB/s and ratios (sourced).
BIN=${BIN:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)/build/bin}
ROOT=$(cd "$(dirname "${BASH_SOURCE[0]}")/../.." && pwd)
WORK=${BENCH_WORK:-$(mktemp -d /tmp/suite-bench.XXXXXX)}

# measure NAME cmd...: runs cmd (a string, through bash) REPEAT times (default 3), keeps the best wall
# time and its peak RSS; sets LAST_SECONDS and LAST_RSS_MB.
measure() {
  local name=$1; shift
  local best="" rss=0 i
  for ((i = 0; i < ${REPEAT:-3}; i++)); do
    /usr/bin/time -f '%e %M' -o "$WORK/time.txt" bash -c "$*" || { echo "bench: '$name' failed" >&2; return 1; }
    read -r t m < <(tail -1 "$WORK/time.txt")
    if [[ -z $best ]] || awk -v a="$t" -v b="$best" 'BEGIN{exit !(a<b)}'; then best=$t; rss=$((m / 1024)); fi
  done
  LAST_SECONDS=$best
  LAST_RSS_MB=$rss
}

mbps() { awk -v b="$1" -v s="$2" 'BEGIN{ if (s <= 0) s = 0.001; printf "%.1f", b / s / 1e6 }'; }
ratio() { awk -v a="$1" -v b="$2" 'BEGIN{ if (b <= 0) b = 0.001; printf "%.2f", a / b }'; }
machine() { echo "$(nproc) cores, $(awk '/model name/{$1=$2=$3=""; print; exit}' /proc/cpuinfo | xargs), $(free -g | awk '/Mem:/{print $2}') GiB"; }
