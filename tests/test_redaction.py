"""Credentials of URLs kept out of what is said and written (rmbench_client/redaction.py): a URL's userinfo and
secret query parameters masked wherever it is shown, in any message, in config.yaml; an endpoint prints masked and
its requests carry the credentials; a role given both URL credentials and a key is one error line. The whole run
(files, report, stdout and stderr at -vv, umask): tests/test_faults.py."""

from __future__ import annotations

import base64
import json
from pathlib import Path

import httpx
import yaml
from helpers_http import endpoint

from rmbench_client.cli import main
from rmbench_client.config.loading import config_of, dump_config, load_config
from rmbench_client.errors import EndpointError
from rmbench_client.redaction import hidden, masked_url, remember_url


def test_a_urls_userinfo_and_secret_parameters_are_masked_and_nothing_else():
    assert masked_url("http://alice:pw@gateway:8000") == "http://<secret>@gateway:8000"
    assert masked_url("https://token@host/v1?x=1") == "https://<secret>@host/v1?x=1"
    assert masked_url("http://u:p@ss@host/a@b") == "http://<secret>@host/a@b"  # an unescaped @ in the password
    assert masked_url("http://host:8000/path") == "http://host:8000/path"
    assert (
        masked_url("https://mlflow/x?api_key=abc&run=3&token=t%20t#f")
        == "https://mlflow/x?api_key=<secret>&run=3&token=<secret>#f"
    )
    assert masked_url("http://dash:8265/?X-Amz-Signature=deadbeef") == "http://dash:8265/?X-Amz-Signature=<secret>"
    said = "cannot reach http://bob:hunter2@127.0.0.1:9/pooling; also https://svc?key=k1 (and admin@example.com)"
    assert (
        hidden(said)
        == "cannot reach http://<secret>@127.0.0.1:9/pooling; also https://svc?key=<secret> (and admin@example.com)"
    )


def test_a_remembered_urls_password_is_masked_even_alone_or_as_its_basic_header():
    remember_url("http://carol:Sesame-0pen-4218@gw")
    basic = base64.b64encode(b"carol:Sesame-0pen-4218").decode()
    echoed = f"bad request: password Sesame-0pen-4218, header Basic {basic}"
    assert hidden(echoed) == "bad request: password <secret>, header Basic <secret>"
    assert hidden("to http://carol:Sesame-0pen-4218@gw/x failed") == "to http://<secret>@gw/x failed"  # the URL whole
    assert "Sesame-0pen-4218" not in str(EndpointError(echoed))  # every deliberate error's message


def test_an_endpoint_prints_masked_and_config_yaml_holds_its_url_masked():
    url = "http://dave:pw-77f0@127.0.0.1:8000"
    ep = endpoint(url, "m", httpx.AsyncClient())
    assert ep.url == url and str(ep) == ep.shown == "http://<secret>@127.0.0.1:8000"
    data = {"model": "m", "roles": {"reward": {"served_model": "m", "endpoints": [url, "http://127.0.0.1:1"]}}}
    written = dump_config(config_of(data, None, "test"))
    assert "pw-77f0" not in written and "dave" not in written
    assert yaml.safe_load(written)["roles"]["reward"]["endpoints"] == [
        "http://<secret>@127.0.0.1:8000",
        "http://127.0.0.1:1",
    ]


def test_url_credentials_and_a_key_together_are_one_error_line(tmp_path: Path, monkeypatch, capsys):
    monkeypatch.setenv("RMBENCH_API_KEY", "sk-test-0123456789")
    data = tmp_path / "pairs.jsonl"
    data.write_text(json.dumps({"prompt": "Q?", "chosen": "A.", "rejected": "B."}) + "\n")
    cfg = {"benchmark": "pairwise", "model": "m",
           "roles": {"reward": {"served_model": "m", "endpoints": ["http://erin:pw-31ab@127.0.0.1:9"]}}}  # fmt: skip
    (tmp_path / "c.yaml").write_text(yaml.safe_dump(cfg))
    assert load_config(tmp_path / "c.yaml").roles["reward"].urls()  # a valid config: the conflict is found at start
    code = main(["run", "--config", str(tmp_path / "c.yaml"), "--data", str(data), "--out", str(tmp_path / "o")])
    err = capsys.readouterr().err.strip().splitlines()
    assert code == 2 and err[-1].startswith(
        "error: role reward: endpoint http://<secret>@127.0.0.1:9 carries credentials"
    )
    assert "pw-31ab" not in "\n".join(err) and "RMBENCH_API_KEY" in err[-1]
