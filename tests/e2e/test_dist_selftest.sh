# The distributed runtime (train/dist) end to end with dist-selftest ranks on this host: the
# --nproc-per-node launcher, torchrun's and srun's variables set by hand, a batch script's
# SLURM_NTASKS, and the faults: a rank that dies, a rank stopped with SIGSTOP, a different
# configuration, missing ranks, a wrong port and a port in use. Every survivor's last line names
# the rank at fault.
ST=$BIN/dist-selftest
last_line() { tail -n 1 "$1"; }

# The launcher: three ranks, each line whole, the same checksum on every rank.
"$ST" --nproc-per-node 3 --elements 20000 --iters 2 > out 2> err || { cat err; fail "launcher"; }
[[ $(grep -Ec '^rank [0-2] of 3 on .*: 2 all-reduces of 20000 floats agree, checksum ' out) == 3 ]] \
  || { cat out err; fail "three ranks should agree"; }
[[ $(sed -E 's/.*checksum //' out | sort -u | wc -l) == 1 ]] || fail "checksums differ"
grep -q 'local rank 2' out || fail "local ranks"
# Long lines from three ranks at once come out whole.
"$ST" --nproc-per-node 3 --chatter 300 --iters 1 > chat 2> err || { cat err; fail "chatter"; }
[[ $(grep -Ec '^rank [0-2] line [0-9]+: x{2000} end$' chat) == 900 ]] || fail "lines were cut"

# Signals reach every child through the launcher (once each: the children have their own group).
"$ST" --nproc-per-node 3 --wait-signal > sig 2> err &
launcher=$!
for i in $(seq 600); do [[ $(grep -c ready sig) == 3 ]] && break; sleep 0.1; done
kill -USR1 $launcher
wait $launcher || { cat sig err; fail "launcher after SIGUSR1"; }
[[ $(grep -c 'got User defined signal 1' sig) == 3 ]] || { cat sig err; fail "SIGUSR1 forwarded"; }

# A failing child: the launcher stops the others and exits with the first failure's status (rank
# 2's 3; or 1 when a survivor that named it exited before the launcher saw rank 2 go).
rc=0; "$ST" --nproc-per-node 3 --fault exit --fault-rank 2 --timeout-s 20 > f.out 2> f.err || rc=$?
[[ $rc == 3 || $rc == 1 ]] || { cat f.err; fail "launcher exited $rc after a failing child"; }
# Refused inside a launched rank.
RANK=0 WORLD_SIZE=2 expect_exit 2 "$ST" --nproc-per-node 2
expect_stderr '^dist-selftest: --nproc-per-node is refused here: RANK=0 is set'

# torchrun's variables by hand.
port=$(free_port)
for r in 0 1; do
  RANK=$r WORLD_SIZE=2 LOCAL_RANK=$r LOCAL_WORLD_SIZE=2 MASTER_ADDR=127.0.0.1 MASTER_PORT=$port \
    "$ST" > tr$r 2>&1 &
done
wait
[[ $(cat tr0 tr1 | grep -c 'agree') == 2 ]] || { cat tr0 tr1; fail "torchrun variables"; }

# An srun step's variables by hand: MASTER_ADDR from the node list, port 61000 + job id % 4536.
job=$((RANDOM % 4536))
for r in 0 1; do
  SLURM_STEP_ID=0 SLURM_PROCID=$r SLURM_STEP_NUM_TASKS=2 SLURM_LOCALID=$r SLURM_JOB_ID=$job \
    SLURM_STEP_NODELIST='localhost,otherhost[01-02]' "$ST" > sl$r 2>&1 &
done
wait
grep -q "store localhost:$((61000 + job))" sl0 || { cat sl0 sl1; fail "srun variables"; }
[[ $(cat sl0 sl1 | grep -c 'agree') == 2 ]] || { cat sl0 sl1; fail "srun step"; }

