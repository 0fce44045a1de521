"""A server-sent-events reader over a plain socket, for the change stream's tests: it speaks
HTTP/1.1 itself (chunked answers included) so a test can stop reading at any moment and
close the connection, as a browser tab that goes away does."""

from __future__ import annotations

import asyncio
import json
import time
from typing import Any


class EventStream:
    def __init__(self, reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        self.reader, self.writer = reader, writer
        self.status = 0
        self.headers: dict[str, str] = {}
        self._buffer = ""
        self.events: list[tuple[str, Any]] = []

    @classmethod
    async def open(cls, port: int, path: str, headers: dict[str, str]) -> EventStream:
        reader, writer = await asyncio.open_connection("127.0.0.1", port)
        lines = [f"GET {path} HTTP/1.1", f"Host: 127.0.0.1:{port}", "Accept: text/event-stream"]
        lines += [f"{k}: {v}" for k, v in headers.items()]
        writer.write(("\r\n".join(lines) + "\r\n\r\n").encode())
        await writer.drain()
        stream = cls(reader, writer)
        status = await reader.readline()
        stream.status = int(status.split()[1])
        while (line := (await reader.readline()).decode().strip()) != "":
            name, _, value = line.partition(":")
            stream.headers[name.strip().lower()] = value.strip()
        return stream

    async def _chunk(self) -> str:
        if self.headers.get("transfer-encoding") != "chunked":
            data = await self.reader.read(65536)
            if not data:
                raise EOFError("the stream ended")
            return data.decode()
        size = int((await self.reader.readline()).strip() or b"0", 16)
        if size == 0:
            raise EOFError("the stream ended")
        data = await self.reader.readexactly(size + 2)
        return data[:-2].decode()

    async def next(self) -> tuple[str, Any]:
        """The next event as (name, parsed data); comments (keep-alives) are skipped."""
        while "\n\n" not in self._buffer:
            self._buffer += await self._chunk()
        block, self._buffer = self._buffer.split("\n\n", 1)
        name, data = "message", ""
        for line in block.splitlines():
            if line.startswith("event:"):
                name = line[6:].strip()
            elif line.startswith("data:"):
                data += line[5:].strip()
        if not data and name == "message":
            return await self.next()
        event = (name, json.loads(data) if data else None)
        self.events.append(event)
        return event

    async def until(self, what: str, check: Any, timeout: float = 60) -> tuple[str, Any]:
        """Read until an event satisfies ``check(name, data)``."""
        deadline = time.monotonic() + timeout
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                raise AssertionError(f"no event {what} in {timeout}s; got {self.events}")
            try:
                event = await asyncio.wait_for(self.next(), left)
            except TimeoutError:
                raise AssertionError(f"no event {what} in {timeout}s; got {self.events}") from None
            if check(*event):
                return event

    async def close(self) -> None:
        self.writer.close()
        try:
            await self.writer.wait_closed()
        except ConnectionError:
            pass
