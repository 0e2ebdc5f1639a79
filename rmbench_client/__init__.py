"""rmbench-client: RM-Bench and RewardBench for reward models and DPO policies behind inference servers."""

import sys

__version__ = "0.1.0"

# httpx imports its own command line (click, pygments, rich: about 30 ms) on import whenever click is installed;
# nothing here runs it. A None entry makes that one import fail at once, and httpx then stubs its `main`.
sys.modules.setdefault("httpx._main", None)  # type: ignore[arg-type]
