# A private single-host Slurm (munged, slurmctld, slurmd) for the tests, configured under a scratch
# folder and run inside its own PID namespace, so that stopping it also ends every job process that
# slurmstepd would otherwise keep alive after the daemons are gone. Sourced by run.sh.
#   cluster_start DIR   writes DIR/slurm.conf, starts the daemons, waits until the node is idle,
#                       and exports SLURM_CONF (every client and job finds the cluster through it)
#   cluster_stop        cancels every job, shuts the daemons down, ends the namespace and checks
#                       with ps that none of its processes is left

# Free TCP ports for slurmctld, slurmd and the fake nodes, so that two clusters can run side by side.
free_ports() {
  python3 -c '
import socket
ss = [socket.socket() for _ in range(3)]
for s in ss: s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in ss))'
}

# Runs inside the namespace: starts munged, slurmctld and slurmd (each daemonizes), then stays as the
# namespace's init, reaping orphans, until it is killed.
cluster_daemons() {
  local d=$1
  mungekey -c -k "$d/munge/munge.key" 2>/dev/null
  chmod 600 "$d/munge/munge.key"
  munged --socket="$d/munge/munge.socket.2" --key-file="$d/munge/munge.key" \
    --pid-file="$d/munge/munged.pid" --log-file="$d/munge/munged.log" --seed-file="$d/munge/munged.seed" \
    || exit 1
  slurmctld -f "$d/slurm.conf" || exit 1
  slurmd -f "$d/slurm.conf" || exit 1
  while :; do sleep 1; done
}

cluster_start() {
  CLUSTER_DIR=$1
  local d=$1 host ports here
  here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
  host=$(hostname -s)
  mkdir -p "$d/munge" "$d/state" "$d/spool/$host" "$d/log" "$d/run"
  # munged wants g+x and o+x on every directory above its socket (mktemp -d makes 700 ones).
  local p=$d
  while [[ $p != / ]]; do [[ -O $p ]] && chmod go+x "$p"; p=$(dirname "$p"); done
  read -r -a ports <<< "$(free_ports)"
  sed "s|@HOST@|$host|g; s|@D@|$d|g; s|@CTLD_PORT@|${ports[0]}|; s|@SLURMD_PORT@|${ports[1]}|;
       s|@FAKE_PORT@|${ports[2]}|g" "$here/slurm.conf.in" > "$d/slurm.conf"
  export SLURM_CONF=$d/slurm.conf
  unshare --pid --fork --mount-proc --kill-child \
    bash -c "source '$here/cluster.sh'; cluster_daemons '$d'" > "$d/log/daemons.out" 2>&1 &
  CLUSTER_NS_PID=$!
  local i st=
  for i in $(seq 300); do
    kill -0 "$CLUSTER_NS_PID" 2>/dev/null || break  # a daemon did not start
    st=$(timeout 5 sinfo -h -n "$host" -o %T 2>/dev/null || true)
    [[ $st == idle ]] && break
    sleep 0.1
  done
  # The namespace is known by its init process (the unshare child), recorded to check the stop.
  CLUSTER_NS=$(readlink "/proc/$(pgrep -P "$CLUSTER_NS_PID" | head -1)/ns/pid" 2>/dev/null || true)
  if [[ $st != idle ]]; then
    echo "cluster: node $host is '${st:-unknown}', not idle; logs:" >&2
    tail -n 20 "$d"/log/*.log "$d"/log/daemons.out "$d/munge/munged.log" >&2 2>/dev/null
    cluster_stop
    return 1
  fi
}

# Processes still in the cluster's PID namespace.
cluster_processes() {
  local p
  [[ -n ${CLUSTER_NS:-} ]] || return 0
  for p in /proc/[0-9]*; do
    [[ $(readlink "$p/ns/pid" 2>/dev/null) == "$CLUSTER_NS" ]] && echo "${p#/proc/}"
  done
  return 0
}

cluster_stop() {
  local i ids
  [[ -n ${CLUSTER_NS_PID:-} ]] || return 0
  if kill -0 "$CLUSTER_NS_PID" 2>/dev/null; then
    ids=$(timeout 10 squeue -h -o %A 2>/dev/null || true)
    # shellcheck disable=SC2086  # a list of job ids
    [[ -n $ids ]] && timeout 10 scancel $ids 2>/dev/null
    for i in $(seq 100); do
      [[ -z $(timeout 10 squeue -h -o %A 2>/dev/null) && -z $(find "$CLUSTER_DIR/spool" -type s) ]] && break
      sleep 0.1
    done
    timeout 10 scontrol shutdown >/dev/null 2>&1 || true
  fi
  # unshare ignores SIGTERM; SIGKILL makes the kernel end everything left in the namespace.
  kill -KILL "$CLUSTER_NS_PID" 2>/dev/null || true
  wait "$CLUSTER_NS_PID" 2>/dev/null || true
  for i in $(seq 100); do [[ -z $(cluster_processes) ]] && break; sleep 0.05; done
  local left
  left=$(cluster_processes)
  CLUSTER_NS_PID=
  if [[ -n $left ]]; then
    echo "cluster: processes left running after the stop:" >&2
    # shellcheck disable=SC2086
    ps -o pid,args -p $left >&2
    return 1
  fi
}
