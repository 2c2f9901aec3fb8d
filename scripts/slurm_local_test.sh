#!/usr/bin/env bash
# Runs the Slurm template for real: starts a throw-away single-node Slurm (Debian's slurm-wlm:
# slurmctld + slurmd on 127.0.0.1, a generated slurm.conf and munge key in a temporary
# directory, nothing else on the network), submits a sweep as a job array of 4 shards with
# scripts/slurm_sweep.sh, merges the shards with the documented dependency job
# (`stale sweep --index-only`), and checks that the merged index has the same rows as a local
# `stale sweep` of the same file (every column but wall_seconds; and the same run files).
#
#   bash scripts/slurm_local_test.sh [SWEEP.toml [key=value ...]]
#       default: experiments/main_rpd_delays_sweep.toml method.updates=1600 (12 runs)
#
# Exit codes: 0 the indexes agree; 1 they do not, or a job failed; 77 skipped: slurm-wlm or
# munge is not installed, or the daemons cannot start here (CTest's SKIP_RETURN_CODE).
# STALE_SLURM_INSTALL=1 installs them first with apt-get (about 20 s with fresh package
# lists); STALE_BIN names the stale binary (default build/stale). Every daemon it starts is
# stopped on exit, and the temporary directory removed (kept when STALE_SLURM_KEEP=1).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
cd "$root"
skip() { echo "slurm_local_test: skipped: $*" >&2; exit 77; }
fail() { echo "slurm_local_test: FAILED: $*" >&2; exit 1; }

