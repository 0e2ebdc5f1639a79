"""CONSTANTS"""

from __future__ import annotations

# Your own preference data
DEFAULT_SUBSET = "default"  # the subset of records that name none