# A batch script with SLURM_NTASKS=8 but no srun step: one process, and it says why.
SLURM_NTASKS=8 SLURM_JOB_ID=5 "$ST" > one 2> err
grep -q 'rank 0 of 1' one || fail "batch script: one process"
grep -q 'SLURM_NTASKS=8 but this is not an srun step' err || { cat err; fail "batch note"; }

# A rank that dies: the survivors' last line names it; they exit 1.
port=$(free_port)
for r in 0 1 2; do
  "$ST" --rank $r --world-size 3 --master-port $port --host h$r --fault exit --timeout-s 20 \
    > d$r.out 2> d$r.err &
  pids[$r]=$!
done
for r in 0 2; do
  rc=0; wait ${pids[$r]} || rc=$?
  [[ $rc == 1 ]] || { cat d$r.err; fail "survivor $r exited $rc"; }
  [[ $(last_line d$r.err) == "dist-selftest: rank 1 (host h1): died" ]] || { cat d$r.err; fail "died line"; }
done
wait

# A rank stopped with SIGSTOP: named as late for the collective it did not reach; rank 0 too (it
# serves the store, which then stops answering).
for stopped in 1 0; do
  port=$(free_port)
  for r in 0 1 2; do
    "$ST" --rank $r --world-size 3 --master-port $port --host h$r --fault stop \
      --fault-rank $stopped --timeout-s 2 > s$r.out 2> s$r.err &
    pids[$r]=$!
  done
  for r in 0 1 2; do
    [[ $r == "$stopped" ]] && continue
    rc=0; wait ${pids[$r]} || rc=$?
    [[ $rc == 1 ]] || { cat s$r.err; fail "survivor $r exited $rc"; }
    [[ $(last_line s$r.err) == "dist-selftest: rank $stopped (host h$stopped): did not reach all_reduce #4 within 2 s" ]] \
      || { cat s$r.err; fail "late line"; }
  done
  kill -KILL ${pids[$stopped]}; wait ${pids[$stopped]} || true
done

# A rank started with another configuration is refused, naming the option.
port=$(free_port)
"$ST" --rank 0 --world-size 2 --master-port $port --host h0 > c0 2>&1 &
p0=$!
rc=0; "$ST" --rank 1 --world-size 2 --master-port $port --host h1 --hidden-size 96 > c1 2>&1 || rc=$?
wait $p0 && fail "rank 0 accepted another configuration"
[[ $rc == 1 ]] || fail "rank 1 exited $rc"
for f in c0 c1; do
  grep -qx "dist-selftest: rank 1 (host h1) runs with a configuration that differs from rank 0's: hidden-size=96 (rank 0: 64)" $f \
    || { cat $f; fail "configuration refusal"; }
done

# Missing ranks are named with the address; a port nobody serves is an unreachable rendezvous.
port=$(free_port)
for r in 0 1; do "$ST" --rank $r --world-size 4 --master-port $port --timeout-s 2 > m$r 2>&1 & done
wait || true
for r in 0 1; do
  grep -qx "dist-selftest: ranks 2, 3 did not arrive at the rendezvous at 127.0.0.1:$port within 2 s" m$r \
    || { cat m$r; fail "missing ranks"; }
done
port=$(free_port)
expect_exit 1 "$ST" --rank 1 --world-size 2 --master-port $port --timeout-s 1
expect_stderr "^dist-selftest: cannot reach the rendezvous at 127.0.0.1:$port after 1 s .*rank 0 serves it and did not arrive"

# A port in use: a second rank 0 on the port of a running job.
port=$(free_port)
"$ST" --rank 0 --world-size 2 --master-port $port --timeout-s 20 > u0 2>&1 &
p0=$!
for i in $(seq 50); do python3 -c "import socket; socket.create_connection(('127.0.0.1', $port))" 2>/dev/null && break; sleep 0.1; done
expect_exit 1 "$ST" --rank 0 --world-size 2 --master-port $port --timeout-s 1
expect_stderr "^dist-selftest: port $port at 127.0.0.1 is in use"
"$ST" --rank 1 --world-size 2 --master-port $port --timeout-s 20 > u1 2>&1
wait $p0 || { cat u0; fail "the first job failed"; }
