"""Settings of `make bench` (bench/run.py); the client's own defaults are in rmbench_client/constants.py."""

REPEATS = 3  # repetitions of every measurement (env BENCH_REPEATS); medians are reported
PROMPTS = "all"  # every RM-Bench prompt, or a number of them spread over the domain files (env BENCH_PROMPTS)
QUICK_PROMPTS = 8  # BENCH_QUICK=1: one repetition of this many prompts
PORTS = (8751, 8752, 8753, 8754, 8755, 8756)  # 1 reward endpoint; policy, reference; 2 reward endpoints; tiny
WORK_DIR = "runs/bench"  # run directories, server state and logs, the data subset
MODELS_DIR = "models/bench"  # servers/build_models.py --size bench
TINY_MODELS_DIR = "models/tiny"  # the client at full scale: every prompt, a model too small to hide the client
QUIET_WAIT_S = 15.0  # before each measurement, wait up to this long for other processes to quiet down
QUIET_WAIT_TOTAL_S = 120.0  # at most this much waiting in a whole run
QUIET_CORES = 0.3  # "quiet": other processes keep fewer cores than this busy
QUICK_SCALE_PROMPTS = 200  # BENCH_QUICK=1: the full-scale run's first prompts only
DEFAULT_DATA_DIR = "../shared/data/rm-bench"  # beside the checkout, when RMBENCH_DATA_DIR is unset
# P8, the simulated endpoints (bench/sim_server.py): a GPU-like latency per request,
# lognormal(median SIM_MEDIAN_S, sigma SIM_SIGMA) + SIM_PER_SEQUENCE_S per sequence in the request
SIM_MEDIAN_S = 0.1
SIM_SIGMA = 0.25
SIM_PER_SEQUENCE_S = 0.004
SIM_ENDPOINTS = (1, 4, 16, 64)  # endpoint counts measured
SIM_WORKERS = 2  # at the largest count, also `client.workers` scoring processes (rmbench_client/run/workers.py)
SIM_LARGE_REQUESTS = 128  # at the largest count, also with this `reward.texts_per_request` (the default is 32)
SIM_PORT_BASE = 8760  # endpoint i listens on SIM_PORT_BASE + i (env BENCH_SIM_PORT_BASE moves them)
SIM_COPIES = 6  # the RM-Bench prompts, this many times over (distinct prompts): 4,788 x 6 sequences
SIM_QUICK_COPIES = 1
PAIRWISE_PROMPTS = 100_000  # P9: the generated pairwise dataset's size (memory of a large run)
PAIRWISE_QUICK_PROMPTS = 5_000
