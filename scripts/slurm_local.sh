#!/usr/bin/env bash
# A real one-node Slurm cluster on localhost, for the cluster tests (tests/test_cluster.py) and for trying
# the Slurm launcher presets on one machine. Debian's slurmctld/slurmd/slurmdbd + munge + MariaDB, no systemd.
#
#   scripts/slurm_local.sh start [DIR]   # DIR (default: a fresh temp dir) holds every config, log, pid
#                                        # file, socket and database; prints DIR; `source DIR/env.sh`
#                                        # points sbatch/srun/squeue/submitit at the cluster (SLURM_CONF)
#   scripts/slurm_local.sh stop DIR      # stops the daemons by their pid files (bounded waits)
#   scripts/slurm_local.sh status DIR
#
# Needs root and the Debian packages (the Makefile's .slurm stamp installs them):
#   apt-get install -y --no-install-recommends slurmctld slurmd slurm-client munge slurmdbd mariadb-server
# Why each piece (see /work/shared/ENVIRONMENT.md, "Cluster and distribution"):
# - accounting (slurmdbd + MariaDB): without it submitit sees job states as UNKNOWN and waits forever on a
#   job killed by a signal;
# - a fresh state directory per cluster: job ids and job state would otherwise carry over between runs;
# - every port is a free one picked at start and every address is 127.0.0.1 (the daemons listen on all
#   addresses; only loopback traffic is ever sent); the node is named `localhost` (the hostname differs);
# - every wait is bounded (sinfo blocks about 10 s when slurmctld is down), every stop goes by pid file.
set -euo pipefail

WAIT_S=${SLURM_LOCAL_WAIT_S:-60}

die() { echo "slurm_local: $*" >&2; exit 1; }

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }

# wait_for SECONDS DESCRIPTION COMMAND...: poll COMMAND every 0.2 s, give up (and say what) after SECONDS
wait_for() {
  local limit=$1 what=$2; shift 2
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ $SECONDS -lt $end ] || { echo "slurm_local: gave up after ${limit}s waiting for $what" >&2; return 1; }
    sleep 0.2
  done
}

stop_pidfile() {   # stop_pidfile FILE NAME: TERM, wait up to 15 s, then KILL
  local file=$1 name=$2 pid
  [ -s "$file" ] || return 0
  pid=$(cat "$file")
  if kill -0 "$pid" 2>/dev/null; then
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 75); do kill -0 "$pid" 2>/dev/null || break; sleep 0.2; done
    if kill -0 "$pid" 2>/dev/null; then
      echo "slurm_local: $name ($pid) ignored TERM for 15 s: KILL" >&2
      kill -KILL "$pid" 2>/dev/null || true
    fi
  fi
  rm -f "$file"
}

