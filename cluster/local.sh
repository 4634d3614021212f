#!/usr/bin/env bash
# A dask cluster on this machine: one `dask scheduler` and N `dask worker` processes.
#
#   cluster/local.sh [N]            # N workers (default 2), each 1 process x THREADS threads
#
# Prints the scheduler address; use it from another shell:
#
#   votebench sweep sweep.toml --scheduler tcp://127.0.0.1:8786
#   export DASK_SCHEDULER_ADDRESS=tcp://127.0.0.1:8786   # or once for every command
#
# Ctrl-C (or SIGTERM) stops the scheduler and every worker.  Settings (environment):
#   HOST (127.0.0.1; 0.0.0.0 to accept workers from other machines), PORT (8786),
#   DASHBOARD (8787), THREADS (1 thread per worker), MEMORY (memory limit per worker, default auto),
#   DASK_CONFIG (default: cluster/dask.yaml beside this script: memory fractions, retries, timeouts).
# Logs and scratch space go to a temporary folder (printed), removed on exit.
set -euo pipefail

N="${1:-2}"
HOST="${HOST:-127.0.0.1}"
PORT="${PORT:-8786}"
DASHBOARD="${DASHBOARD:-8787}"
THREADS="${THREADS:-1}"
MEMORY="${MEMORY:-auto}"
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
export DASK_CONFIG="${DASK_CONFIG:-$here/dask.yaml}"

if ! [[ "$N" =~ ^[1-9][0-9]*$ ]]; then
    echo "usage: $0 [number of workers >= 1]" >&2
    exit 2
fi
command -v dask >/dev/null || { echo "local.sh: the 'dask' command is not on PATH (pip install votebench)" >&2; exit 2; }

run_dir="$(mktemp -d "${TMPDIR:-/tmp}/votebench-cluster.XXXXXX")"
pids=()

stop() {
    trap - INT TERM EXIT
    echo "local.sh: stopping ${#pids[@]} processes" >&2
    # every process was started in its own process group (setsid): stop the group (nanny + worker)
    for pid in "${pids[@]}"; do kill -TERM -- "-$pid" 2>/dev/null || true; done
    for _ in $(seq 50); do
        alive=0
        for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive=1; done
        [[ $alive == 0 ]] && break
        sleep 0.2
    done
    for pid in "${pids[@]}"; do kill -KILL -- "-$pid" 2>/dev/null || true; done
    rm -rf "$run_dir"
}
trap stop INT TERM EXIT

setsid dask scheduler --host "$HOST" --port "$PORT" --dashboard-address ":$DASHBOARD" \
    --scheduler-file "$run_dir/scheduler.json" >"$run_dir/scheduler.log" 2>&1 &
pids+=("$!")

for _ in $(seq 300); do  # up to 60 s for the scheduler to write its address
    [[ -s "$run_dir/scheduler.json" ]] && break
    kill -0 "${pids[0]}" 2>/dev/null || { cat "$run_dir/scheduler.log" >&2; exit 1; }
    sleep 0.2
done
[[ -s "$run_dir/scheduler.json" ]] || { echo "local.sh: the scheduler did not start" >&2; exit 1; }

for i in $(seq "$N"); do
    setsid dask worker --scheduler-file "$run_dir/scheduler.json" --name "local-$i" --nthreads "$THREADS" \
        --memory-limit "$MEMORY" --local-directory "$run_dir/worker-$i" >"$run_dir/worker-$i.log" 2>&1 &
    pids+=("$!")
done

address="$(sed -n 's/.*"address": *"\([^"]*\)".*/\1/p' "$run_dir/scheduler.json")"
echo "scheduler: $address  (dashboard http://$HOST:$DASHBOARD/status; logs in $run_dir)"
echo "  votebench sweep SWEEP.toml --scheduler $address"
echo "  export DASK_SCHEDULER_ADDRESS=$address"
echo "Ctrl-C stops the scheduler and the $N workers."
wait
