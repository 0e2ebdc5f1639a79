"""How many GPUs one vLLM server uses, read from its arguments, against what a Ray replica reserves.

vLLM spreads one server over tensor × pipeline parallel size GPUs (× its data parallel size); on Ray a replica
reserves `resources.GPU` on its node and its server sees exactly those (Ray's assignment in
CUDA_VISIBLE_DEVICES). Fewer reserved than the server uses cannot start; more sit idle while nobody else can have
them; none for the GPU build cannot start. Caught when the config is read, before anything is placed.
"""

from __future__ import annotations

from collections.abc import Sequence

FLAGS = {  # vLLM's flags and their short forms
    "tensor": ("--tensor-parallel-size", "-tp"),
    "pipeline": ("--pipeline-parallel-size", "-pp"),
}


def flag_value(args: Sequence[str], names: Sequence[str]) -> int:
    """The integer value of the last of `names` in `args` (`--flag N` or `--flag=N`), else 1."""
    found = 1
    for i, arg in enumerate(args):
        name, equals, value = arg.partition("=")
        if name in names:
            text = value if equals else (args[i + 1] if i + 1 < len(args) else "")
            if not text.isdigit() or int(text) < 1:
                raise ValueError(f"extra_args: {name} needs a whole number of at least 1, got {text!r}")
            found = int(text)
    return found


def gpus_used(extra_args: Sequence[str], data_parallel_size: int) -> int:
    """GPUs one vLLM server uses: tensor × pipeline × data parallel size."""
    return flag_value(extra_args, FLAGS["tensor"]) * flag_value(extra_args, FLAGS["pipeline"]) * data_parallel_size


def replica_gpu_problem(engine: str, reserved: float, extra_args: Sequence[str], data_parallel_size: int) -> str | None:
    """Why a Ray replica reserving `reserved` GPUs cannot serve with these arguments, or None."""
    used = gpus_used(extra_args, data_parallel_size)
    layout = f"tensor × pipeline × data parallel size is {used}"
    if engine == "vllm-cpu":
        return f"engine vllm-cpu uses no GPU: resources reserves {reserved:g}" if reserved else None
    if not reserved:
        return f"engine vllm needs GPUs: add GPU: {used} to resources ({layout})"
    if reserved != used:
        return f"resources reserves GPU: {reserved:g} per replica, but {layout}: reserve exactly {used}"
    return None
