"""Helpers of the report page's browser tests: Debian's Chromium driven by Playwright, pages opened from their file
with every network request refused, and run directories built for the tests."""

from __future__ import annotations

import json
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

import pytest
from helpers_data import require_rmbench
from helpers_scoring import score

from rmbench_client import constants as C
from rmbench_client.results.score_files import read_scores

CHROMIUM = Path("/usr/bin/chromium")
FLAGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
PER_FILE = 12  # prompts of each RM-Bench file in the test runs


def samples(run_dir: Path) -> dict[str, dict]:
    lines = (run_dir / C.SAMPLES_FILE).read_text(encoding="utf-8").splitlines()
    return {rec["id"]: rec for rec in map(json.loads, lines)}


def lost(rec: dict, i: int, j: int) -> bool:
    """Chosen style i did not beat rejected style j (the benchmark's strict rule)."""
    return not rec["score_chosen"][i] > rec["score_rejected"][j]


@contextmanager
def chromium() -> Iterator[Any]:
    """Chromium, to start after the test runs are made: Playwright's sync API keeps an event loop running in this
    thread, and a run starts its own."""
    if not CHROMIUM.is_file():
        pytest.skip(f"Chromium is not installed at {CHROMIUM} (Debian: apt-get install -y chromium)")
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=str(CHROMIUM), args=FLAGS)
        yield b
        b.close()


def open_page(browser, path: Path) -> tuple[Any, list[str], list[str]]:
    """The page, opened from its file; every request but the file itself is recorded and refused, and every
    script error recorded."""
    page = browser.new_page(viewport={"width": 1300, "height": 900})
    requests: list[str] = []
    errors: list[str] = []
    page.on("pageerror", lambda e: errors.append(str(e)))

    def refuse(route) -> None:
        if route.request.url == path.as_uri():
            route.continue_()
        else:
            requests.append(route.request.url)
            route.abort()

    page.route("**/*", refuse)
    page.goto(path.as_uri())
    page.wait_for_selector("body[data-ready=true]", timeout=30_000)
    return page, requests, errors


def shown_ids(page) -> list[str]:
    """Every prompt the list shows, after "show more" until it is all there."""
    while page.is_visible("#more"):
        page.click("#more")
    return page.eval_on_selector_all("#list .item", "els => els.map(e => e.dataset.id)")


def constructed_run(root: Path, name: str, model_type: str, lines: list[dict]) -> Path:
    """A run directory written by hand: samples.jsonl lines (with "details") and the summary they score to."""
    d = root / name
    d.mkdir()
    (d / C.SAMPLES_FILE).write_text("".join(json.dumps(x) + "\n" for x in lines), encoding="utf-8")
    summary = score("rm-bench", read_scores([d / C.SAMPLES_FILE])[1])
    sources = [str(require_rmbench() / "chat_filtered.json")]
    summary |= {"model": name, "type": model_type, "complete": False, "partial": ["test"], "data": {"sources": sources}}
    (d / C.SUMMARY_FILE).write_text(json.dumps(summary), encoding="utf-8")
    return d
