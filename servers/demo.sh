#!/usr/bin/env bash
# `make demo`: tiny local models on vLLM's CPU build, RM-Bench through the reward model and through DPO, then the
# two result tables and an HTML report. One line per step with its time; the full output of every step (pip, the
# servers, the runs) goes to log files whose paths are printed.
# Steps that do not need each other run at once: the two installs (each mostly one core), and the two runs (the
# reward run keeps one core busy, DPO's two servers share the cores with it).
# Reads the data from $RMBENCH_DATA_DIR when set, else data/rm-bench, else downloads it from the Hugging Face hub.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${CONFIG:-configs/cpu-demo.yaml}
BIN=.venv/bin
LOGS=runs/demo-logs
mkdir -p "$LOGS"

step() {  # step NAME LOG COMMAND...: the command quietly; one line with its time, or the end of its log
    local name=$1 log=$2 start=$SECONDS
    shift 2
    if "$@" >"$log" 2>&1; then
        printf '%-46s done in %3d s   (log: %s)\n' "$name" "$((SECONDS - start))" "$log"
    else
        printf '%-46s FAILED after %d s; the end of %s:\n' "$name" "$((SECONDS - start))" "$log"
        tail -n 25 "$log"
        return 1
    fi
}

together() {  # together PID...: wait for steps started in the background; fails as soon as one of them fails
    local left=("$@") ended pid rest
    while ((${#left[@]})); do
        wait -n -p ended "${left[@]}" || return 1
        rest=()
        for pid in "${left[@]}"; do [[ $pid == "$ended" ]] || rest+=("$pid"); done
        left=("${rest[@]}")
    done
}

kill_tree() {  # kill_tree PID: a step's shell and everything it started (pip, a run)
    local child
    for child in $(pgrep -P "$1"); do kill_tree "$child"; done
    kill "$1" 2>/dev/null || true
}

stop_all() {  # on any exit: end the steps still running, then stop the servers
    local pid
    for pid in $(jobs -p); do kill_tree "$pid"; done
    [[ ! -x $BIN/rmbench-client ]] || $BIN/rmbench-client stop >"$LOGS/stop.log" 2>&1 || true
}
trap stop_all EXIT

echo "Installing, building and starting (each line appears when its step ends; steps listed together run at once)"
step "installing the client (.venv)" "$LOGS/install.log" make --no-print-directory install &
client=$!
step "installing vLLM's CPU build (.venv-server)" "$LOGS/server-venv.log" bash servers/setup-cpu-venv.sh &
together $client $!
step "building the tiny models (models/tiny)" "$LOGS/models.log" \
    .venv-server/bin/python servers/build_models.py --size tiny --out models/tiny
step "starting the servers (logs in .servers/)" "$LOGS/serve.log" $BIN/rmbench-client serve --config "$CONFIG"
step "RM-Bench through the reward model" "$LOGS/run-reward.log" \
    $BIN/rmbench-client run --config "$CONFIG" --out runs/demo-reward --no-progress &
reward=$!
step "RM-Bench through DPO (policy vs reference)" "$LOGS/run-dpo.log" \
    $BIN/rmbench-client run --config "$CONFIG" --type dpo --model tiny-dpo --out runs/demo-dpo --no-progress &
together $reward $!
step "writing the HTML report" "$LOGS/report.log" \
    $BIN/rmbench-client report runs/demo-reward runs/demo-dpo --out runs/demo-report.html
echo "demo: $SECONDS s in all"
echo
$BIN/rmbench-client status runs/demo-reward
$BIN/rmbench-client status runs/demo-dpo
echo "HTML report: $(pwd)/runs/demo-report.html"
