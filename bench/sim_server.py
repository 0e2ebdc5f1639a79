"""Simulated vLLM endpoints for the bench's scale step (P8): never a stand-in for vLLM in tests.

    .venv/bin/python bench/sim_server.py --ports 9001,9002 --kind reward

A small asyncio HTTP/1.1 server on loopback answering the shapes vLLM 0.32 sends (`/health`, `/v1/models`,
`/tokenize`, `/pooling`, `/v1/completions` with prompt log-probs, `/inference/v1/generate`), each answer after a
latency drawn from a GPU-like model (bench/constants.py SIM_*):

    latency = lognormal(median SIM_MEDIAN_S, sigma SIM_SIGMA) + SIM_PER_SEQUENCE_S * sequences in the request

Requests are served concurrently (a GPU batches them), so one endpoint's throughput is its client's concurrency
divided by the latency. Numbers are deterministic functions of the input (a reward from the text's length, a
log-prob per token), so repeated runs agree. Tokenization is one token per UTF-8 byte (ids 3..258) after BOS 1.
Each scoring answer carries `sim_service_s` (and the header `x-sim-service-s`): the seconds the server held the
request, so the bench can tell the client's own share of each request's time from the server's.
"""

from __future__ import annotations

import argparse
import asyncio
import random
import signal

import constants as B
import orjson

BOS = 1


def tokens(text: str) -> list[int]:
    return [BOS] + [b + 3 for b in text.encode("utf-8")]


def render(messages: list[dict[str, str]], generation_prompt: bool) -> str:
    """The simulated chat template (the bench passes the same as a Jinja file to the client)."""
    out = "".join(f"<{m['role']}>{m['content']}</s>" for m in messages)
    return out + ("<assistant>" if generation_prompt else "")


def reward(text: str) -> float:
    return (len(text) % 997) / 100.0


def logprob(token: int, position: int) -> float:
    return -((token * 31 + position) % 97) / 10.0 - 0.01


class Sim:
    def __init__(self, model: str, seed: int) -> None:
        self.model = model
        self.rng = random.Random(seed)

    def latency(self, sequences: int) -> float:
        return B.SIM_MEDIAN_S * self.rng.lognormvariate(0.0, B.SIM_SIGMA) + B.SIM_PER_SEQUENCE_S * sequences

    def answer(self, method: bytes, path: bytes, body: bytes) -> tuple[int, object, int]:
        """(status, JSON answer, sequences computed)."""
        if path == b"/health":
            return 200, None, 0
        if path == b"/v1/models":
            return 200, {"object": "list", "data": [{"id": self.model, "root": self.model, "max_model_len": 4096}]}, 0
        req = orjson.loads(body) if body else {}
        if path == b"/tokenize":
            if "messages" in req:
                # vLLM's chat path adds no special tokens: BOS comes from the template, and this one writes none
                ids = tokens(render(req["messages"], req.get("add_generation_prompt", True)))[1:]
            else:
                ids = tokens(req["prompt"])
                if not req.get("add_special_tokens", True):
                    ids = ids[1:]
            return 200, {"count": len(ids), "max_model_len": 4096, "tokens": ids}, 0
        if path == b"/pooling":
            inputs = req["input"]
            if inputs and isinstance(inputs[0], int):
                inputs = [inputs]
            data = [
                {"index": i, "object": "pooling", "data": [reward(x if isinstance(x, str) else str(len(x)))]}
                for i, x in enumerate(inputs)
            ]
            return 200, {"object": "list", "model": self.model, "data": data}, len(inputs)
        if path == b"/v1/completions":
            prompts = req["prompt"]
            seqs = [p if isinstance(p, list) else tokens(p)[1:] for p in prompts]
            choices = [
                {"index": i, "text": "", "prompt_token_ids": s if req.get("return_token_ids") else None,
                 "prompt_logprobs": [None] + [{str(t): {"logprob": logprob(t, j), "rank": 1, "decoded_token": "x"}}
                                              for j, t in enumerate(s[1:], 1)]}
                for i, s in enumerate(seqs)
            ]  # fmt: skip
            return 200, {"object": "text_completion", "model": self.model, "choices": choices}, len(seqs)
        if path == b"/v1/completions/render":
            prompts = req["prompt"]
            out = [{"token_ids": tokens(p)[1:], "sampling_params": {}} for p in prompts]
            return 200, out, 0
        if path == b"/inference/v1/generate":
            s = req["token_ids"]
            lps = [None] + [{str(t): {"logprob": logprob(t, j), "rank": 1, "decoded_token": None}}
                            for j, t in enumerate(s[1:], 1)]  # fmt: skip
            return 200, {"request_id": "x", "model": self.model, "prompt_logprobs": lps, "choices": []}, 1
        return 404, {"error": {"message": f"no route {path.decode()}", "code": 404}}, 0

    async def handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        try:
            while True:
                head = await reader.readuntil(b"\r\n\r\n")
                lines = head.split(b"\r\n")
                method, path, _ = lines[0].split(b" ", 2)
                length = 0
                for line in lines[1:]:
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                body = await reader.readexactly(length) if length else b""
                status, answer, sequences = self.answer(method, path, body)
                service = self.latency(sequences) if sequences else 0.0
                if service:
                    await asyncio.sleep(service)
                if isinstance(answer, dict) and sequences:
                    answer["sim_service_s"] = service  # how long the server held it (the bench's queue share)
                payload = orjson.dumps(answer) if answer is not None else b""
                writer.write(
                    b"HTTP/1.1 %d X\r\ncontent-type: application/json\r\ncontent-length: %d\r\n"
                    b"x-sim-service-s: %.6f\r\n\r\n" % (status, len(payload), service) + payload
                )
        except (asyncio.IncompleteReadError, ConnectionError, asyncio.CancelledError):
            pass  # the client left, or the server is stopping: nothing to report
        finally:
            writer.close()


async def serve(ports: list[int], model: str) -> None:
    servers = [await asyncio.start_server(Sim(model, p).handle, "127.0.0.1", p) for p in ports]
    stop = asyncio.Event()
    loop = asyncio.get_running_loop()
    for sig in (signal.SIGTERM, signal.SIGINT):
        loop.add_signal_handler(sig, stop.set)
    print("ready", flush=True)
    await stop.wait()
    for s in servers:
        s.close()


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--ports", required=True, help="comma-separated loopback ports, one endpoint each")
    parser.add_argument("--model", default="sim-reward")
    args = parser.parse_args()
    asyncio.run(serve([int(p) for p in args.ports.split(",")], args.model))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
