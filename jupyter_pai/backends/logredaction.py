"""Secrets blanked in a log's bytes wherever a read cuts the log: a byte range, the last N
lines, a stream read while it is written, an attempt kept after its pod went.

Every occurrence of a secret that a read touches shows as one ``******``, however the read's
ends cut it, and the read's other bytes are the log's own. That takes the log around what
is sent: an occurrence that overlaps ``[start, end)`` begins at most ``longest - 1`` bytes
before ``start`` and ends at most that many after ``end``, so a read looks that far on each
side (:attr:`LogSecrets.context`); a stream holds back only bytes that may begin a secret
not yet complete. Overlapping occurrences (of one secret or of two) hide as one."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from ..spec.hidden import HIDDEN

PLACEHOLDER = HIDDEN.encode()
_PROBE = 8  # the first bytes of a secret searched for at the log's end

Spans = list[tuple[int, int]]


@dataclass(frozen=True)
class LogSecrets:
    """The values to blank, as bytes, longest first; empty where a job has none (every
    function here is then a no-op)."""

    values: tuple[bytes, ...] = ()
    #: Bytes on each side of a read that can hold part of a secret it touches.
    context: int = field(init=False, default=0)
    #: Lines before a tail's first line that a secret reaching into it can begin in: the
    #: most newlines in any value, not counting a final one (that ends, not crosses, a line).
    newlines: int = field(init=False, default=0)
    #: Each value's first bytes, and those but the last (see :func:`_cut_start`).
    probes: tuple[tuple[bytes, bytes], ...] = field(init=False, default=())

    def __post_init__(self) -> None:
        if self.values:
            object.__setattr__(self, "context", len(self.values[0]) - 1)
            newlines = max(v[:-1].count(b"\n") for v in self.values)
            object.__setattr__(self, "newlines", newlines)
        probes = tuple((v[:_PROBE], v[:_PROBE][:-1]) for v in self.values)
        object.__setattr__(self, "probes", probes)

    @classmethod
    def of(cls, secrets: Iterable[str]) -> LogSecrets:
        encoded = {s.encode("utf-8", errors="surrogateescape") for s in secrets if s}
        return cls(tuple(sorted(encoded, key=len, reverse=True)))

    def __bool__(self) -> bool:
        return bool(self.values)


def redact_range(data: bytes, start: int, end: int, secrets: LogSecrets) -> bytes:
    """``data[start:end]`` as a reader of those bytes sees it. ``data`` is the log around the
    range: :attr:`LogSecrets.context` bytes or more on each side, where the log has them.
    Where ``data`` ends sooner the log ends there, as far as written, and bytes there that
    begin a secret are hidden too: the rest of it may be being written."""
    if not secrets:
        return data[start:end]
    end = min(end, len(data))
    if start >= end:
        return b""
    lo, hi = max(0, start - secrets.context), min(len(data), end + secrets.context)
    part = data[lo:hi] if (lo, hi) != (0, len(data)) else data
    out, _ = _window(part, start - lo, end - lo, _spans(part, secrets, cut=True))
    return out


def redact_tail(data: bytes, lines: int, limit: int | None, secrets: LogSecrets) -> bytes:
    """The last ``lines`` lines of ``data`` (or their first ``limit`` bytes) as a reader
    sees them. ``data`` holds :attr:`LogSecrets.newlines` more lines than that (where the log
    has them): a secret reaching into the last lines begins in those."""
    start = tail_start(data, lines)
    return redact_range(data, start, len(data) if limit is None else start + limit, secrets)


def tail_start(data: bytes, lines: int) -> int:
    """Where the last ``lines`` lines of ``data`` start (a final newline ends the last line,
    it starts no empty one)."""
    if lines <= 0:
        return len(data)
    at = len(data) - 1 if data.endswith(b"\n") else len(data)
    for _ in range(lines):
        at = data.rfind(b"\n", 0, at)
        if at == -1:
            return 0
    return at + 1


class LogRedactor:
    """A log redacted as it is read, chunk by chunk: :meth:`feed` returns what is decided,
    holding back only bytes that may begin a secret still being written (so a line the
    task is writing shows at once, and a key written a line at a time shows as one
    ``******``); :meth:`close` returns the rest. Memory: about twice the longest secret."""

    def __init__(self, secrets: LogSecrets, before: bytes = b"") -> None:
        """``before``: the log before the first byte to send, to see a secret it cuts."""
        self.secrets = secrets
        self._buf = before[max(0, len(before) - secrets.context) :] if secrets else b""
        self._sent = len(self._buf)  # _buf[:_sent] is context; the rest is held back
        self._inside = False  # what was sent ends inside a placeholder's secret

    @property
    def holding(self) -> bool:
        """Bytes are held back: the log's next bytes decide them."""
        return self._sent < len(self._buf)

    def feed(self, data: bytes) -> bytes:
        if not self.secrets:
            return data
        buf = self._buf + data
        # Every occurrence touching a byte before `end` lies inside `buf`: none was cut.
        end = max(self._sent, _cut_start(buf, self.secrets))
        out = b""
        if end > self._sent:
            out, self._inside = _window(
                buf, self._sent, end, _spans(buf, self.secrets), self._inside
            )
        keep = max(0, end - self.secrets.context)
        self._buf, self._sent = buf[keep:], end - keep
        return out

    def close(self, after: bytes = b"") -> bytes:
        """What is held back. ``after``: the log past the read's end, looked at, not sent;
        none where the read ends with the log."""
        if not self.holding:
            return b""
        end = len(self._buf)
        buf = self._buf + after[: self.secrets.context]
        out, _ = _window(buf, self._sent, end, _spans(buf, self.secrets, cut=True), self._inside)
        self._buf, self._sent, self._inside = b"", 0, False
        return out


