"""Common mistakes each give one `error:` line that names the fix, and exit code 2."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pytest
import yaml
from helpers_cli import cli, one_error_line

import rmbench_client as rmb
from rmbench_client import constants as C


def one_error(proc) -> str:  # noqa: ANN001
    lines = [line for line in proc.stderr.splitlines() if line.strip()]
    assert proc.returncode == 2 and len(lines) == 1 and lines[0].startswith("error: "), proc.stderr
    return lines[0]


@contextmanager
def models_server(served: str) -> Iterator[str]:
    """A loopback server that answers /v1/models as vLLM does, serving `served`."""

    class Handler(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            body = json.dumps({"object": "list", "data": [{"id": served, "object": "model", "root": "/m"}]})
            code = 200 if self.path == "/v1/models" else 404
            self.send_response(code)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body.encode())

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_ending_in_v1_names_the_root():
    line = one_error(cli("run", "--endpoint", "http://127.0.0.1:9/v1", "--served-model", "rm"))
    assert "ends in /v1: give the server's root, 'http://127.0.0.1:9'" in line


def test_an_endpoint_with_a_bad_port_is_one_error_and_creates_nothing(tmp_path):
    out = tmp_path / "r"
    for url, why in (("http://127.0.0.1:99999", "Port out of range"), ("http://127.0.0.1:abc", "'abc'")):
        line = one_error(cli("run", "--endpoint", url, "--served-model", "rm", "--out", str(out), "--limit", "5"))
        assert f"endpoint {url!r} is not an http(s) URL (" in line and why in line, line
        assert not out.exists()  # not even the run directory's lock


def test_a_served_name_that_differs_in_case_only(tmp_path):
    data = pairs(tmp_path / "p.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with models_server("Skywork-Reward") as url:
        proc = cli("run", "--endpoint", url, "--served-model", "skywork-reward", "--benchmark", "pairwise",
                   "--data", str(data), "--out", str(tmp_path / "r"))  # fmt: skip
    assert "serves 'Skywork-Reward', not 'skywork-reward': names are case-sensitive" in one_error(proc)


def pairs(path: Path, records: list[dict]) -> Path:
    path.write_text("".join(json.dumps(r) + "\n" for r in records))
    return path


def test_a_data_fields_key_that_is_no_field_is_an_error(tmp_path):
    data = pairs(tmp_path / "p.jsonl", [{"question": "q", "chosen": "a", "rejected": "b"}])
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"benchmark": "pairwise", "model": "baseline:longer", "type": "baseline",
                                      "data": str(data), "data_fields": {"promt": "question"}}))  # fmt: skip
    line = one_error(cli("run", "--config", str(config), "--out", str(tmp_path / "r")))
    assert "data_fields: 'promt' is no field of pairwise (its fields are id, prompt, chosen, rejected" in line


def test_a_null_subset_is_the_default_subset(tmp_path):
    data = pairs(tmp_path / "p.jsonl", [{"prompt": "q", "chosen": "a longer one", "rejected": "b", "subset": None},
                                        {"prompt": "r", "chosen": "c longer", "rejected": "d"}])  # fmt: skip
    proc = cli("run", "--model", "baseline:longer", "--benchmark", "pairwise", "--data", str(data),
               "--out", str(tmp_path / "r"))  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    lines = [json.loads(x) for x in (tmp_path / "r" / C.SAMPLES_FILE).read_text().splitlines()]
    assert [x["subset"] for x in lines] == ["default", "default"]


def _pairs(path: Path, ids: list[str]) -> Path:
    rows = [{"id": i, "prompt": f"Question {i}?", "chosen": "A full, careful answer.", "rejected": "No."} for i in ids]
    path.write_text("".join(json.dumps(r) + "\n" for r in rows))
    return path


def _baseline_run(tmp_path: Path, name: str, data: Path) -> Path:
    out = tmp_path / name
    args = ["run", "--model", "baseline:longer", "--benchmark", "pairwise", "--data", str(data), "--out", str(out)]
    proc = cli(*args, "--json")
    assert proc.returncode == 0, proc.stderr
    return out


@pytest.mark.slow
def test_a_run_ended_without_its_summary_is_said_by_status_compare_and_report(tmp_path):
    """What `kill -9` leaves (the store and the per-prompt lines so far, no summary.json): `status` says the run
    ended without its summary, and `compare`/`report` say the same rather than "not a run directory"."""
    out = _baseline_run(tmp_path, "run", _pairs(tmp_path / "p.jsonl", ["a", "b"]))
    (out / C.SUMMARY_FILE).unlink()
    status = cli("status", str(out))
    assert status.returncode == 0 and "ended without writing its summary" in status.stdout, status.stderr
    assert "ended without writing its summary" in json.loads(cli("status", str(out), "--json").stdout)["ended"]
    for command in ("compare", "report"):
        line = one_error(cli(command, str(out)))
        assert f"{out}: no summary.json: the run ended without writing its summary" in line, line
        assert "not a run directory" not in line


def test_a_negative_seed_is_refused_before_anything_is_scored(tmp_path):
    """numpy's generators refuse -1: every --seed, the config's seed and the API's refuse it up front (a run that
    took it scored everything, then failed in the bootstrap and left a run directory no rerun could finish)."""
    data = _pairs(tmp_path / "p.jsonl", ["a", "b"])
    out = tmp_path / "r"
    run = ["run", "--model", "baseline:longer", "--benchmark", "pairwise", "--data", str(data), "--out", str(out)]
    for args in (run, ["suite", "--model", "baseline:longer", "--out", str(out)], ["score", str(data)],
                 ["compare", str(out), str(out)], ["report", str(out)]):  # fmt: skip
        proc = cli(*args, "--seed", "-1")
        assert proc.returncode == 2 and "argument --seed: '-1' is not a seed" in proc.stderr, proc.stderr
        assert "Traceback" not in proc.stderr
    config = tmp_path / "c.yaml"
    config.write_text(yaml.safe_dump({"model": "baseline:longer", "benchmark": "pairwise", "seed": -1}))
    line = one_error(cli("run", "--config", str(config), "--data", str(data), "--out", str(out)))
    assert f"{config}: seed: Expected `int` >= 0" in line
    assert not out.exists()
    for call in (lambda: rmb.rescore(data, seed=-1), lambda: rmb.compare([out], seed=-1),
                 lambda: rmb.evaluate({"model": "baseline:longer", "benchmark": "pairwise", "seed": -1},
                                      data=data, out=out)):  # fmt: skip
        with pytest.raises(rmb.ConfigError, match="seed"):
            call()
    assert not out.exists()


def test_a_config_path_that_is_a_directory_is_one_error(tmp_path):
    for command in (["run"], ["suite"], ["status"], ["serve"], ["watch", str(tmp_path)]):
        line = one_error(cli(*command, "--config", str(tmp_path)))
        assert f"{tmp_path}: config file cannot be read (Is a directory)" in line, (command, line)


def test_status_says_a_summary_it_cannot_read_and_exits_1(tmp_path):
    """A cut summary.json was taken for none: status said the run was fine (exit 0) where compare refused it."""
    out = _baseline_run(tmp_path, "run", _pairs(tmp_path / "p.jsonl", ["a", "b"]))
    summary = out / C.SUMMARY_FILE
    summary.write_bytes(summary.read_bytes()[:300])
    why = f"{summary}: not a readable summary (Expecting"
    text = cli("status", str(out))
    assert text.returncode == 1 and f"unreadable summary: {why}" in text.stdout, text.stdout + text.stderr
    found = cli("status", str(out), "--json")
    assert found.returncode == 1 and json.loads(found.stdout)["summary_error"].startswith(why)
    listing = cli("status", str(tmp_path), "--json")  # the model's directory: each of its runs
    assert listing.returncode == 1 and json.loads(listing.stdout)["runs"][0]["summary_error"].startswith(why)


def test_a_model_named_dot_dot_needs_an_out_and_org_model_keeps_its_folder(tmp_path):
    """A model "." or ".." made the default run directory runs/../<benchmark>, outside runs/."""
    role = {"served_model": "m", "endpoints": ["http://127.0.0.1:9"]}
    for model in ("..", "."):
        config = tmp_path / "c.yaml"
        config.write_text(yaml.safe_dump({"model": model, "roles": {"reward": role}}))
        for command in (["run"], ["suite"], ["watch", str(tmp_path)]):
            line = one_error(cli(*command, "--config", str(config), cwd=tmp_path))
            assert f"model {model!r} cannot name a folder under runs/: give the run directory with --out" in line
        assert sorted(p.name for p in tmp_path.iterdir()) == ["c.yaml"]  # nothing made, in runs/ or beside it
    config.write_text(yaml.safe_dump({"model": "..", "out": "r", "roles": {"reward": role}}))
    line = one_error(cli("watch", str(tmp_path), "--config", str(config), cwd=tmp_path))  # its own runs/<model>/watch
    assert "model '..' cannot name a folder under runs/" in line and not (tmp_path / "watch").exists()
    with pytest.raises(rmb.ConfigError, match="cannot name a folder under runs/"):
        rmb.load_config({"model": "..", "roles": {"reward": role}})
    assert rmb.load_config({"model": "..", "out": "r", "roles": {"reward": role}}).out_dir() == Path("r")
    org = rmb.load_config({"model": "org/model", "roles": {"reward": role}})
    assert org.out_dir() == Path("runs/org_model/rm-bench")


@contextmanager
def web_page_server() -> Iterator[str]:
    """A loopback server that is no model server: Python's own, whose 404 is an HTML page over many lines."""

    class Quiet(BaseHTTPRequestHandler):
        def do_GET(self) -> None:  # noqa: N802
            self.send_error(404)

        def log_message(self, *args: object) -> None:
            pass

    server = ThreadingHTTPServer(("127.0.0.1", 0), Quiet)
    threading.Thread(target=server.serve_forever, daemon=True).start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


def test_an_endpoint_that_answers_a_web_page_is_one_line_naming_it(tmp_path):
    """A URL that reaches some other web server: its HTML error page is said on one line, not printed as it is."""
    data = pairs(tmp_path / "p.jsonl", [{"prompt": "q", "chosen": "a", "rejected": "b"}])
    with web_page_server() as url:
        with pytest.raises(rmb.EndpointError) as raised:
            rmb.evaluate({"model": "rm", "roles": {"reward": {"served_model": "rm", "endpoints": [url]}}},
                         benchmark="pairwise", data=data, out=tmp_path / "api")  # fmt: skip
        proc = cli("run", "--endpoint", url, "--served-model", "rm", "--benchmark", "pairwise", "--data", str(data),
                   "--out", str(tmp_path / "cli"))  # fmt: skip
    said = str(raised.value)
    assert "\n" not in said and f"{url}/v1/models: HTTP 404: <!DOCTYPE HTML> <html" in said, said
    assert "Error code: 404" in said
    assert f"{url}/v1/models: HTTP 404" in one_error_line(proc, 1)
