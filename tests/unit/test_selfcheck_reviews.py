"""The self check's access reviews go a few at a time: each request in flight takes a TLS
connection of its own, which holds a 256 KiB read buffer in the server until it is dropped,
so forty at once (the native flavor's permissions) held some 10 MB after every start."""

from __future__ import annotations

import asyncio
from typing import Any

from jupyter_pai.backends.kubernetes import selfcheck
from jupyter_pai.backends.kubernetes.permissions import required
from jupyter_pai.backends.kubernetes.rest import ApiError


class _Reviews:
    """The API server's review answers: allowed, except ``denied`` (a resource); it counts
    how many were asked at once."""

    def __init__(self, denied: str) -> None:
        self.denied = denied
        self.in_flight = self.most = self.asked = 0

    async def call(self, method: str, url: str, body: dict[str, Any]) -> dict[str, Any]:
        assert (method, url) == ("POST", selfcheck.REVIEWS)
        self.asked += 1
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if body["spec"]["resourceAttributes"]["resource"] == self.denied:
                raise ApiError(403, "Forbidden", "no")
            return {"status": {"allowed": True}}
        finally:
            self.in_flight -= 1


async def test_reviews_are_asked_a_few_at_a_time_and_every_one_answered() -> None:
    permissions = required("native")
    assert len(permissions) > selfcheck.REVIEWS_AT_ONCE
    api = _Reviews(denied="pods")
    answers = await selfcheck.reviews(api, permissions, "alice")  # type: ignore[arg-type]
    assert api.asked == len(permissions) == len(answers)
    assert api.most == selfcheck.REVIEWS_AT_ONCE
    missing = [a for a in answers if a is not None]
    assert missing and {m.resource.partition("/")[0] for m in missing} == {"pods"}
    assert all("403" in m.message for m in missing)
