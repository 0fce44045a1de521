"""Secrets blanked in log bytes however a read cuts the log: each secret a read touches is
one ``******``, the read's other bytes are the log's; streams hold back only what may begin
a secret still being written."""

from __future__ import annotations

import random

import pytest

from jupyter_pai.backends.logredaction import (
    LogRedactor,
    LogSecrets,
    redact_range,
    redact_tail,
    tail_start,
)
from tests.secretlogs import TAILS, shown

TOKEN = "QX7ZK9"
KEY = "BEGIN\nK1A2\nK3B4\nEND"
SECRETS = LogSecrets.of([TOKEN, KEY])


def whole(data: bytes, secrets: LogSecrets = SECRETS) -> bytes:
    return redact_range(data, 0, len(data), secrets)


def streamed(pieces: list[bytes], secrets: LogSecrets = SECRETS) -> list[bytes]:
    """What a follower gets after each piece, then at the end."""
    redactor = LogRedactor(secrets)
    return [redactor.feed(p) for p in pieces] + [redactor.close()]


def test_the_secrets_of_a_log() -> None:
    assert SECRETS.values == (KEY.encode(), TOKEN.encode())
    assert (SECRETS.context, SECRETS.newlines) == (len(KEY) - 1, 3)
    assert LogSecrets.of(["a\n", "b\nc\n"]).newlines == 1  # a final newline crosses no line
    assert not LogSecrets.of(["", ""]) and LogSecrets.of(["", ""]).context == 0


@pytest.mark.parametrize(
    ("data", "expected"),
    [
        (b"", b""),
        (b"no secret\n", b"no secret\n"),
        (b"QX7ZK9", b"******"),
        (b"QX7ZK9 at the start", b"****** at the start"),
        (b"at the end QX7ZK9", b"at the end ******"),
        (b"twice QX7ZK9QX7ZK9.", b"twice ************."),
        (b"BEGIN\nK1A2\nK3B4\nEND\nafter\n", b"******\nafter\n"),
        (b"a\nBEGIN\nK1A2\nK3B4\nEND", b"a\n******"),
        # Only part of a secret, inside the log: the log's own text.
        (b"BEGIN\nK1A2\nhalf\n", b"BEGIN\nK1A2\nhalf\n"),
    ],
)
def test_a_whole_log(data: bytes, expected: bytes) -> None:
    assert whole(data) == expected
    assert b"".join(streamed([data])) == expected
    assert b"".join(streamed([data[i : i + 1] for i in range(len(data))])) == expected


def test_overlapping_secrets_hide_as_one() -> None:
    two = LogSecrets.of(["ABCD", "CDEF"])
    assert whole(b"xABCDEFy", two) == b"x******y"
    assert whole(b"xABCD CDEFy", two) == b"x****** ******y"
    assert whole(b"ABABAB.", LogSecrets.of(["ABAB"])) == b"******."
    # Replacing the longest first would leave "EF" of the second.
    assert b"".join(streamed([b"xAB", b"CD", b"EFy"], two)) == b"x******y"


def test_a_range_shows_each_secret_it_touches_as_one_placeholder() -> None:
    data = b"abc QX7ZK9 def\n"
    at = data.index(b"Q")
    assert redact_range(data, 0, 4, SECRETS) == b"abc "
    assert redact_range(data, 0, at + 1, SECRETS) == b"abc ******"
    assert redact_range(data, at + 2, at + 3, SECRETS) == b"******"
    assert redact_range(data, at + 5, at + 8, SECRETS) == b"****** d"
    assert redact_range(data, at + 6, at + 8, SECRETS) == b" d"  # just after it
    assert redact_range(data, 2, len(data) + 10, SECRETS) == b"c ****** def\n"
    assert redact_range(data, len(data), len(data) + 3, SECRETS) == b""
    assert redact_range(data, 50, 53, SECRETS) == b""


def test_a_range_cuts_no_many_line_secret() -> None:
    data = b"one\nBEGIN\nK1A2\nK3B4\nEND\ntwo\n"
    begin, end = data.index(b"BEGIN"), data.index(b"END\n") + 3
    for start in range(len(data)):
        for stop in range(start + 1, len(data) + 1):
            got = redact_range(data, start, stop, SECRETS)
            if start < end and stop > begin:
                expected = data[start:begin] + b"******" + data[end:stop]
            else:
                expected = data[start:stop]
            assert got == expected, (start, stop, got)


