"""A follow of a container that has not started yet (the kubelet's 400 "waiting to
start") begins with its first line once it starts, instead of an empty answer; a
container that never starts ends the follow empty after the wait."""

from __future__ import annotations

from collections.abc import AsyncIterator
from typing import Any

import pytest

from jupyter_pai.backends import logredaction
from jupyter_pai.backends.kubernetes import logs
from jupyter_pai.backends.kubernetes.rest import ApiError


class Content:
    def __init__(self, data: list[bytes]) -> None:
        self.data = data

    async def iter_any(self) -> AsyncIterator[bytes]:
        for chunk in self.data:
            yield chunk


class Response:
    def __init__(self, data: list[bytes]) -> None:
        self.content = Content(data)

    def release(self) -> None:
        pass


class WaitingThenStarted:
    """pods/log as the API server answers it: 400 while the container waits."""

    def __init__(self, waits: int) -> None:
        self.waits = waits
        self.asked: list[dict[str, Any]] = []

    async def open(self, method: str, url: str, **kw: Any) -> Response:
        self.asked.append(kw["query"])
        if len(self.asked) <= self.waits:
            raise ApiError(400, "BadRequest", 'container "main" is waiting to start')
        return Response([b"first line\n", b"second line\n"])


async def follow(rest: WaitingThenStarted) -> list[bytes]:
    """What a follow of pod-0's log yields, from its first ask to its end."""
    chunks = logs._once_started(
        rest,  # type: ignore[arg-type]
        "alice",
        "pod-0",
        None,
        None,
        logredaction.LogSecrets(),
    )
    return [chunk async for chunk in chunks]


async def test_a_follow_starts_with_the_first_line_once_the_container_starts(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logs, "START_POLL", 0.01)
    rest = WaitingThenStarted(waits=3)
    got = await follow(rest)
    assert b"".join(got) == b"first line\nsecond line\n"
    assert len(rest.asked) == 4
    assert all(q["follow"] == "true" for q in rest.asked)


async def test_a_container_that_never_starts_ends_the_follow_empty(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setattr(logs, "START_POLL", 0.01)
    monkeypatch.setattr(logs, "START_WAIT", 0.05)
    rest = WaitingThenStarted(waits=10**6)
    got = await follow(rest)
    assert got == [] and 2 <= len(rest.asked) < 50
