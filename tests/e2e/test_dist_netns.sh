# Two ranks on two "hosts": network namespaces joined by a veth pair (10.200.0.1 and 10.200.0.2,
# private to the namespaces this test creates), each with its own host name, started with an srun
# step's variables so that MASTER_ADDR comes from the Slurm node list "gptnode[1-2]". Exercises the
# rendezvous, the TCP communicator's mesh and the watchdog across distinct addresses, not loopback.
# Needs root and iproute2; skipped with the reason otherwise.
ST=$BIN/dist-selftest
if ! command -v ip > /dev/null || ! command -v unshare > /dev/null; then
  echo "SKIP: iproute2 (ip) or util-linux (unshare) is not installed"; exit 0
fi
ns0=gptd$$a ns1=gptd$$b
if ! ip netns add $ns0 2> netns.err; then
  echo "SKIP: ip netns is not permitted here: $(head -1 netns.err)"; exit 0
fi
cleanup() {
  ip netns del $ns0 2> /dev/null || true
  ip netns del $ns1 2> /dev/null || true
  rm -rf /etc/netns/$ns0 /etc/netns/$ns1
}
trap cleanup EXIT
ip netns add $ns1
ip link add gd$$a type veth peer name gd$$b
ip link set gd$$a netns $ns0
ip link set gd$$b netns $ns1
ip -n $ns0 addr add 10.200.0.1/24 dev gd$$a
ip -n $ns1 addr add 10.200.0.2/24 dev gd$$b
for ns in $ns0 $ns1; do
  ip -n $ns link set lo up
  # `ip netns exec` shows /etc/netns/NS/hosts as /etc/hosts: the node names resolve there.
  mkdir -p /etc/netns/$ns
  printf '127.0.0.1 localhost\n10.200.0.1 gptnode1\n10.200.0.2 gptnode2\n' > /etc/netns/$ns/hosts
done
ip -n $ns0 link set gd$$a up
ip -n $ns1 link set gd$$b up

# on_host NS NAME RANK cmd...: runs cmd in namespace NS with host name NAME as task RANK of a
# two-task srun step.
on_host() {
  local ns=$1 name=$2 rank=$3; shift 3
  ip netns exec $ns unshare --uts sh -c 'hostname "$0"; exec "$@"' "$name" \
    env SLURM_STEP_ID=0 SLURM_PROCID=$rank SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=0 \
        SLURM_JOB_ID=$job SLURM_STEP_NODELIST='gptnode[1-2]' SLURM_STEP_TASKS_PER_NODE='1(x2)' \
        SLURM_NODEID=$rank "$@"
}

job=$((RANDOM % 4536))
on_host $ns0 gptnode1 0 "$ST" --elements 50000 --iters 3 --timeout-s 30 > r0 2>&1 &
p0=$!
on_host $ns1 gptnode2 1 "$ST" --elements 50000 --iters 3 --timeout-s 30 > r1 2>&1 \
  || { cat r0 r1; fail "rank 1 in $ns1"; }
wait $p0 || { cat r0 r1; fail "rank 0 in $ns0"; }
grep -q "^rank 0 of 2 on gptnode1 (local rank 0, store gptnode1:$((61000 + job))): 3 all-reduces of 50000 floats agree" r0 \
  || { cat r0; fail "rank 0's line"; }
grep -q "^rank 1 of 2 on gptnode2 (local rank 0, store gptnode1:$((61000 + job))): 3 all-reduces" r1 \
  || { cat r1; fail "rank 1's line"; }
[[ $(sed -E 's/.*checksum //' r0) == $(sed -E 's/.*checksum //' r1) ]] || fail "checksums differ"

# Across hosts too, a rank that dies is named by the survivor.
job=$(((job + 1) % 4536))
on_host $ns0 gptnode1 0 "$ST" --fault exit --timeout-s 30 > f0.out 2> f0.err &
p0=$!
on_host $ns1 gptnode2 1 "$ST" --fault exit --timeout-s 30 > f1.out 2> f1.err || true
rc=0; wait $p0 || rc=$?
[[ $rc == 1 && $(tail -n 1 f0.err) == "dist-selftest: rank 1 (host gptnode2): died" ]] \
  || { cat f0.err; fail "the dead rank across hosts (exit $rc)"; }
