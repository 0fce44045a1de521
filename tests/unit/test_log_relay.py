"""The log relay's failures leave follows in the server: a relay that ends without
answering (a broken installation, a crash) is not started again for every follow."""

from __future__ import annotations

import sys

import pytest

from jupyter_pai.backends.kubernetes import logrelay
from jupyter_pai.backends.kubernetes.logrelay import LogRelay, RelayUnavailable
from jupyter_pai.backends.logredaction import LogSecrets


async def test_a_relay_that_ends_without_answering_is_given_up_for_a_while() -> None:
    relay = LogRelay(None, None, 5.0)
    relay.command = (sys.executable, "-c", "pass")  # ends at once, answering nothing
    started = []
    spawn = logrelay.asyncio.create_subprocess_exec

    async def counted(*args: object, **kwargs: object) -> object:
        started.append(args)
        return await spawn(*args, **kwargs)  # type: ignore[arg-type]

    try:
        with pytest.MonkeyPatch.context() as patch:
            patch.setattr(logrelay.asyncio, "create_subprocess_exec", counted)
            with pytest.raises(RelayUnavailable):
                await relay.open("alice", "pod-0", LogSecrets.of(["a-secret-value"]))
            tried = len(started)
            assert 1 <= tried <= 2  # started again once if it had ended before the request
            with pytest.raises(RelayUnavailable, match="a moment ago"):
                await relay.open("alice", "pod-0", LogSecrets())
            assert len(started) == tried  # not started again within the pause
    finally:
        await relay.close()
    assert relay.pid is None
