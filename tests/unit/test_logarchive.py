"""The ConfigMap that keeps an evicted attempt's log, and the one that says it is lost."""

from __future__ import annotations

import asyncio
import base64
import logging
from collections.abc import AsyncGenerator
from types import SimpleNamespace
from typing import Any

from jupyter_pai.backends.base import LogQuery
from jupyter_pai.backends.kubernetes.logarchive import (
    ANN_DROPPED,
    ANN_LOST,
    KEEP_BYTES,
    LogArchiver,
    archive_manifest,
    lost_note,
)
from jupyter_pai.backends.kubernetes.logs import stored_log
from jupyter_pai.backends.kubernetes.naming import (
    ANN_JOB_ID,
    ANN_NAME,
    ANN_NAMES,
    ANN_USER,
    LABEL_ARCHIVED,
    LABEL_INDEX,
    LABEL_ROLE,
    make_names,
)
from jupyter_pai.backends.logredaction import LogSecrets, tail_start
from jupyter_pai.spec import parse_job
from tests.secretlogs import revealed, shown

JOB = parse_job(
    """
protocolVersion: 2
name: t
type: job
taskRoles:
  worker: {instances: 2, commands: [sleep 1], resourcePerInstance: {gpu: 0}}
"""
).job
NAMES = make_names(JOB, "alice")
PRIMARY = {
    "apiVersion": "v1",
    "kind": "ConfigMap",
    "metadata": {"name": NAMES.base, "uid": "p-uid"},
}
POD = {
    "metadata": {
        "name": f"{NAMES.base}-worker-1",
        "uid": "0123456789abcdef",
        "creationTimestamp": "2026-01-01T00:00:01Z",
        "labels": {"jupyter-pai.io/vc": "default"},
    }
}


def _log(body: dict[str, Any]) -> bytes:
    return base64.b64decode(body["binaryData"]["log"])


def test_a_kept_log_is_its_last_bytes_labelled_with_its_task() -> None:
    log = b"x" * 10 + b"y" * KEEP_BYTES
    body = archive_manifest(NAMES, PRIMARY, POD, ("worker", 1), log)
    meta = body["metadata"]
    assert meta["name"] == f"{NAMES.base}-log-01234567"
    assert meta["labels"][LABEL_ARCHIVED] == "true"
    assert (meta["labels"][LABEL_ROLE], meta["labels"][LABEL_INDEX]) == ("worker", "1")
    assert meta["annotations"][ANN_DROPPED] == "10"
    assert ANN_LOST not in meta["annotations"]
    assert meta["ownerReferences"][0]["uid"] == "p-uid"
    assert _log(body) == b"y" * KEEP_BYTES


def test_a_lost_log_is_kept_as_an_attempt_that_says_so() -> None:
    """The attempt still counts (the task's attempts stay numbered as they ran), and a
    reader of it learns why there is nothing else."""
    note = lost_note(POD, Exception('pods "p" not found'))
    assert (
        note
        == (
            f"jupyter-pai: the log of this attempt is lost: pod {NAMES.base}-worker-1 was deleted"
            ' before its log could be read (pods "p" not found)\n'
        ).encode()
    )
    body = archive_manifest(NAMES, PRIMARY, POD, ("worker", 1), note, lost=True)
    assert body["metadata"]["annotations"][ANN_LOST] == "true"
    assert body["metadata"]["annotations"][ANN_DROPPED] == "0"
    assert _log(body) == note


# -- what an evicted attempt keeps: never a piece of a secret ------------------------------

SECRET_JOB = parse_job(
    """
protocolVersion: 2
name: t
type: job
secrets: {token: QX7ZK9WM4TPR2V, key: "KEYBEGIN\\nQ1W2E3R4T5\\nY6U7I8O9P0\\nKEYEND"}
taskRoles:
  worker: {instances: 1, commands: [sleep 1], resourcePerInstance: {gpu: 0}}
"""
).job
TOKEN, KEY = "QX7ZK9WM4TPR2V", "KEYBEGIN\nQ1W2E3R4T5\nY6U7I8O9P0\nKEYEND"


