"""The kernel launcher signs and checks its control messages itself (no jupyter_client in
the pod): what the server's jupyter_client Session sends it accepts, what it answers the
Session accepts, and anything forged, replayed or malformed is refused."""

from __future__ import annotations

from typing import Any

import pytest
from jupyter_client.session import Session

from jupyter_pai.kernels.launcher import SignedWire

KEY = b"a3f1c9e0d2b4"


class Frames:
    """A stand-in socket that keeps what Session.send writes."""

    def __init__(self) -> None:
        self.sent: list[bytes] = []

    def send_multipart(self, parts: list[Any], *args: Any, **kwargs: Any) -> None:
        self.sent = [bytes(p) for p in parts]


def signed(
    session: Session, msg_type: str, content: dict[str, Any], ident: bytes = b""
) -> list[bytes]:
    sock = Frames()
    session.send(sock, msg_type, content, ident=[ident] if ident else None)
    return sock.sent


def test_a_session_request_is_read_and_its_reply_accepted() -> None:
    server = Session(key=KEY, signature_scheme="hmac-sha256")
    wire = SignedWire(KEY)
    frames = signed(server, "signal", {"signum": 2}, ident=b"peer-1")
    idents, header, content = wire.receive(frames)
    assert idents == [b"peer-1"]
    assert header["msg_type"] == "signal"
    assert content == {"signum": 2}

    answer = wire.reply(idents, header, {"exit_code": None, "pid": 42})
    assert answer[0] == b"peer-1"
    _, msg = server.feed_identities(answer, copy=True)
    reply = server.deserialize(msg, content=True, copy=True)  # checks the signature
    assert reply["content"] == {"exit_code": None, "pid": 42}
    assert reply["parent_header"]["msg_id"] == header["msg_id"]
    assert reply["header"]["msg_type"] == "reply"


def test_a_reply_signed_with_another_key_is_refused_by_the_session() -> None:
    server = Session(key=KEY, signature_scheme="hmac-sha256")
    _, header, _ = SignedWire(KEY).receive(signed(server, "ping", {}))
    forged = SignedWire(b"not-the-key").reply([], header, {"exit_code": 0})
    _, msg = server.feed_identities(forged, copy=True)
    with pytest.raises(ValueError, match="Invalid Signature"):
        server.deserialize(msg, content=True, copy=True)


@pytest.mark.parametrize(
    ("frames", "why"),
    [
        (
            signed(Session(key=b"another-key", signature_scheme="hmac-sha256"), "end", {}),
            "bad signature",
        ),
        (signed(Session(key=b"", signature_scheme="hmac-sha256"), "end", {}), "bad signature"),
        ([b"<IDS|MSG>", b"", b"{}", b"{}", b"{}", b"{}"], "bad signature"),
        ([b"no delimiter", b"{}"], "no message delimiter"),
        ([b"<IDS|MSG>", b"sig", b"{}"], "too few message parts"),
    ],
    ids=["another key", "unsigned", "empty signature", "no delimiter", "truncated"],
)
def test_forged_or_malformed_messages_are_refused(frames: list[bytes], why: str) -> None:
    with pytest.raises(ValueError, match=why):
        SignedWire(KEY).receive(frames)


def test_a_replayed_message_is_refused() -> None:
    wire = SignedWire(KEY)
    frames = signed(Session(key=KEY, signature_scheme="hmac-sha256"), "end", {})
    wire.receive(frames)
    with pytest.raises(ValueError, match="replayed"):
        wire.receive(frames)


def test_a_signed_body_that_is_not_an_object_is_refused() -> None:
    wire = SignedWire(KEY)
    parts = [b"[]", b"{}", b"{}", b"{}"]
    with pytest.raises(ValueError, match="must be objects"):
        wire.receive([b"<IDS|MSG>", wire._sign(parts), *parts])
