"""A role's HTTP session (aiohttp, shared by the scoring path and httpx clients) against real loopback servers:
keep-alive, TLS, errors, interim 1xx answers, dropped connections, redirects, proxies; and vLLM prompt log-prob
parsing."""

from __future__ import annotations

import asyncio
import json
import shutil
import socket
import ssl
import subprocess
from pathlib import Path

import httpx
import pytest

from rmbench_client.backends.base import Endpoint
from rmbench_client.backends.session import Answer, Session
from rmbench_client.backends.transport import request_json
from rmbench_client.backends.vllm import token_logprobs
from rmbench_client.errors import EndpointError, RetryableError, SampleError, ShapeError


class Server:
    """Answers every request with `answer` (raw bytes after the head) and counts connections."""

    def __init__(self, answer: bytes, close_after: int | None = None, delay: float = 0.0) -> None:
        self.answer = answer
        self.close_after = close_after
        self.delay = delay
        self.connections = 0
        self.bodies: list[bytes] = []
        self.tls: ssl.SSLContext | None = None

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        """Requests of one connection, each answered by `respond` until it says to close."""
        self.connections += 1
        served = 0
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                length = next(
                    (int(x.split(b":")[1]) for x in head.split(b"\r\n") if x.lower().startswith(b"content-length")), 0
                )
                body = await reader.readexactly(length)
                self.bodies.append(body)
                served += 1
                if not await self.respond(body, served, writer):
                    break
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client left, or the test ended while a request was open
        finally:
            writer.close()

    async def respond(self, body: bytes, served: int, writer: asyncio.StreamWriter) -> bool:
        """Answer the connection's `served`-th request; False closes the connection."""
        await asyncio.sleep(self.delay)
        writer.write(self.answer)
        await writer.drain()
        return self.close_after is None or served < self.close_after

    async def __aenter__(self) -> str:
        self.server = await asyncio.start_server(self.handle, "127.0.0.1", 0, ssl=self.tls)
        scheme = "https" if self.tls else "http"
        return f"{scheme}://127.0.0.1:{self.server.sockets[0].getsockname()[1]}"

    async def __aexit__(self, *exc: object) -> None:
        self.server.close()
        await asyncio.sleep(0.01)  # the handlers see their connections end and close their side


OK = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 11\r\n\r\n{"a": [1]}\n'


def run(coro):  # noqa: ANN001, ANN201
    return asyncio.run(coro)


def session(verify: bool = True, read_timeout: float = 120.0) -> Session:
    return Session(verify, connect_timeout=10.0, read_timeout=read_timeout, connections=8)


def test_kept_alive_connection_is_reused_and_the_body_arrives():
    async def go() -> tuple[int, list[bytes], list[object]]:
        server = Server(OK)
        async with server as url, httpx.AsyncClient(transport=session().httpx_transport()) as client:
            answers = [(await client.post(url + "/x", content=b"hello")).json() for _ in range(3)]
        return server.connections, server.bodies, answers

    connections, bodies, answers = run(go())
    assert connections == 1 and bodies == [b"hello"] * 3 and answers == [{"a": [1]}] * 3


