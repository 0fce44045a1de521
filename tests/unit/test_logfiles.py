"""Reading task logs: last N lines, byte ranges, follow, and secrets redacted wherever the
file is cut (chunk boundaries, range ends)."""

from __future__ import annotations

import asyncio
from pathlib import Path

import pytest

from jupyter_pai.backends import logfiles
from jupyter_pai.backends.logfiles import stream_file, tail_offset
from jupyter_pai.backends.logredaction import LogSecrets
from tests.secretlogs import TAILS

SECRET = "s3cr3t-value"


def write(tmp_path: Path, data: bytes) -> Path:
    path = tmp_path / "task.log"
    path.write_bytes(data)
    return path


async def read(path: Path, **kwargs: object) -> bytes:
    if isinstance(kwargs.get("secrets"), list):
        kwargs["secrets"] = LogSecrets.of(kwargs["secrets"])  # type: ignore[arg-type]
    return b"".join([chunk async for chunk in stream_file(path, **kwargs)])  # type: ignore[arg-type]


def append(path: Path, data: bytes) -> None:
    with open(path, "ab") as f:
        f.write(data)


def tail(path: Path, lines: int) -> bytes:
    return path.read_bytes()[tail_offset(path, lines) :]


class Follower:
    """Follows ``path`` in a task of its own; :meth:`end` says the writer has finished and
    waits for the follower to read the rest."""

    def __init__(self, path: Path, secrets: list[str] | None = None) -> None:
        self.done = asyncio.Event()
        self.got: list[bytes] = []
        known = LogSecrets.of(secrets) if secrets else None
        self.task = asyncio.create_task(self._consume(path, known))

    @property
    def text(self) -> bytes:
        return b"".join(self.got)

    async def _finished(self) -> bool:
        return self.done.is_set()

    async def _consume(self, path: Path, secrets: LogSecrets | None) -> None:
        async for chunk in stream_file(path, follow=True, finished=self._finished, secrets=secrets):
            self.got.append(chunk)

    async def end(self) -> bytes:
        self.done.set()
        await asyncio.wait_for(self.task, timeout=10)
        return self.text


# -- tail_offset -------------------------------------------------------------------------


@pytest.mark.parametrize(("data", "lines", "expected"), TAILS)
def test_tail_offset(tmp_path: Path, data: bytes, lines: int, expected: bytes) -> None:
    assert tail(write(tmp_path, data), lines) == expected


