"""CONSTANTS"""

from __future__ import annotations

DOMAINS = ("chat", "math", "code", "safety")
STYLES = ("concise", "detailed", "markdown")  # index i of chosen[i] / rejected[i]
FILES = {  # per-domain file name -> (domain, subdomain)
    "chat_filtered.json": ("chat", "chat"),
    "math_filtered.json": ("math", "math"),
    "code_filtered.json": ("code", "code"),
    "safety-refuse_filtered.json": ("safety", "safety-refuse"),
    "safety-response_filtered.json": ("safety", "safety-response"),
}
TOTAL_FILE = "total_dataset.json"
HUB_REPO = "THU-KEG/RM-Bench"
DATA_ENV = "RMBENCH_DATA_DIR"  # RM-Bench's files (as `make demo` and the tests read them)
HEATMAP_FILE = "heatmap-{name}.png"  # name: a domain, or "overall"
HEATMAP_DPI = 120
RESULTS_FILE = "rmbench-results.json"  # RM-Bench style per-sample scores
# Known checksums of the files, "sha256:<hex>" or "git-sha1:<hex>" (`git hash-object`): the domain files as
# THU-KEG/RM-Bench ships them (commit 73c52d7) and its hub files; see data/README.md.
CHECKSUMS = {
    "chat_filtered.json": "sha256:1df6053a68119c17eed9a54d35dc654b8cde3d3b0bbd1ad6941073e40ef5c9a8",
    "code_filtered.json": "sha256:c3a56181d34835345b9c5fbf22c203439d06ea96de12b232da80628f14fe1e15",
    "safety-refuse_filtered.json": "sha256:cf25d4cc967afe68908ff710a8ffaa6fe7aff53ad70fe0b8c689b35aa20e911f",
    "safety-response_filtered.json": "sha256:364caaebd7ddaa432f5120e11e8527fc1046c50d83d0d6f89346ad25f1bf51f1",
    "math_filtered.json": "git-sha1:47c721a5dc7e7b377425b00dbf0d1c2b1885c206",
    "total_dataset.json": "git-sha1:75d9c1eab827fa32bfb684fc6554f96dee69f66a",
}
