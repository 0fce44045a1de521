"""A reflector's index versions: a reader caches what it derives from ``by_index(value)``
under ``index_version(value)``, so a version must change with every change under its value
and never come back, a relist included; an empty value's is 0."""

from __future__ import annotations

import asyncio

from jupyter_pai.backends.kubernetes.resources import POD
from jupyter_pai.backends.kubernetes.watch import Reflector

from .kube_fakes import ListAndWatch, Obj


def pod(name: str, job: str, rv: str = "1") -> Obj:
    return {
        "metadata": {
            "name": name,
            "namespace": "alice",
            "uid": f"uid-{name}",
            "resourceVersion": rv,
            "labels": {"jupyter-pai.io/job": job},
        }
    }


async def test_index_versions_change_with_their_objects_and_never_come_back() -> None:
    api = ListAndWatch({"pods": [pod("a-0", "a"), pod("a-1", "a"), pod("b-0", "b")]})
    r = Reflector(
        api,  # type: ignore[arg-type]
        POD,
        "alice",
        # Each object names its value twice, as one whose job label and owner agree does.
        index=lambda o: [o["metadata"]["labels"]["jupyter-pai.io/job"]] * 2,
    )
    r.start()
    try:
        await asyncio.wait_for(r.synced_once.wait(), 5)
        seen = {r.index_version("a"), r.index_version("b")}
        assert 0 not in seen and len(seen) == 2
        assert r.index_version("c") == 0 and r.by_index("c") == []

        async def event(kind: str, obj: Obj) -> None:
            before = r.version
            api.events.put_nowait({"type": kind, "object": obj})
            while r.version == before:
                await r.changed(1.0)

        a = r.index_version("a")
        await event("MODIFIED", pod("b-0", "b", rv="2"))
        assert r.index_version("a") == a and r.index_version("b") not in seen
        seen.add(r.index_version("b"))

        await event("DELETED", pod("b-0", "b", rv="3"))
        assert r.by_index("b") == [] and r.index_version("b") == 0

        await event("ADDED", pod("b-0", "b", rv="4"))
        assert r.index_version("b") not in seen | {0}
        seen.add(r.index_version("b"))

        await event("ADDED", pod("a-2", "a", rv="5"))
        assert sorted(p["metadata"]["name"] for p in r.by_index("a")) == ["a-0", "a-1", "a-2"]
        assert [p["metadata"]["name"] for p in r.by_index("b")] == ["b-0"]
        seen.add(r.index_version("a"))

        # A relist (the watch's version is gone) stamps every value anew.
        lists = api.lists
        api.events.put_nowait({"type": "ERROR", "object": {"code": 410}})
        while api.lists == lists or not r.healthy:
            await r.changed(1.0)
        assert sorted(p["metadata"]["name"] for p in r.by_index("a")) == ["a-0", "a-1"]
        assert r.index_version("a") not in seen and r.index_version("b") not in seen | {0}
    finally:
        await r.stop()
