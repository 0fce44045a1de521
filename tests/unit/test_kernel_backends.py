"""The backend kernels submit through is started once per loop and configuration, and
every caller gets it only once it has started: two kernels started at once right after the
server's start both submit to a backend whose caches are synced."""

from __future__ import annotations

import asyncio
from types import SimpleNamespace
from typing import Any

import pytest
from traitlets.config import Config

from jupyter_pai.config import PAIConfig
from jupyter_pai.kernels import backends


class SlowStart:
    def __init__(self, fail: bool = False) -> None:
        self.started = False
        self.starts = 0
        self.fail = fail

    async def start(self) -> None:
        self.starts += 1
        await asyncio.sleep(0.2)  # a watch cache syncing
        if self.fail:
            raise RuntimeError("cluster unreachable")
        self.started = True

    async def close(self) -> None:
        pass


def parent() -> Any:
    return SimpleNamespace(config=Config({"PAIConfig": {"backend": "local"}}))


async def test_callers_at_once_share_one_start_and_wait_for_it(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[SlowStart] = []

    def make_backend(self: PAIConfig) -> SlowStart:
        made.append(SlowStart())
        return made[-1]

    monkeypatch.setattr(PAIConfig, "make_backend", make_backend)

    async def started_when_returned() -> tuple[Any, bool]:
        backend, _ = await backends.backend_for(parent())
        return backend, backend.started

    try:
        got = await asyncio.gather(*(started_when_returned() for _ in range(3)))
        assert len(made) == 1 and made[0].starts == 1
        assert got == [(made[0], True)] * 3
    finally:
        await backends.close_backends()


async def test_a_failed_start_is_tried_again_by_the_next_caller(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    made: list[SlowStart] = []

    def make_backend(self: PAIConfig) -> SlowStart:
        made.append(SlowStart(fail=not made))
        return made[-1]

    monkeypatch.setattr(PAIConfig, "make_backend", make_backend)
    try:
        with pytest.raises(RuntimeError, match="cluster unreachable"):
            await backends.backend_for(parent())
        backend, _ = await backends.backend_for(parent())
        assert backend is made[1] and made[1].started
    finally:
        await backends.close_backends()
