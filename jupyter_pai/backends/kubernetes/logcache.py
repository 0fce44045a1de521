"""The last lines of ended pods' logs, kept in memory: a log whose container has exited
never changes, and every open log view and poll would otherwise ask kube-apiserver, which
asks the node's kubelet, for the same bytes again. Bounded by bytes, least recently read
out first; keyed by the pod's uid, so a pod made again under the same name is a new entry.
Raw bytes: secrets are blanked on the way out, as for a log read from the cluster (a tail's
entry holds the lines before it that a many-line secret can begin in, for that)."""

from __future__ import annotations

from collections import OrderedDict
from collections.abc import Hashable

#: One read larger than this is served but not kept.
ENTRY_MAX_BYTES = 256 * 1024


class EndedLogs:
    def __init__(self, max_bytes: int = 8 * 1024 * 1024) -> None:
        self.max_bytes = max_bytes
        self.size = 0
        self.hits = 0
        self._entries: OrderedDict[Hashable, bytes] = OrderedDict()

    def get(self, key: Hashable) -> bytes | None:
        data = self._entries.get(key)
        if data is not None:
            self._entries.move_to_end(key)
            self.hits += 1
        return data

    def put(self, key: Hashable, data: bytes) -> None:
        if len(data) > min(ENTRY_MAX_BYTES, self.max_bytes):
            return
        old = self._entries.pop(key, None)
        if old is not None:
            self.size -= len(old)
        self._entries[key] = data
        self.size += len(data)
        while self.size > self.max_bytes:
            _, dropped = self._entries.popitem(last=False)
            self.size -= len(dropped)

    def __len__(self) -> int:
        return len(self._entries)
