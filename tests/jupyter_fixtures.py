"""pytest-jupyter's fixtures (jp_fetch, jp_serverapp, …) for the REST tests, with the server
on the test's own loop. Import them into a conftest or test module with ``import *``:
``pytest_plugins`` is refused below the rootdir."""

from __future__ import annotations

import asyncio

import pytest_asyncio
from pytest_jupyter.jupyter_server import *  # noqa: F403


@pytest_asyncio.fixture
async def jp_asyncio_loop() -> asyncio.AbstractEventLoop:
    """Serve on the loop pytest-asyncio runs the test in (asyncio_mode=auto), so the test's
    requests and the server share one loop."""
    return asyncio.get_running_loop()