class _Rest:
    """The two calls an archiver makes: the job's Secret (its values) and the ConfigMap."""

    def __init__(self) -> None:
        self.created: list[dict[str, Any]] = []

    async def get(self, path: str) -> dict[str, Any]:
        values = {"token": TOKEN, "key": KEY}
        return {"data": {k: base64.b64encode(v.encode()).decode() for k, v in values.items()}}

    async def create(self, kind: object, namespace: str, body: dict[str, Any]) -> None:
        self.created.append(body)


async def _archived(chunks: list[bytes]) -> bytes:
    """What an archiver keeps of an evicted pod whose log comes as ``chunks``."""
    names = make_names(SECRET_JOB, "alice")
    annotations = {
        ANN_JOB_ID: names.job_id,
        ANN_USER: names.user,
        ANN_NAME: names.name,
        ANN_NAMES: names.to_json(),
    }
    primary = {
        **PRIMARY,
        "metadata": {"name": NAMES.base, "uid": "p-uid", "annotations": annotations},
    }
    views: Any = SimpleNamespace(
        namespace="alice",
        view=lambda _: SimpleNamespace(job=SECRET_JOB),
        flavor=SimpleNamespace(role_index=lambda _: ("worker", 0)),
    )
    rest: Any = _Rest()

    async def log() -> AsyncGenerator[bytes, None]:
        async def gen() -> AsyncGenerator[bytes, None]:
            for chunk in chunks:
                yield chunk

        return gen()

    archiver = LogArchiver(views, lambda: rest, logging.getLogger("test"))
    opening = asyncio.get_running_loop().create_task(log())
    await archiver._archive(rest, primary, POD, opening, False)
    (body,) = rest.created
    return _log(body)


async def test_an_evicted_attempts_kept_log_cuts_no_secret_in_two() -> None:
    """Only a long log's last bytes are kept: where that cut falls inside a secret, the
    part of it that is kept is hidden as well."""
    key, tail = KEY.encode(), b"\nend " + TOKEN.encode() + b"\n"
    for cut in (1, 5, 9):
        # The archiver trims what it holds to the last KEEP_BYTES once it holds twice that:
        # make that cut fall inside the key.
        post = b"y" * (KEEP_BYTES - (len(key) - cut))
        kept = await _archived([b"x\n" * KEEP_BYTES + key + post, tail])
        assert len(kept) <= KEEP_BYTES
        text = kept.replace(b"******", b"")
        assert not [c for c in text if chr(c).isupper() or chr(c).isdigit()], (cut, kept[:80])
        assert kept.endswith(b"y\nend ******\n")


async def test_no_range_or_tail_of_a_kept_log_shows_part_of_a_secret() -> None:
    """A kept attempt is read as a live log is: every range and tail of it, even of one
    kept before its secrets were blanked on the way in."""
    raw = f"{KEY}\nsome words {TOKEN} and\nthe key again:\n{KEY}\nends {TOKEN}".encode()
    secrets = LogSecrets.of([TOKEN, KEY])
    values = (TOKEN, KEY)

    async def read(**kw: Any) -> tuple[int, bytes]:
        stream = stored_log(raw, LogQuery(role="worker", **kw), "worker", secrets)
        return stream.size, b"".join([c async for c in stream.chunks])

    assert await read() == (0, shown(raw, 0, len(raw), secrets=values))
    for offset in range(len(raw) + 1):
        for limit in (1, 2, 3, None):
            size, got = await read(offset=offset, limit=limit)
            end = len(raw) if limit is None else offset + limit
            assert size == len(raw) and not revealed(got), (offset, limit, got)
            assert got == shown(raw, offset, end, secrets=values), (offset, limit)
    for n in range(raw.count(b"\n") + 3):
        _, got = await read(tail=n)
        assert got == shown(raw, tail_start(raw, n), len(raw), secrets=values), n


async def test_draining_cancels_every_archive_still_under_way() -> None:
    """Archives that outlast the drain's wait are cancelled, however they end meanwhile."""
    views: Any = SimpleNamespace(cache={}, namespace="alice")
    archiver = LogArchiver(views, lambda: _Rest(), logging.getLogger("test"))
    started = [asyncio.get_running_loop().create_task(asyncio.sleep(60)) for _ in range(3)]
    for task in started:
        archiver._tasks.add(task)
        task.add_done_callback(archiver._tasks.discard)
    await archiver.drain(timeout=0.05)
    assert all(t.cancelled() for t in started)
    await asyncio.sleep(0)
    assert not archiver._tasks
