#!/usr/bin/env bash
# A one-node SLURM cluster on this machine, for testing profiles/slurm for real
# (tests/workflow/test_slurm.py). Needs root and Debian/Ubuntu (apt-get); no systemd needed.
#
#   bash scripts/slurm_one_node.sh start    install slurm-wlm + munge if missing, write the config,
#                                           start munged, slurmctld and slurmd, wait for the node
#   bash scripts/slurm_one_node.sh status   sinfo, and the daemons' pids
#   bash scripts/slurm_one_node.sh logs     tails of the daemons' logs
#   bash scripts/slurm_one_node.sh stop     stop the daemons this script started
#
# Idempotent: 'start' on a running cluster only checks it (and resumes a drained node).
# It writes /etc/slurm/slurm.conf only if there is none or the one there was written by this
# script: on a machine with a real SLURM configuration it refuses to touch anything.
# Accounting is off (no slurmdbd): 'sacct' does not work here, so Snakemake must query job
# states with squeue (--slurm-status-command squeue); finished jobs stay visible to squeue
# and 'scontrol show job' for MinJobAge (1 h), and every finished job is also appended to
# the job-completion log (JobCompLoc below).
set -euo pipefail

STATE=${ATLAS_SLURM_STATE:-/var/lib/atlas-slurm}
LOGS=${ATLAS_SLURM_LOGS:-/var/log/atlas-slurm}
RUN=/run/atlas-slurm
CONF=/etc/slurm/slurm.conf
MARK="# written by attention-atlas scripts/slurm_one_node.sh"
HOST=$(hostname -s)
MEM_MARGIN_MB=${ATLAS_SLURM_MEM_MARGIN_MB:-2048}
WAIT_S=${ATLAS_SLURM_WAIT_S:-120}

say() { echo "slurm_one_node: $*" >&2; }
die() { say "error: $*"; exit 1; }

need_root() {
    [ "$(id -u)" -eq 0 ] || die "must run as root (it installs packages and starts daemons)"
}

alive() {  # alive PIDFILE: the pid in PIDFILE is a running process
    [ -s "$1" ] && kill -0 "$(cat "$1")" 2>/dev/null
}