def test_the_logs_end_may_cut_a_secret_being_written() -> None:
    """Where the log (as far as written) ends with what begins a secret, that is hidden:
    the next bytes may complete it."""
    assert whole(b"x QX7") == b"x ******"
    assert whole(b"x\nBEGIN\nK1") == b"x\n******"
    assert redact_range(b"x QX7", 2, 3, SECRETS) == b"******"
    assert whole(b"x QX7 no") == b"x QX7 no"  # it did not go on as the secret does


def test_a_stream_holds_back_only_what_may_begin_a_secret() -> None:
    # A line being written shows at once, not when its newline comes.
    assert streamed([b"epoch 1 loss", b" 0.5\n"]) == [b"epoch 1 loss", b" 0.5\n", b""]
    assert streamed([b"token QX7", b"ZK9 ok\n"]) == [b"token ", b"****** ok\n", b""]
    assert streamed([b"token QX7", b"Z and more"]) == [b"token ", b"QX7Z and more", b""]
    # A key written a line at a time: none of its lines, then the placeholder.
    lines = [b"log\n", b"BEGIN\n", b"K1A2\n", b"K3B4\n", b"END", b"\nafter\n"]
    assert streamed(lines) == [b"log\n", b"", b"", b"", b"******", b"\nafter\n", b""]
    # The stream ends inside one: hidden, it may be the rest of the secret.
    assert streamed([b"log\nBEGIN\nK1"]) == [b"log\n", b"******"]


def test_a_stream_that_starts_inside_a_secret() -> None:
    """A read from an offset: the log before it is looked at, not sent."""
    data = b"x BEGIN\nK1A2\nK3B4\nEND y QX7ZK9 z"
    for offset in range(len(data) + 1):
        for cut in range(offset, len(data) + 1):
            redactor = LogRedactor(SECRETS, before=data[:offset])
            got = redactor.feed(data[offset:cut]) + redactor.feed(data[cut:]) + redactor.close()
            assert got == redact_range(data, offset, len(data), SECRETS), (offset, cut)


def test_a_stream_whose_read_ends_inside_a_secret() -> None:
    data = b"x QX7ZK9 y"
    redactor = LogRedactor(SECRETS)
    assert redactor.feed(data[:4]) == b"x "
    assert redactor.holding
    assert redactor.close(after=data[4:]) == b"******"


def test_no_secrets_is_a_no_op() -> None:
    none = LogSecrets.of([])
    data = b"QX7ZK9 BEGIN\n"
    assert whole(data, none) == data
    redactor = LogRedactor(none, before=b"abc")
    assert redactor.feed(data) is data and redactor.close(b"x") == b""
    assert redact_tail(data, 1, None, none) == data


@pytest.mark.parametrize(("data", "lines", "expected"), TAILS)
def test_tail_start(data: bytes, lines: int, expected: bytes) -> None:
    assert data[tail_start(data, lines) :] == expected


def test_a_tail_that_starts_inside_a_many_line_secret() -> None:
    data = b"a\nBEGIN\nK1A2\nK3B4\nEND\nb\nc\n"
    assert redact_tail(data, 2, None, SECRETS) == b"b\nc\n"
    assert redact_tail(data, 3, None, SECRETS) == b"******\nb\nc\n"  # its last line
    assert redact_tail(data, 4, None, SECRETS) == b"******\nb\nc\n"
    assert redact_tail(data, 7, None, SECRETS) == b"a\n******\nb\nc\n"
    assert redact_tail(data, 4, 3, SECRETS) == b"******"
    assert redact_tail(data, 2, 3, SECRETS) == b"b\nc"


def test_any_read_of_random_logs_matches_the_rule() -> None:
    """Random logs of a few letters, secrets of them that overlap and repeat, read as
    ranges and as streams cut anywhere: each secret touched is one placeholder."""
    rng = random.Random(7)
    for _ in range(300):
        alphabet = "AB\nC"
        values = {"".join(rng.choice(alphabet) for _ in range(rng.randint(2, 6))) for _ in range(3)}
        secrets = LogSecrets.of(values)
        data = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40))).encode() + b"."
        for _ in range(5):
            start = rng.randint(0, len(data))
            stop = rng.randint(start, len(data))
            expected = shown(data, start, stop, secrets=tuple(values))
            assert redact_range(data, start, stop, secrets) == expected, (values, data, start, stop)
            redactor = LogRedactor(secrets, before=data[:start])
            got, at = b"", start
            while at < stop:
                step = rng.randint(1, 7)
                got += redactor.feed(data[at : min(stop, at + step)])
                at += step
            got += redactor.close(after=data[stop:])
            assert got == expected, (values, data, start, stop)