if [[ $# -ge 1 ]]; then sweep=$1; shift; overrides=("$@")
else sweep=experiments/main_rpd_delays_sweep.toml; overrides=(method.updates=1600); fi
stale=$(realpath "${STALE_BIN:-build/stale}")
[[ -x "$stale" ]] || fail "no stale binary at $stale (build first, or set STALE_BIN)"
[[ -f "$sweep" ]] || fail "no sweep file $sweep"
sweep=$(realpath "$sweep")

daemons=(munged mungekey slurmctld slurmd sbatch sinfo scontrol)
missing() { for d in "${daemons[@]}"; do command -v "$d" >/dev/null || PATH=$PATH:/usr/sbin command -v "$d" >/dev/null || return 0; done; return 1; }
if missing && [[ "${STALE_SLURM_INSTALL:-0}" == 1 ]]; then
  DEBIAN_FRONTEND=noninteractive apt-get install -y -q slurm-wlm munge >/dev/null ||
    skip "apt-get install slurm-wlm munge failed"
fi
export PATH=$PATH:/usr/sbin
missing && skip "slurm-wlm and munge are not installed (apt-get install slurm-wlm munge, or STALE_SLURM_INSTALL=1)"

tmp=$(mktemp -d "${TMPDIR:-/tmp}/stale-slurm.XXXXXX")
chmod 755 "$tmp"  # munged wants its socket's directory to be searchable by all
pids=()
cleanup() {
  local p
  for p in "${pids[@]}"; do kill "$p" 2>/dev/null || true; done
  for p in "${pids[@]}"; do wait "$p" 2>/dev/null || true; done
  if [[ "${STALE_SLURM_KEEP:-0}" == 1 ]]; then echo "slurm_local_test: kept $tmp" >&2; else rm -rf "$tmp"; fi
}
trap cleanup EXIT
show_logs() { tail -n 20 "$tmp"/*.log >&2 2>/dev/null || true; }

# ---- munge: a fresh key and a private socket ----------------------------------------------
mkdir -m 700 "$tmp/munge"
mungekey -c -k "$tmp/munge/munge.key" || skip "mungekey cannot create a key"
sock=$tmp/munge.socket
munged -F --force --key-file="$tmp/munge/munge.key" --socket="$sock" --pid-file="$tmp/munged.pid" \
  --seed-file="$tmp/munge/seed" --log-file="$tmp/munged.log" >>"$tmp/munged.log" 2>&1 &
pids+=($!)
for _ in $(seq 50); do [[ -S "$sock" ]] && break; sleep 0.1; done
[[ -S "$sock" ]] || { show_logs; skip "munged did not start"; }

# ---- slurm.conf: one node (this host, 127.0.0.1), ports that are free now ------------------
read -r ctld_port slurmd_port < <(python3 -c '
import socket
ss = [socket.socket() for _ in range(2)]
for s in ss: s.bind(("127.0.0.1", 0))
print(*[s.getsockname()[1] for s in ss])')
host=$(hostname -s)
cpus=$(nproc)
mkdir -p "$tmp/state" "$tmp/spool"
cat >"$tmp/slurm.conf" <<EOF
ClusterName=stale-local
SlurmctldHost=$host(127.0.0.1)
SlurmctldPort=$ctld_port
SlurmdPort=$slurmd_port
SlurmUser=$(id -un)
AuthType=auth/munge
CredType=cred/munge
AuthInfo=socket=$sock
StateSaveLocation=$tmp/state
SlurmdSpoolDir=$tmp/spool/%n
SlurmctldPidFile=$tmp/slurmctld.pid
SlurmdPidFile=$tmp/slurmd.pid
SlurmctldLogFile=$tmp/slurmctld.log
SlurmdLogFile=$tmp/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
MpiDefault=none
SwitchType=switch/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
SlurmdTimeout=60
MailProg=/bin/true
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=512 State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
EOF
export SLURM_CONF=$tmp/slurm.conf

# ---- the daemons ---------------------------------------------------------------------------
slurmctld -D -i -f "$SLURM_CONF" >>"$tmp/slurmctld.log" 2>&1 &
pids+=($!)
slurmd -D -f "$SLURM_CONF" -N "$host" >>"$tmp/slurmd.log" 2>&1 &
pids+=($!)
up=0
for _ in $(seq 100); do
  if sinfo -h -N -o %t 2>/dev/null | grep -qE '^(idle|mix|alloc)'; then up=1; break; fi
  sleep 0.2
done
[[ $up == 1 ]] || { show_logs; skip "slurmctld + slurmd did not bring the node up within 20 s"; }
echo "slurm_local_test: single-node Slurm $(sinfo -V | cut -d' ' -f2) up on $host (ports $ctld_port, $slurmd_port)" >&2

# ---- the sweep as a job array of 4 shards, then the merge job ------------------------------
out=$tmp/slurm_sweep
start=$(date +%s)
array=$(sbatch --parsable --array=0-3 --cpus-per-task=1 --chdir="$root" --output="$tmp/slurm-%A_%a.out" \
  --export=ALL,STALE_BIN="$stale" scripts/slurm_sweep.sh "$sweep" "$out" "${overrides[@]}") ||
  fail "sbatch of the array was refused"
array=${array%%;*}
merge=$(timeout 600 sbatch --parsable --wait --dependency=afterok:"$array" --kill-on-invalid-dep=yes \
  --chdir="$root" --output="$tmp/slurm-merge-%j.out" \
  --wrap "$(printf '%q ' "$stale" sweep "$sweep" "${overrides[@]}" --index-only --quiet --out "$out")") ||
  { tail -n 5 "$tmp"/slurm-*.out >&2 2>/dev/null; show_logs; fail "the array or the merge job failed (array job $array)"; }
echo "slurm_local_test: array job $array (4 shards) and merge job ${merge%%;*} done in $(( $(date +%s) - start )) s" >&2
# every task ran its own share: shard t of 4 holds the grid positions p with p mod 4 = t
for t in 0 1 2 3; do
  grep -q "in shard $t/4\|in this shard" "$tmp/slurm-${array}_$t.out" 2>/dev/null ||
    { cat "$tmp/slurm-${array}_$t.out" >&2 2>/dev/null; fail "array task $t left no shard summary"; }
done

# ---- the same sweep locally, and the comparison --------------------------------------------
"$stale" sweep "$sweep" "${overrides[@]}" --jobs 2 --quiet --out "$tmp/local_sweep" >/dev/null
python3 - "$out" "$tmp/local_sweep" <<'EOF'
import csv, os, sys
slurm, local = sys.argv[1], sys.argv[2]
def rows(d):
    with open(os.path.join(d, "index.csv"), newline="") as f:
        r = list(csv.reader(f))
    head = r[0]
    drop = {i for i, c in enumerate(head) if c == "wall_seconds"}
    keep = lambda row: [c for i, c in enumerate(row) if i not in drop]
    return keep(head), [keep(x) for x in r[1:]]
hs, rs = rows(slurm)
hl, rl = rows(local)
runs = lambda d: sorted(os.listdir(os.path.join(d, "runs")))
problems = []
if hs != hl: problems.append(f"headers differ: {hs} vs {hl}")
if rs != rl: problems.append(f"{sum(a != b for a, b in zip(rs, rl))} of {len(rl)} rows differ (or counts {len(rs)} vs {len(rl)})")
if runs(slurm) != runs(local): problems.append("the run files differ by name")
ok = [r for r in rl if "ok" in r]
if len(rl) == 0 or len(ok) != len(rl): problems.append(f"{len(rl) - len(ok)} of {len(rl)} runs not ok")
if problems:
    print("slurm_local_test: FAILED: " + "; ".join(problems), file=sys.stderr)
    sys.exit(1)
print(f"slurm_local_test: merged index of 4 shards == local sweep: {len(rl)} rows, "
      f"{len(hl)} columns (wall_seconds left out), {len(runs(local))} run files", file=sys.stderr)
EOF