install_packages() {
    local missing=()
    command -v sbatch >/dev/null && command -v slurmctld >/dev/null && command -v slurmd >/dev/null \
        || missing+=(slurm-wlm)
    command -v munged >/dev/null || missing+=(munge)
    [ ${#missing[@]} -eq 0 ] && return 0
    command -v apt-get >/dev/null || die "${missing[*]} missing and no apt-get to install them"
    say "installing ${missing[*]} (apt-get)"
    export DEBIAN_FRONTEND=noninteractive
    # Package scripts must not try to start services (no systemd here; we start them below).
    local policy=/usr/sbin/policy-rc.d created_policy=0
    if [ ! -e "$policy" ]; then
        printf '#!/bin/sh\nexit 101\n' >"$policy"
        chmod +x "$policy"
        created_policy=1
    fi
    apt-get update -q >"$LOGS/apt.log" 2>&1 || { tail -20 "$LOGS/apt.log" >&2; die "apt-get update failed"; }
    apt-get install -y -q --no-install-recommends "${missing[@]}" >>"$LOGS/apt.log" 2>&1 \
        || { [ $created_policy -eq 1 ] && rm -f "$policy"; tail -20 "$LOGS/apt.log" >&2; die "apt-get install failed"; }
    [ $created_policy -eq 1 ] && rm -f "$policy"
    command -v sbatch >/dev/null && command -v munged >/dev/null || die "install finished but sbatch/munged missing"
}

write_config() {
    if [ -e "$CONF" ] && ! grep -qF "$MARK" "$CONF"; then
        die "$CONF exists and was not written by this script: this machine has a real SLURM setup; not touching it"
    fi
    local cpus mem_kb mem_mb
    cpus=$(nproc)
    mem_kb=$(awk '/^MemTotal:/ {print $2}' /proc/meminfo)
    mem_mb=$(( mem_kb / 1024 - MEM_MARGIN_MB ))
    [ "$mem_mb" -gt 1024 ] || die "too little memory: MemTotal ${mem_kb} kB"
    mkdir -p /etc/slurm "$STATE/ctld" "$STATE/d" "$LOGS" "$RUN"
    local tmp
    tmp=$(mktemp "$CONF.XXXXXX")
    cat >"$tmp" <<EOF
$MARK
# One node ($HOST) that is controller and compute node; no cgroups, no accounting, no GPUs.
ClusterName=atlas
SlurmctldHost=$HOST(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
StateSaveLocation=$STATE/ctld
SlurmdSpoolDir=$STATE/d
SlurmctldPidFile=$RUN/slurmctld.pid
SlurmdPidFile=$RUN/slurmd.pid
SlurmctldLogFile=$LOGS/slurmctld.log
SlurmdLogFile=$LOGS/slurmd.log
SlurmctldDebug=info
SlurmdDebug=info
# No cgroups: processes are tracked by parent pid, tasks are not confined.
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=$LOGS/jobcomp.log
MpiDefault=none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core_Memory
ReturnToService=2
MinJobAge=3600
SlurmctldTimeout=60
SlurmdTimeout=60
InactiveLimit=0
KillWait=10
NodeName=$HOST NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=debug Nodes=$HOST Default=YES MaxTime=INFINITE State=UP
EOF
    if [ -e "$CONF" ] && cmp -s "$tmp" "$CONF"; then
        rm -f "$tmp"
    else
        mv "$tmp" "$CONF"
        chmod 644 "$CONF"
        say "wrote $CONF (node $HOST: CPUs=$cpus RealMemory=${mem_mb} MB, partition debug)"
        # A running controller must re-read a changed config.
        alive "$RUN/slurmctld.pid" && scontrol reconfigure >/dev/null 2>&1 || true
    fi
}

start_munge() {
    if munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
        return 0  # a munged is running and works (ours or the system's)
    fi
    id munge >/dev/null 2>&1 || die "no user 'munge' (the munge package creates it)"
    mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
    if [ ! -s /etc/munge/munge.key ]; then
        say "creating /etc/munge/munge.key"
        if command -v mungekey >/dev/null; then
            mungekey --create --keyfile=/etc/munge/munge.key
        else
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
        fi
    fi
    chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
    chmod 0700 /etc/munge /var/lib/munge /var/log/munge
    chmod 0755 /run/munge
    chmod 0400 /etc/munge/munge.key
    say "starting munged"
    runuser -u munge -- /usr/sbin/munged
    touch "$STATE/munged.ours"  # stop ends only a munged that this script started
    for _ in $(seq 20); do
        munge -n 2>/dev/null | unmunge >/dev/null 2>&1 && return 0
        sleep 0.5
    done
    die "munged does not answer (see /var/log/munge/munged.log)"
}

start_daemon() {  # start_daemon NAME: slurmctld or slurmd, as a daemon, unless running
    local name=$1
    if alive "$RUN/$name.pid"; then
        return 0
    fi
    say "starting $name"
    "/usr/sbin/$name" || { tail -20 "$LOGS/$name.log" >&2 || true; die "$name did not start"; }
}

wait_idle() {
    local state=""
    for _ in $(seq "$WAIT_S"); do
        state=$(sinfo -h -n "$HOST" -o %t 2>/dev/null | head -1 || true)
        case "$state" in
            idle|mix|alloc|comp) say "node $HOST is $state; partition debug is up"; return 0 ;;
            drain*|down*|drng|fail*)
                scontrol update NodeName="$HOST" State=RESUME >/dev/null 2>&1 || true ;;
        esac
        sleep 1
    done
    say "node $HOST did not become idle within ${WAIT_S}s (state: '${state:-no answer}')"
    tail -20 "$LOGS/slurmctld.log" "$LOGS/slurmd.log" >&2 || true
    exit 1
}

start() {
    need_root
    mkdir -p "$STATE" "$LOGS" "$RUN"
    install_packages
    write_config
    start_munge
    start_daemon slurmctld
    for _ in $(seq 30); do scontrol ping >/dev/null 2>&1 && break; sleep 1; done
    start_daemon slurmd
    wait_idle
}

stop_daemon() {  # stop_daemon PIDFILE NAME
    local pidfile=$1 name=$2 pid
    alive "$pidfile" || { rm -f "$pidfile"; return 0; }
    pid=$(cat "$pidfile")
    say "stopping $name (pid $pid)"
    kill "$pid"
    for _ in $(seq 30); do kill -0 "$pid" 2>/dev/null || { rm -f "$pidfile"; return 0; }; sleep 0.5; done
    kill -9 "$pid" 2>/dev/null || true
    rm -f "$pidfile"
}

cancel_jobs() {  # cancel every job of this (private, one-node) cluster and wait for them to end
    local left
    scontrol ping >/dev/null 2>&1 || return 0
    left=$(squeue -h -o %i 2>/dev/null | wc -l)
    [ "$left" -eq 0 ] && return 0
    say "cancelling $left job(s)"
    scancel --full $(squeue -h -o %i) 2>/dev/null || true
    for _ in $(seq 30); do
        [ "$(squeue -h -t running,completing -o %i 2>/dev/null | wc -l)" -eq 0 ] && return 0
        sleep 1
    done
    say "jobs still running after 30 s: $(squeue -h -o %i | tr '\n' ' ')"
}

stop() {
    need_root
    alive "$RUN/slurmctld.pid" && cancel_jobs
    stop_daemon "$RUN/slurmd.pid" slurmd
    stop_daemon "$RUN/slurmctld.pid" slurmctld
    if [ -e "$STATE/munged.ours" ]; then
        stop_daemon /run/munge/munged.pid munged
        rm -f "$STATE/munged.ours"
    fi
}

status() {
    local name
    for name in slurmctld slurmd; do
        if alive "$RUN/$name.pid"; then echo "$name: running (pid $(cat "$RUN/$name.pid"))"
        else echo "$name: not running"; fi
    done
    sinfo 2>&1 || true
}

logs() {
    local f
    for f in "$LOGS/slurmctld.log" "$LOGS/slurmd.log" "$LOGS/jobcomp.log"; do
        [ -e "$f" ] && { echo "== $f"; tail -n "${1:-40}" "$f"; }
    done
    return 0
}

case "${1:-start}" in
    start) start ;;
    stop) stop ;;
    status) status ;;
    logs) logs "${2:-40}" ;;
    *) die "usage: $0 [start|stop|status|logs [N]]" ;;
esac