@pytest.mark.parametrize("chunk", [1, 2, 3, 5, 64 * 1024])
def test_tail_offset_across_chunk_boundaries(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(logfiles, "CHUNK", chunk)
    lines = [f"line {i} " + "y" * (i % 4) for i in range(40)]
    path = write(tmp_path, "\n".join(lines).encode() + b"\n")
    for n in (1, 2, 7, 39, 40, 41):
        assert tail(path, n) == "".join(f"{line}\n" for line in lines[-n:]).encode(), n


def test_tail_offset_of_a_long_line(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfiles, "CHUNK", 16)
    long = b"z" * 1000
    path = write(tmp_path, b"first\n" + long + b"\nlast\n")
    assert tail(path, 2) == long + b"\nlast\n"
    assert tail(path, 3) == path.read_bytes()


# -- stream_file: ranges ----------------------------------------------------------------------


DATA = b"".join(b"%03d some text\n" % i for i in range(200))


async def test_whole_file_and_ranges(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(logfiles, "CHUNK", 100)
    path = write(tmp_path, DATA)
    assert await read(path) == DATA
    assert await read(path, offset=37) == DATA[37:]
    assert await read(path, offset=37, limit=250) == DATA[37:287]
    assert await read(path, limit=1) == DATA[:1]
    assert await read(path, limit=0) == b""
    assert await read(path, offset=len(DATA)) == b""
    assert await read(path, offset=len(DATA) - 3, limit=50) == DATA[-3:]


async def test_missing_file_is_empty(tmp_path: Path) -> None:
    assert await read(tmp_path / "nothing.log") == b""

    async def done() -> bool:
        return True

    assert await read(tmp_path / "nothing.log", follow=True, finished=done) == b""


# -- stream_file: secrets ---------------------------------------------------------------------


@pytest.mark.parametrize("chunk", [1, 3, 7, 11, 64 * 1024])
async def test_secret_split_by_a_chunk_boundary_is_redacted(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(logfiles, "CHUNK", chunk)
    path = write(tmp_path, f"a {SECRET} b\nno secret here\nend {SECRET}".encode())
    out = await read(path, secrets=[SECRET])
    assert out == b"a ****** b\nno secret here\nend ******"


@pytest.mark.parametrize("chunk", [3, 64 * 1024])
async def test_no_range_reveals_part_of_a_secret(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(logfiles, "CHUNK", chunk)
    text = f"token is {SECRET} ok\nand {SECRET}\n".encode()
    path = write(tmp_path, text)
    pieces = [
        SECRET[i:j].encode() for i in range(len(SECRET)) for j in range(i + 4, len(SECRET) + 1)
    ]
    for offset in range(len(text) + 1):
        for limit in (None, 1, 3, 5, 12, 14, 30):
            out = await read(path, offset=offset, limit=limit, secrets=[SECRET])
            leaked = [p for p in pieces if p in out]
            assert not leaked, (offset, limit, out)
            assert len(out) <= len(text), (offset, limit, out)
    # Ranges that cut no secret are exact.
    assert await read(path, offset=0, limit=9, secrets=[SECRET]) == b"token is "
    assert await read(path, offset=21, limit=4, secrets=[SECRET]) == b" ok\n"
    assert await read(path, offset=0, limit=25, secrets=[SECRET]) == b"token is ****** ok\n"
    # A cut secret shows as the placeholder on both sides of the cut.
    assert await read(path, offset=0, limit=14, secrets=[SECRET]) == b"token is ******"
    assert await read(path, offset=14, limit=7, secrets=[SECRET]) == b"******"
    assert await read(path, offset=14, limit=11, secrets=[SECRET]) == b"****** ok\n"


async def test_several_secrets_longest_first(tmp_path: Path) -> None:
    path = write(tmp_path, b"abcdef and abc\n")
    assert await read(path, secrets=["abcdef", "abc"]) == b"****** and ******\n"


async def test_follow_yields_new_lines_until_finished(tmp_path: Path) -> None:
    path = write(tmp_path, b"one\n")
    follower = Follower(path, secrets=[SECRET])
    for _ in range(100):
        if follower.text == b"one\n":
            break
        await asyncio.sleep(0.02)
    assert follower.text == b"one\n"
    append(path, f"two {SECRET[:5]}".encode())  # half a secret, then a pause
    await asyncio.sleep(0.3)
    append(path, f"{SECRET[5:]}\nthree".encode())
    for _ in range(100):
        if b"two" in follower.text:
            break
        await asyncio.sleep(0.05)
    assert await follower.end() == b"one\ntwo ******\nthree"


async def test_follow_moves_to_a_rotated_file(tmp_path: Path) -> None:
    """A task restarted by a retry writes a new file under the same name."""
    path = write(tmp_path, b"attempt 0\n")
    follower = Follower(path)
    for _ in range(100):
        if follower.got:
            break
        await asyncio.sleep(0.02)
    path.rename(tmp_path / "task.0.log")
    path.write_bytes(b"attempt 1\n")
    for _ in range(100):
        if b"attempt 1" in follower.text:
            break
        await asyncio.sleep(0.05)
    assert await follower.end() == b"attempt 0\nattempt 1\n"


# -- stream_file: many-line secrets ------------------------------------------------------------

KEY = "KEYBEGIN\nQ1W2E3R4T5\nY6U7I8O9P0\nKEYEND"


async def test_follow_hides_a_many_line_secret_written_a_line_at_a_time(tmp_path: Path) -> None:
    """A program printing a private key line by line: the follower sees none of its lines,
    only the placeholder once the key is complete."""
    path = write(tmp_path, b"before\n")
    follower = Follower(path, secrets=[KEY])
    for line in (KEY + "\nafter\n").splitlines(keepends=True):
        append(path, line.encode())
        await asyncio.sleep(0.3)
        assert b"Q1W2" not in follower.text and b"Y6U7" not in follower.text, follower.got
    assert await follower.end() == b"before\n******\nafter\n"


@pytest.mark.parametrize("chunk", [1, 5, 16, 64 * 1024])
async def test_a_many_line_secret_across_chunks_is_hidden_whole(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, chunk: int
) -> None:
    monkeypatch.setattr(logfiles, "CHUNK", chunk)
    path = write(tmp_path, f"a\n{KEY}\nb\n{KEY}".encode())
    assert await read(path, secrets=[KEY]) == b"a\n******\nb\n******"
    assert await read(path, offset=3, limit=20, secrets=[KEY]) == b"******"
    for lines in range(7):
        out = await read(path, offset=tail_offset(path, lines), secrets=[KEY])
        assert b"Q1W2" not in out and b"P0" not in out and b"KEYEND" not in out, (lines, out)