start() {
  [ "$(id -u)" = 0 ] || die "needs root (slurmd runs jobs as their users)"
  for b in munged mariadbd mariadb-install-db slurmdbd slurmctld slurmd sbatch; do
    command -v "$b" >/dev/null || [ -x "/usr/sbin/$b" ] || die "$b not found (fix: make .venv/.slurm, or apt-get install -y slurmctld slurmd slurm-client munge slurmdbd mariadb-server)"
  done
  export PATH="/usr/sbin:$PATH"
  local D=${1:-$(mktemp -d /tmp/slurm-local.XXXXXX)}
  mkdir -p "$D"
  D=$(cd "$D" && pwd)
  [ ! -e "$D/slurm.conf" ] || die "$D already holds a cluster (fix: stop it and use a fresh directory)"
  chmod 0755 "$D"
  mkdir -p "$D"/{munge,log,run,spool/ctld,spool/d,mysql}
  local t0=$SECONDS

  # munge: a private daemon, key and socket (the system one may not exist: no systemd here)
  chmod 0700 "$D/munge"
  dd if=/dev/urandom of="$D/munge/munge.key" bs=1024 count=1 status=none
  chmod 0400 "$D/munge/munge.key"
  local MSOCK=$D/run/munge.socket
  munged --force --socket="$MSOCK" --key-file="$D/munge/munge.key" --pid-file="$D/run/munged.pid" \
    --log-file="$D/log/munged.log" --seed-file="$D/munge/munged.seed"
  wait_for "$WAIT_S" "munged" test -S "$MSOCK"

  # MariaDB for slurmdbd: its own data dir, socket and port, 127.0.0.1 only
  local DBPORT; DBPORT=$(free_port)
  mariadb-install-db --no-defaults --datadir="$D/mysql" --user=root --auth-root-authentication-method=socket \
    --skip-test-db >"$D/log/mariadb-install.log" 2>&1 || die "mariadb-install-db failed: see $D/log/mariadb-install.log"
  mariadbd --no-defaults --datadir="$D/mysql" --socket="$D/run/mysqld.sock" --port="$DBPORT" \
    --bind-address=127.0.0.1 --pid-file="$D/run/mariadbd.pid" --user=root --skip-name-resolve \
    --log-error="$D/log/mariadbd.log" --innodb-buffer-pool-size=32M >/dev/null 2>&1 &
  wait_for "$WAIT_S" "mariadbd" mariadb --no-defaults --socket="$D/run/mysqld.sock" -e "select 1"
  mariadb --no-defaults --socket="$D/run/mysqld.sock" -e \
    "CREATE USER 'slurm'@'127.0.0.1' IDENTIFIED BY 'slurm'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'127.0.0.1';"

  local DBDPORT CTLDPORT SDPORT CPUS MEM
  DBDPORT=$(free_port); CTLDPORT=$(free_port); SDPORT=$(free_port)
  CPUS=$(nproc)
  MEM=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
  cat >"$D/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$MSOCK
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$DBDPORT
SlurmUser=root
PidFile=$D/run/slurmdbd.pid
LogFile=$D/log/slurmdbd.log
StorageType=accounting_storage/mysql
StorageHost=127.0.0.1
StoragePort=$DBPORT
StorageUser=slurm
StoragePass=slurm
StorageLoc=slurm_acct_db
EOF
  chmod 0600 "$D/slurmdbd.conf"
  cat >"$D/slurm.conf" <<EOF
ClusterName=local
SlurmctldHost=localhost(127.0.0.1)
SlurmctldPort=$CTLDPORT
SlurmdPort=$SDPORT
SlurmUser=root
AuthType=auth/munge
AuthInfo=socket=$MSOCK
CredType=cred/munge
StateSaveLocation=$D/spool/ctld
SlurmdSpoolDir=$D/spool/d
SlurmctldPidFile=$D/run/slurmctld.pid
SlurmdPidFile=$D/run/slurmd.pid
SlurmctldLogFile=$D/log/slurmctld.log
SlurmdLogFile=$D/log/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/builtin
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
JobRequeue=1
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=$DBDPORT
# slurmctld's link to slurmdbd authenticates through this munge socket (without it: "no TRES", exit)
AccountingStoragePass=$MSOCK
JobAcctGatherType=jobacct_gather/none
JobCompType=jobcomp/none
MinJobAge=300
KillWait=5
InactiveLimit=0
NodeName=localhost NodeAddr=127.0.0.1 CPUs=$CPUS RealMemory=$MEM State=UNKNOWN
PartitionName=debug Nodes=localhost Default=YES MaxTime=INFINITE State=UP OverSubscribe=NO
EOF
  printf 'export SLURM_CONF=%q\nexport PATH=/usr/sbin:$PATH\n' "$D/slurm.conf" >"$D/env.sh"
  export SLURM_CONF=$D/slurm.conf

  slurmdbd
  wait_for "$WAIT_S" "slurmdbd on 127.0.0.1:$DBDPORT" bash -c "</dev/tcp/127.0.0.1/$DBDPORT"
  slurmctld -i
  wait_for "$WAIT_S" "slurmctld" timeout 5 scontrol ping
  slurmd -N localhost
  wait_for "$WAIT_S" "the node to be idle" bash -c 'timeout 5 sinfo -h -N -o %t | grep -qx idle'
  echo "slurm_local: up in $((SECONDS - t0)) s: source $D/env.sh" >&2
  echo "$D"
}

stop() {
  local D=${1:?usage: slurm_local.sh stop DIR}
  [ -d "$D/run" ] || die "$D is not a cluster directory"
  # reverse order of start; each by its pid file, each wait bounded
  stop_pidfile "$D/run/slurmd.pid" slurmd
  stop_pidfile "$D/run/slurmctld.pid" slurmctld
  stop_pidfile "$D/run/slurmdbd.pid" slurmdbd
  stop_pidfile "$D/run/mariadbd.pid" mariadbd
  stop_pidfile "$D/run/munged.pid" munged
}

status() {
  local D=${1:?usage: slurm_local.sh status DIR}
  local f
  for f in munged mariadbd slurmdbd slurmctld slurmd; do
    if [ -s "$D/run/$f.pid" ] && kill -0 "$(cat "$D/run/$f.pid")" 2>/dev/null; then echo "$f up"; else echo "$f down"; fi
  done
}

case "${1:-}" in
  start) start "${2:-}" ;;
  stop) stop "${2:-}" ;;
  status) status "${2:-}" ;;
  *) die "usage: $0 start [DIR] | stop DIR | status DIR" ;;
esac
