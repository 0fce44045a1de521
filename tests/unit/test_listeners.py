"""Who listens on a task's port, read from Linux's socket tables (golden excerpts of
``/proc/net/tcp`` and ``tcp6``)."""

from __future__ import annotations

import os
import socket

from jupyter_pai.backends.local.listeners import Listener, listeners, session_sockets

TCP = """\
  sl  local_address rem_address   st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 0100007F:1770 00000000:0000 0A 00000000:00000000 00:00000000 00000000  1001        0 4242 1 0
   1: 00000000:1771 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4343 1 0
   2: 0500000A:1770 00000000:0000 0A 00000000:00000000 00:00000000 00000000     0        0 4444 1 0
   3: 0100007F:1770 0100007F:A0B0 01 00000000:00000000 00:00000000 00000000  1001        0 4545 1 0
"""
TCP6 = """\
  sl  local_address                         remote_address                        st tx_queue rx_queue tr tm->when retrnsmt   uid  timeout inode
   0: 00000000000000000000000000000000:1772 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1002        0 4646 1 0
   1: 00000000000000000000000001000000:1772 00000000000000000000000000000000:0000 0A 00000000:00000000 00:00000000 00000000  1003        0 4747 1 0
"""


def test_listeners_a_connection_to_loopback_would_reach() -> None:
    tables = [TCP, TCP6]
    # Loopback only: not 10.0.0.5's listener, not an established connection.
    assert listeners(6000, tables) == [Listener(inode=4242, uid=1001)]
    assert listeners(6001, tables) == [Listener(inode=4343, uid=0)]  # 0.0.0.0
    # IPv6's wildcard takes IPv4 connections too; ::1 does not.
    assert listeners(6002, tables) == [Listener(inode=4646, uid=1002)]
    assert listeners(6003, tables) == []


def test_a_sessions_sockets_are_found_through_proc() -> None:
    server = socket.create_server(("127.0.0.1", 0))
    try:
        port = server.getsockname()[1]
        found = listeners(port)
        assert found is not None and len(found) == 1, found
        assert found[0].uid == os.getuid()
        assert found[0].inode in session_sockets(os.getsid(0))
        assert found[0].inode not in session_sockets(os.getsid(0) + 1_000_000)
    finally:
        server.close()
