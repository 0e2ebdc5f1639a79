"""A loopback TCP load balancer (layer 4) whose backend the test switches: each new connection is piped, byte for
byte, to the backend of the moment; connections made before a switch stay with the backend they reached, unless the
switch drops them (a restart behind the address). What a client sees is what it sees of a rolling update behind
one address: the same URL, another server, reached only through a new connection. Serves on 127.0.0.1 in a thread
while the test holds it.
"""

from __future__ import annotations

import asyncio
import contextlib
import threading


class TcpSwitch:
    def __init__(self, backend: int) -> None:
        self.backend = backend  # the port new connections go to
        self.port = 0
        self.connections = 0  # accepted so far
        self._loop = asyncio.new_event_loop()
        self._ready = threading.Event()
        self._pipes: set[asyncio.StreamWriter] = set()
        self._thread = threading.Thread(target=self._serve, daemon=True)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> TcpSwitch:
        self._thread.start()
        if not self._ready.wait(10):
            raise RuntimeError("the TCP switch did not start")
        return self

    def __exit__(self, *exc: object) -> None:
        self._loop.call_soon_threadsafe(self._stop.set)
        self._thread.join(10)

    def switch(self, backend: int, drop: bool = False) -> None:
        """New connections go to `backend` from now on; with `drop`, the open ones are closed too."""
        self.backend = backend
        if drop:
            done = threading.Event()

            def close_all() -> None:
                for writer in list(self._pipes):
                    writer.transport.abort()
                done.set()

            self._loop.call_soon_threadsafe(close_all)
            done.wait(10)

    def _serve(self) -> None:
        asyncio.set_event_loop(self._loop)
        self._loop.run_until_complete(self._main())
        self._loop.close()

    async def _main(self) -> None:
        self._stop = asyncio.Event()
        server = await asyncio.start_server(self._handle, "127.0.0.1", 0)
        self.port = server.sockets[0].getsockname()[1]
        self._ready.set()
        async with server:
            await self._stop.wait()
            for writer in list(self._pipes):
                writer.transport.abort()
        others = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in others:  # the pipes' handlers: ended here, not left pending when the loop closes
            task.cancel()
        await asyncio.gather(*others, return_exceptions=True)

    async def _handle(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.connections += 1
        try:
            up_reader, up_writer = await asyncio.open_connection("127.0.0.1", self.backend)
        except OSError:
            writer.transport.abort()
            return
        self._pipes |= {writer, up_writer}
        try:
            await asyncio.gather(self._pipe(reader, up_writer), self._pipe(up_reader, writer))
        finally:
            self._pipes -= {writer, up_writer}
            for w in (writer, up_writer):
                w.transport.abort()

    @staticmethod
    async def _pipe(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        with contextlib.suppress(ConnectionError, OSError):
            while chunk := await reader.read(65536):
                writer.write(chunk)
                await writer.drain()
        writer.transport.abort()  # one side ended: the whole connection ends, as a balancer's does