def _spans(data: bytes, secrets: LogSecrets, *, cut: bool = False) -> Spans:
    """Where the secrets occur in ``data``, overlapping occurrences merged, in order.
    ``cut``: ``data``'s end may cut a secret, so what may begin one there is a span too."""
    found: Spans = []
    for value in secrets.values:
        at = data.find(value)
        while at != -1:
            found.append((at, at + len(value)))
            at = data.find(value, at + 1)
    if cut and (begins := _cut_start(data, secrets)) < len(data):
        found.append((begins, len(data)))
    found.sort()
    merged: Spans = []
    for s, e in found:
        if merged and s < merged[-1][1]:
            if e > merged[-1][1]:
                merged[-1] = (merged[-1][0], e)
        else:
            merged.append((s, e))
    return merged


def _cut_start(data: bytes, secrets: LogSecrets) -> int:
    """The first position at which the rest of ``data`` is a secret's beginning, so more
    of the log could make it a secret; ``len(data)`` where none is."""
    n = best = len(data)
    last = data[-1:]
    for value, (probe, head) in zip(secrets.values, secrets.probes, strict=True):
        at = max(0, n - len(value) + 1)
        # Where the secret's first bytes fit whole, a search in C finds the candidates
        # (a byte-by-byte look at a log full of a key's "-" costs far more).
        while (at := data.find(probe, at, best - 1 + len(probe))) != -1:
            if value.startswith(data[at:]):
                best = at
                break
            at += 1
        else:
            # Where they do not: the longest of them that ends the data, if any can.
            if not last or last not in head:
                continue
            for k in range(min(len(head), n), n - best, -1):
                if data.endswith(head[:k]):
                    best = n - k
                    break
    return best


def _window(
    data: bytes, start: int, end: int, spans: Spans, inside: bool = False
) -> tuple[bytes, bool]:
    """``data[start:end]`` with each span it touches one placeholder, and whether its end
    cuts a span. ``inside``: a placeholder already sent stands for a span cut at ``start``."""
    out: list[bytes] = []
    at = start
    for s, e in spans:
        if e <= start:
            continue
        if s >= end:
            break
        if s > at:
            out.append(data[at:s])
        if s >= start or not inside:
            out.append(PLACEHOLDER)
        if e >= end:
            return b"".join(out), e > end
        at = e
    out.append(data[at:end])
    return b"".join(out), False
