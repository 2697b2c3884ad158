#!/bin/sh
# A real single-node Slurm cluster on loopback, in a private folder, for
# tests and demos of `npusweep --engine slurm` (Debian 12: slurmctld, slurmd,
# slurm-client, munge; run as root, no systemd needed).
#
#   tools/npusweep/slurm_local.sh start DIR   # prints `export SLURM_CONF=DIR/slurm.conf`
#   tools/npusweep/slurm_local.sh stop DIR    # stops slurmd, slurmctld, munged (by their pid files)
#
# munged gets its own 1 KiB key and socket (AuthInfo=socket=... tells Slurm);
# slurmctld and slurmd run in the foreground (-D) on non-default ports with
# state, spool, pid and log files under DIR. Nothing outside DIR is touched.
set -u
cmd=${1:-}
D=${2:-}
[ -n "$cmd" ] && [ -n "$D" ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
mkdir -p "$D"
D=$(cd "$D" && pwd)

stop_pid() { # the daemon whose pid file is $1, then wait for it to go
    [ -f "$1" ] || return 0
    p=$(cat "$1" 2>/dev/null)
    [ -n "$p" ] && kill "$p" 2>/dev/null
    for _ in 1 2 3 4 5 6 7 8 9 10; do kill -0 "$p" 2>/dev/null || break; sleep 0.5; done
    kill -9 "$p" 2>/dev/null
    rm -f "$1"
}

if [ "$cmd" = stop ]; then
    stop_pid "$D/run/slurmd.pid"
    stop_pid "$D/run/slurmctld.pid"
    stop_pid "$D/run/munged.pid"
    exit 0
fi
[ "$cmd" = start ] || { echo "usage: $0 start|stop DIR" >&2; exit 2; }
for t in munged slurmctld slurmd sbatch sinfo; do
    command -v $t >/dev/null 2>&1 || [ -x /usr/sbin/$t ] ||
        { echo "slurm_local: $t not found (apt-get install slurmctld slurmd slurm-client munge)" >&2; exit 1; }
done
[ "$(id -u)" = 0 ] || { echo "slurm_local: must run as root (SlurmUser=root)" >&2; exit 1; }
PATH=$PATH:/usr/sbin
mkdir -p "$D/munge" "$D/state" "$D/spool" "$D/log" "$D/run"
chmod 700 "$D/munge" "$D/run"
if [ ! -f "$D/munge/munge.key" ]; then
    dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 2>/dev/null
    chmod 400 "$D/munge/munge.key"
fi
munged --key-file="$D/munge/munge.key" --socket="$D/munge/munge.socket" --pid-file="$D/run/munged.pid" \
    --log-file="$D/log/munged.log" --seed-file="$D/munge/munge.seed" -f --force ||
    { echo "slurm_local: munged did not start (see $D/log/munged.log)" >&2; exit 1; }
host=$(hostname -s)
# ports from the folder's name, so two clusters (two test runs) do not collide
base=$((17000 + $(printf '%s' "$D" | cksum | cut -d' ' -f1) % 1000 * 2))
cat > "$D/slurm.conf" <<EOF
ClusterName=npusweep
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$base
SlurmdPort=$((base + 1))
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$D/munge/munge.socket
StateSaveLocation=$D/state
SlurmdSpoolDir=$D/spool
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SchedulerType=sched/backfill
MaxArraySize=10001
NodeName=$host NodeAddr=127.0.0.1 CPUs=$(nproc) State=UNKNOWN
PartitionName=sweep Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF="$D/slurm.conf"
# -D: foreground; the pid files say whom to stop
nohup slurmctld -D -f "$SLURM_CONF" >"$D/log/slurmctld.out" 2>&1 &
sleep 1
nohup slurmd -D -f "$SLURM_CONF" >"$D/log/slurmd.out" 2>&1 &
for _ in $(seq 1 60); do
    state=$(sinfo -h -o %T 2>/dev/null | head -1)
    case "$state" in idle*|mix*|alloc*) echo "export SLURM_CONF=$SLURM_CONF"; exit 0 ;; esac
    sleep 0.5
done
echo "slurm_local: the node did not come up (sinfo: ${state:-nothing}); logs in $D/log" >&2
exit 1
