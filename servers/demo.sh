#!/usr/bin/env bash
# `make demo`: tiny local models on vLLM's CPU build, RM-Bench through the reward model and through DPO, then the
# two result tables and an HTML report. One line per step with its time; the full output of every step (pip, the
# servers, the runs) goes to log files whose paths are printed.
# Reads the data from $RMBENCH_DATA_DIR when set, else data/rm-bench, else downloads it from the Hugging Face hub.
set -euo pipefail
cd "$(dirname "$0")/.."
CONFIG=${CONFIG:-configs/cpu-demo.yaml}
BIN=.venv/bin
LOGS=runs/demo-logs
mkdir -p "$LOGS"

step() {  # step NAME LOG COMMAND...: run quietly, one line with the time, the log's end if it fails
    local name=$1 log=$2 start=$SECONDS
    shift 2
    printf '%-44s' "$name"
    if "$@" >"$log" 2>&1; then
        printf 'done in %3d s   (log: %s)\n' "$((SECONDS - start))" "$log"
    else
        printf 'FAILED after %d s; the end of %s:\n' "$((SECONDS - start))" "$log"
        tail -n 25 "$log"
        exit 1
    fi
}

step "installing the client (.venv)" "$LOGS/install.log" make --no-print-directory install
step "installing vLLM's CPU build (.venv-server)" "$LOGS/server-venv.log" bash servers/setup-cpu-venv.sh
step "building the tiny models (models/tiny)" "$LOGS/models.log" \
    .venv-server/bin/python servers/build_models.py --size tiny --out models/tiny
trap '$BIN/rmbench-client stop >"$LOGS/stop.log" 2>&1' EXIT
step "starting the servers (logs in .servers/)" "$LOGS/serve.log" $BIN/rmbench-client serve --config "$CONFIG"
step "RM-Bench through the reward model" "$LOGS/run-reward.log" \
    $BIN/rmbench-client run --config "$CONFIG" --out runs/demo-reward --no-progress
step "RM-Bench through DPO (policy vs reference)" "$LOGS/run-dpo.log" \
    $BIN/rmbench-client run --config "$CONFIG" --type dpo --model tiny-dpo --out runs/demo-dpo --no-progress
step "writing the HTML report" "$LOGS/report.log" \
    $BIN/rmbench-client report runs/demo-reward runs/demo-dpo --out runs/demo-report.html
echo
$BIN/rmbench-client status runs/demo-reward
$BIN/rmbench-client status runs/demo-dpo
echo "HTML report: $(pwd)/runs/demo-report.html"