def test_send_skips_httpx_objects_and_speaks_the_same_http():
    """`send` (the scoring path) reuses the connection, sends what a server needs, and maps errors as httpx does."""

    async def go() -> tuple[int, list[bytes], list[Answer], list[bytes]]:
        server = Server(OK)
        heads: list[bytes] = []
        handle = server.handle

        async def recording(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            original = reader.readuntil

            async def readuntil(separator: bytes = b"\n") -> bytes:
                head = await original(separator)
                heads.append(head)
                return head

            reader.readuntil = readuntil  # type: ignore[method-assign]
            await handle(reader, writer)

        server.handle = recording  # type: ignore[method-assign]
        transport = session()
        async with server as url:
            target = httpx.URL(url + "/pooling?x=1")
            answers = [await transport.send("POST", target, {"Authorization": "Bearer k"}, b"hi") for _ in range(2)]
            answers.append(await transport.send("GET", target, {}, None))
        await transport.aclose()
        return server.connections, server.bodies, answers, heads

    connections, bodies, answers, heads = run(go())
    assert connections == 1 and bodies == [b"hi", b"hi", b""]
    assert [(a.status, a.content) for a in answers] == [(200, b'{"a": [1]}\n')] * 3
    assert dict(answers[0].headers)[b"content-type"] == b"application/json"
    first = heads[0].decode().split("\r\n")
    assert first[0] == "POST /pooling?x=1 HTTP/1.1" and "Authorization: Bearer k" in first
    assert any(line.startswith("Host: 127.0.0.1:") for line in first) and "Content-Length: 2" in first
    assert not any(line.startswith("Content-Length") for line in heads[2].decode().split("\r\n"))

    async def refused() -> None:
        with socket.socket() as s:
            s.bind(("127.0.0.1", 0))
            free = s.getsockname()[1]
        role = session()
        try:
            await role.send("GET", httpx.URL(f"http://127.0.0.1:{free}/x"), {}, None)
        finally:
            await role.aclose()

    with pytest.raises(httpx.ConnectError):
        run(refused())


def test_chunked_answer_is_decoded():
    chunked = b'HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\n4\r\n{"a"\r\n5\r\n: 2}\n\r\n0\r\n\r\n'

    async def go() -> object:
        async with Server(chunked) as url, httpx.AsyncClient(transport=session().httpx_transport()) as client:
            return (await client.get(url + "/x")).json()

    assert run(go()) == {"a": 2}


def test_a_connection_the_server_closed_is_replaced():
    async def go() -> tuple[int, list[int]]:
        server = Server(OK, close_after=1)
        async with server as url, httpx.AsyncClient(transport=session().httpx_transport()) as client:
            statuses = []
            for _ in range(3):
                statuses.append((await client.get(url + "/x")).status_code)
                await asyncio.sleep(0.05)  # the server's close reaches the client first
        return server.connections, statuses

    connections, statuses = run(go())
    assert statuses == [200, 200, 200] and connections == 3


def self_signed(tmp_path: Path) -> ssl.SSLContext:
    """A server TLS context with a fresh self-signed certificate (Debian's openssl)."""
    if shutil.which("openssl") is None:
        pytest.skip("openssl is not installed")
    key, cert = tmp_path / "key.pem", tmp_path / "cert.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )  # fmt: skip
    ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
    ctx.load_cert_chain(cert, key)
    return ctx


def test_tls_is_verified_unless_the_role_says_not_to(tmp_path: Path):
    """verify_tls true refuses a self-signed certificate; false talks to the server over TLS."""

    async def go(verify: bool) -> object:
        server = Server(OK)
        server.tls = self_signed(tmp_path)
        role = session(verify)
        try:
            async with server as url:
                return json.loads((await role.send("POST", url + "/x", {}, b"hello")).content)
        finally:
            await role.aclose()

    assert run(go(False)) == {"a": [1]}
    with pytest.raises(httpx.ConnectError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        run(go(True))


def test_refused_and_slow_servers_raise_httpx_errors():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        free = s.getsockname()[1]

    async def refused() -> None:
        async with httpx.AsyncClient(transport=session().httpx_transport()) as client:
            await client.get(f"http://127.0.0.1:{free}/x")

    with pytest.raises(httpx.TransportError):  # httpx-aiohttp names it ConnectTimeout; retried all the same
        run(refused())

    async def slow() -> None:
        role = session(read_timeout=0.1)
        try:
            async with Server(OK, delay=1.0) as url:
                await role.send("GET", url + "/x", {}, None)
        finally:
            await role.aclose()

    with pytest.raises(httpx.ReadTimeout):
        run(slow())


def entries(values: list[object], ids: list[int]) -> list[object]:
    """vLLM's prompt_logprobs for `ids`, the first `len(values)` positions after the first given."""
    given = zip(ids[1 : 1 + len(values)], values, strict=True)
    return [None] + [{str(t): {"logprob": v, "rank": 1, "decoded_token": None}} for t, v in given]


def test_token_logprobs_reads_the_actual_tokens():
    assert token_logprobs([5, 6, 7], entries([-0.5, -1.5], [5, 6, 7]), "w") == [-0.5, -1.5]


@pytest.mark.parametrize(
    ("values", "ids", "error", "message"),
    [
        ([-0.5, -9999.0], [5, 6, 7], SampleError, "non-finite log-prob"),  # vLLM's stand-in for -inf
        ([-0.5, float("nan")], [5, 6, 7], SampleError, "non-finite log-prob"),
        ([-0.5, True], [5, 6, 7], ShapeError, "not a number"),
        ([-0.5, 0.25], [5, 6, 7], ShapeError, "above 0"),
        ([-0.5, "x"], [5, 6, 7], ShapeError, "not a number"),
        ([-0.5], [5, 6, 7], ShapeError, "2 entries for 3 tokens"),
    ],
)
def test_token_logprobs_refuses_what_cannot_be_scored(values, ids, error, message):
    with pytest.raises(error, match=message):
        token_logprobs(ids, entries(values, ids), "http://x/inference/v1/generate")


def test_token_logprobs_names_a_missing_token():
    wrong = entries([-0.5, -1.0], [5, 6, 8])
    with pytest.raises(ShapeError, match="no log-prob for token 7 at position 2"):
        token_logprobs([5, 6, 7], wrong, "w")


@pytest.mark.parametrize(
    ("answer", "error", "match"),
    [
        (b"HTTP/1.1 503 Busy\r\nretry-after: 2\r\ncontent-length: 4\r\n\r\nbusy", RetryableError, "HTTP 503: busy"),
        (b"HTTP/1.1 404 No\r\ncontent-length: 21\r\n\r\n" + b'{"error": "no model"}', EndpointError, "no model"),
        (b"HTTP/1.1 400 Bad\r\ncontent-length: 9\r\n\r\ntoo long!", SampleError, "HTTP 400: too long!"),
        (b"HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\n<html", ShapeError, "answer is not JSON"),
    ],
)
def test_errors_through_the_transports_send_are_those_through_httpx(answer, error, match):
    """The scoring path (`request_json` on an endpoint with the client's own transport) maps an error status as
    the httpx path does: the same error kinds, messages and Retry-After."""

    async def go() -> None:
        transport = session()
        try:
            async with Server(answer) as url, httpx.AsyncClient(transport=transport.httpx_transport()) as client:
                await request_json(Endpoint(url, "m", client, transport=transport), "POST", "/pooling", {"a": 1})
        finally:
            await transport.aclose()

    with pytest.raises(error, match=match) as info:
        run(go())
    assert type(info.value) is error
    if "503" in match:
        assert info.value.retry_after == 2.0


class EchoServer(Server):
    """Answers each request with its own body's length (so an answer given to another request shows), after
    interim 100 and 103 answers; `drop_second` closes a kept-alive connection on its second request, unanswered."""

    def __init__(self, interim: bytes = b"", drop_second: bool = False, answer: bytes | None = None) -> None:
        super().__init__(b"")
        self.interim, self.drop_second, self.fixed = interim, drop_second, answer

    async def respond(self, body: bytes, served: int, writer: asyncio.StreamWriter) -> bool:
        if self.drop_second and served == 2:
            return False
        text = self.fixed or json.dumps({"n": len(body)}).encode()
        ok = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(text)
        writer.write(self.interim + (text if self.fixed else ok + text))
        await writer.drain()
        return True


def on_endpoint(server: Server, calls: list[tuple[str, str, object]]) -> list[object]:
    """request_json of each (method, path, payload) on one endpoint with the role's session, in order."""

    async def go() -> list[object]:
        role = session()
        try:
            async with server as url, httpx.AsyncClient(transport=role.httpx_transport()) as client:
                ep = Endpoint(url, "m", client, transport=role)
                return [await request_json(ep, method, path, payload) for method, path, payload in calls]
        finally:
            await role.aclose()

    return run(go())


def test_interim_1xx_answers_never_shift_answers_between_requests():
    """100 Continue and 103 Early Hints before every answer: each request still reads its own answer."""
    interim = b"HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 103 Early Hints\r\nLink: </a.css>; rel=preload\r\n\r\n"
    server = EchoServer(interim)
    payloads = ["a", "bbbb", "cc", "dddddddd"]
    answers = on_endpoint(server, [("POST", "/pooling", p) for p in payloads])
    assert answers == [{"n": len(json.dumps(p))} for p in payloads] and server.connections == 1


def test_a_request_dropped_on_a_reused_connection_is_one_counted_failure():
    """The server closes a kept-alive connection on the next request without answering: that request fails once
    (RetryableError, for the pool's counted, backed-off retries) and was sent once, not on every idle connection."""
    server = EchoServer(drop_second=True)
    with pytest.raises(RetryableError):
        on_endpoint(server, [("POST", "/pooling", "first"), ("POST", "/pooling", "second")])
    assert server.bodies == [b'"first"', b'"second"']


def test_a_redirect_is_an_error_naming_its_location():
    redirect = (
        b"HTTP/1.1 308 Permanent Redirect\r\nlocation: https://elsewhere:8000/pooling\r\ncontent-length: 0\r\n\r\n"
    )
    with pytest.raises(EndpointError, match=r"HTTP 308 redirect to https://elsewhere:8000/pooling"):
        on_endpoint(EchoServer(answer=redirect), [("POST", "/pooling", {"a": 1})])


def test_conflicting_content_lengths_are_refused():
    twice = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\ncontent-length: 12\r\n\r\n{}"
    with pytest.raises(RetryableError, match="RemoteProtocolError"):
        on_endpoint(EchoServer(answer=twice), [("POST", "/pooling", {"a": 1})])


def test_requests_go_through_the_proxy_the_environment_names(monkeypatch):
    """HTTP_PROXY is honoured (here a forward proxy that also sends 1xx answers), and NO_PROXY bypasses it."""
    from forward_proxy import ForwardProxy

    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = ForwardProxy()
    with proxy as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        assert on_endpoint(EchoServer(), [("POST", "/pooling", "xyz")]) == [{"n": 5}]
        assert proxy.forwarded == 1
        monkeypatch.setenv("NO_PROXY", "127.0.0.1")
        assert on_endpoint(EchoServer(), [("POST", "/pooling", "xyz")]) == [{"n": 5}]
        assert proxy.forwarded == 1


@pytest.mark.parametrize(("key", "message"), [("abc\n", "line break"), ("ab\rc", "line break"), ("kéy✓", "Latin-1")])
def test_an_api_key_that_cannot_be_a_header_is_a_config_error(monkeypatch, key, message):
    from rmbench_client.config.schema import RoleConfig
    from rmbench_client.errors import ConfigError

    monkeypatch.setenv("MY_KEY", key)
    role = RoleConfig(served_model="m", endpoints=["http://127.0.0.1:1"], api_key_env="MY_KEY")
    with pytest.raises(ConfigError, match=f"role judge: MY_KEY holds .*{message}") as info:
        role.api_key("judge")
    assert key not in str(info.value)


def test_the_roles_httpx_client_uses_the_proxy_too(monkeypatch):
    """The judge's openai client and the probes speak httpx on the role's session: HTTP_PROXY holds for them too."""
    from forward_proxy import ForwardProxy

    from rmbench_client.config.schema import ClientOptions, RoleConfig
    from rmbench_client.model_kinds.factory import make_client, make_transport

    for name in ("NO_PROXY", "no_proxy", "HTTPS_PROXY", "https_proxy", "ALL_PROXY", "all_proxy"):
        monkeypatch.delenv(name, raising=False)
    proxy = ForwardProxy()

    async def go(url: str) -> object:
        role = RoleConfig(served_model="m", endpoints=[url])
        transport = make_transport(role, ClientOptions())
        try:
            async with make_client(role, ClientOptions(), transport) as client:
                return (await client.post(url + "/v1/x", content=b'"abc"')).json()
        finally:
            await transport.aclose()

    async def served() -> object:
        async with EchoServer() as url:
            return await go(url)

    with proxy as proxy_url:
        monkeypatch.setenv("HTTP_PROXY", proxy_url)
        assert run(served()) == {"n": 5} and proxy.forwarded == 1


class TrickleServer(Server):
    """Answers 200 with a long JSON body, one byte every `every` seconds: each byte restarts a read timeout."""

    def __init__(self, every: float) -> None:
        super().__init__(b"")
        self.every = every

    async def respond(self, body: bytes, served: int, writer: asyncio.StreamWriter) -> bool:
        content = json.dumps({"data": [0.5] * 200}).encode()
        writer.write(b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: %d\r\n\r\n" % len(content))
        for i in range(len(content)):
            writer.write(content[i : i + 1])
            await writer.drain()
            await asyncio.sleep(self.every)
        return True


def test_a_trickled_answer_ends_at_the_request_deadline_on_both_paths():
    """The scoring path (the session's `send`) and the httpx clients on it (the judge's openai client, the probes)
    both end a request at client.request_timeout, though its bytes keep coming faster than the read timeout."""
    from rmbench_client.config.schema import ClientOptions, RoleConfig
    from rmbench_client.model_kinds.factory import make_client, make_transport

    options = ClientOptions(read_timeout=0.5, request_timeout=0.6)

    async def go(use_httpx: bool) -> float:
        async with TrickleServer(every=0.05) as url:
            role = RoleConfig(served_model="m", endpoints=[url])
            transport = make_transport(role, options)
            started = asyncio.get_running_loop().time()
            try:
                async with make_client(role, options, transport) as client:
                    if use_httpx:
                        await client.post(url + "/v1/chat/completions", content=b"{}")
                    else:
                        await request_json(Endpoint(url, "m", client, transport=transport), "POST", "/pooling", {})
            except (httpx.ReadTimeout, RetryableError) as exc:
                assert "no complete answer within 0.6s (client.request_timeout)" in str(exc)
                return asyncio.get_running_loop().time() - started
            finally:
                await transport.aclose()
            raise AssertionError("the trickle was read to its end")

    for use_httpx in (False, True):
        assert run(go(use_httpx)) < 3.0  # the whole answer would take 0.05 s x ~800 bytes = 40 s


def test_an_answer_cut_off_in_transit_is_retried():
    """A body shorter than its Content-Length (the connection closed midway) fails its framing: a retried failure,
    where a complete body that is not JSON fails its prompt at once."""
    cut = b'HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 40\r\n\r\n{"data": [1,'

    async def go() -> None:
        transport = session()
        try:
            async with Server(cut, close_after=1) as url, httpx.AsyncClient(transport=transport.httpx_transport()) as c:
                await request_json(Endpoint(url, "m", c, transport=transport), "POST", "/pooling", {"a": 1})
        finally:
            await transport.aclose()

    with pytest.raises(RetryableError):
        run(go())


def test_httpx_clients_on_the_session_follow_the_roles_tls_setting(tmp_path: Path):
    """The probes' and the judge's httpx client run on the role's TLS context: verify_tls false reaches a
    self-signed server, true refuses it."""

    async def go(verify: bool) -> object:
        server = Server(OK)
        server.tls = self_signed(tmp_path)
        role = session(verify)
        try:
            async with server as url, httpx.AsyncClient(transport=role.httpx_transport(url)) as client:
                return (await client.post(url + "/x", content=b"hello")).json()
        finally:
            await role.aclose()

    assert run(go(False)) == {"a": [1]}
    with pytest.raises(httpx.TransportError, match="CERTIFICATE_VERIFY_FAILED|certificate verify failed"):
        run(go(True))
