"""Signed, short-lived links to one task port.

A task's web app (TensorBoard, a public image's UI, a page another user's job serves) is
not trusted with the user's Jupyter session. Its pages are served under
``pai/api/task-ports/{link}/…`` with a CSP ``sandbox`` that gives them an opaque origin:
they cannot read Jupyter's cookies, and the Jupyter API refuses their requests (cross
origin). The browser's cookie cannot authenticate those pages' own requests either (it is
not sent for an opaque origin), so the link in the path does: it names one port of one
task of one user's job, expires, and is signed with a key that lives only in this
server's memory (a restart ends every link; reloading the tab makes a new one)."""

from __future__ import annotations

import base64
import hashlib
import hmac
import json
import secrets
import time
from dataclasses import dataclass

from ..errors import Forbidden

#: How long a link opens its port: a TensorBoard tab left open over a working day.
LINK_SECONDS = 24 * 3600


@dataclass(frozen=True)
class PortLink:
    user: str
    job_id: str
    task: str
    port: str
    expires: float


class PortLinks:
    def __init__(self, key: bytes | None = None) -> None:
        self._key = key or secrets.token_bytes(32)

    def make(
        self, user: str, job_id: str, task: str, port: str, *, now: float | None = None
    ) -> str:
        expires = int((time.time() if now is None else now) + LINK_SECONDS)
        payload = json.dumps([user, job_id, task, port, expires], separators=(",", ":")).encode()
        return f"{_b64(payload)}.{_b64(self._sign(payload))}"

    def check(self, link: str, *, now: float | None = None) -> PortLink:
        """The port a link opens; :class:`Forbidden` if it is forged, damaged or expired."""
        body, _, signature = link.partition(".")
        try:
            payload = _unb64(body)
            valid = hmac.compare_digest(_unb64(signature), self._sign(payload))
        except ValueError:
            valid = False
        if not valid:
            raise Forbidden(
                "this link to a task's port is not valid here (the server restarted, or it "
                "was changed): open the port again from the job's detail"
            )
        user, job_id, task, port, expires = json.loads(payload)
        if (time.time() if now is None else now) > expires:
            raise Forbidden(
                "this link to a task's port has expired: reload the tab, or open the port "
                "again from the job's detail"
            )
        return PortLink(str(user), str(job_id), str(task), str(port), float(expires))

    def _sign(self, payload: bytes) -> bytes:
        return hmac.new(self._key, payload, hashlib.sha256).digest()


def _b64(data: bytes) -> str:
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def _unb64(text: str) -> bytes:
    try:
        return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))
    except (ValueError, TypeError) as error:
        raise ValueError(str(error)) from None
