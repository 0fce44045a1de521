"""Links that open one task port: signed by the server, refused when altered, expired
or made by another run of the server."""

from __future__ import annotations

import pytest

from jupyter_pai.errors import Forbidden
from jupyter_pai.server.portlinks import LINK_SECONDS, PortLink, PortLinks

NOW = 1_800_000_000.0


def test_a_link_opens_the_port_it_was_made_for() -> None:
    links = PortLinks(b"k" * 32)
    link = links.make("alice", "alice~board", "worker-0", "6006", now=NOW)
    assert links.check(link, now=NOW + 60) == PortLink(
        "alice", "alice~board", "worker-0", "6006", NOW + LINK_SECONDS
    )
    # Only characters that need no escaping in a URL path.
    assert all(c.isalnum() or c in "-_." for c in link), link


def test_an_altered_link_is_refused() -> None:
    links = PortLinks(b"k" * 32)
    link = links.make("alice", "alice~board", "worker-0", "6006", now=NOW)
    other = links.make("alice", "alice~board", "worker-0", "6007", now=NOW)
    body, _, signature = link.partition(".")
    forged = [
        other.partition(".")[0] + "." + signature,  # another port, the first's signature
        body + "." + signature[:-2] + ("AA" if not signature.endswith("AA") else "BB"),
        body,
        "",
        "%%%.%%%",
        "not-base64!.x",
    ]
    for bad in forged:
        with pytest.raises(Forbidden, match="not valid"):
            links.check(bad, now=NOW)


def test_a_link_ends_with_its_time_and_with_the_server_that_made_it() -> None:
    links = PortLinks(b"k" * 32)
    link = links.make("alice", "alice~board", "worker-0", "6006", now=NOW)
    with pytest.raises(Forbidden, match="expired"):
        links.check(link, now=NOW + LINK_SECONDS + 1)
    with pytest.raises(Forbidden, match="restarted"):
        PortLinks(b"x" * 32).check(link, now=NOW)
    # Two servers never share a key unless told to.
    assert PortLinks().make("a", "a~j", "w-0", "1", now=NOW) != PortLinks().make(
        "a", "a~j", "w-0", "1", now=NOW
    )
