"""A task log that prints a one-line and a many-line secret, and what a reader of any part
of it may get back: the log's bytes with each secret that part touches shown as one
``******``. Shared by the local (REST) and Kubernetes log tests.

The secrets are upper case and digits (and newlines); nothing else in the log is, so a
response that shows any of those characters outside ``******`` shows part of a secret."""

from __future__ import annotations

import re

HIDDEN = b"******"
TOKEN = "QX7ZK9WM4TPR2V"
#: Many-lined, as a private key is (its lines are written one at a time below).
KEY = "\n".join(["KEYBEGIN"] + [f"K{i}" + "ABCDEFGH2345678"[i:] for i in range(8)] + ["KEYEND"])
SECRETS = {"token": TOKEN, "key": KEY}


def commands(*, first: str, then: str) -> list[str]:
    """The task: the key first thing in its log (a line at a time, with pauses, as a
    program writing a key file out would), lower-case text around it, the token inside a
    line and, without a newline, as its very last bytes. ``first``: a command run before
    anything is printed, ``then`` one before the token's last print (waits, say)."""
    lines = [
        'printf "%s\\n" "<% $secrets.key %>" > key.txt',
        first,
        'while IFS= read -r l; do printf "%s\\n" "$l"; sleep 0.1; done < key.txt',
        'echo "some words, then the token: <% $secrets.token %> and more words"',
        'for w in alpha beta gamma delta; do echo "word $w"; done',
        'printf "the key again:\\n%s\\nafter it\\n" "<% $secrets.key %>"',
        'echo "two tokens: <% $secrets.token %><% $secrets.token %>."',
    ]
    lines.append(then)
    lines.append('printf "ends with %s" "<% $secrets.token %>"')
    return lines


def shown(raw: bytes, start: int, end: int, *, secrets: tuple[str, ...] = (TOKEN, KEY)) -> bytes:
    """What a reader of ``raw[start:end]`` gets: the bytes, each secret they touch (whole,
    however the range cuts it) one ``******``. Naive on purpose: every byte is tried."""
    spans: list[tuple[int, int]] = []
    for value in (s.encode() for s in secrets):
        spans += [(i, i + len(value)) for i in range(len(raw)) if raw.startswith(value, i)]
    merged: list[list[int]] = []
    for s, e in sorted(spans):
        if merged and s < merged[-1][1]:
            merged[-1][1] = max(merged[-1][1], e)
        else:
            merged.append([s, e])
    out, at = b"", start
    end = min(end, len(raw))
    if start >= end:
        return b""
    for s, e in merged:
        if e <= start or s >= end:
            continue
        out += raw[at:s] if s > at else b""
        out += HIDDEN
        at = e
    return out + (raw[at:end] if at < end else b"")


SECRET_CHARACTER = re.compile(rb"[A-Z0-9]")


def revealed(data: bytes) -> list[bytes]:
    """The characters of a secret in ``data`` outside ``******``."""
    return SECRET_CHARACTER.findall(data.replace(HIDDEN, b""))


#: (log, N, its last N lines): where a tail starts, read from a file or from bytes alike.
TAILS = [
    (b"", 3, b""),
    (b"a\nb\nc\n", 1, b"c\n"),
    (b"a\nb\nc\n", 2, b"b\nc\n"),
    (b"a\nb\nc\n", 3, b"a\nb\nc\n"),
    (b"a\nb\nc\n", 10, b"a\nb\nc\n"),
    (b"a\nb\nc", 1, b"c"),  # no final newline: the last line is still a line
    (b"a\nb\nc", 2, b"b\nc"),
    (b"only", 1, b"only"),
    (b"\n", 1, b"\n"),
    (b"\n\n\n", 2, b"\n\n"),
    (b"a\n\nb\n", 2, b"\nb\n"),
    (b"a\nb\n", 0, b""),
    (b"a\nb\n", -1, b""),
]
