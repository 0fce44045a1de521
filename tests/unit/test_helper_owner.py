"""Which process owns a storage helper pod, and whether it is gone: a killed server's pods
are removed at the next start, those of a process that still runs are not."""

from __future__ import annotations

import subprocess
import sys
from collections.abc import Iterator

import psutil
import pytest

from jupyter_pai.backends.kubernetes.owner import ProcessOwner


@pytest.fixture
def child() -> Iterator[subprocess.Popen[bytes]]:
    proc = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    yield proc
    proc.kill()
    proc.wait()


def test_an_owner_reads_back_from_its_annotation() -> None:
    me = ProcessOwner.this()
    back = ProcessOwner.decode(me.encode())
    assert back is not None
    assert (back.host, back.pid) == (me.host, me.pid)
    assert abs(back.started - me.started) < 0.01
    for bad in (None, "", "host", "host/12", "host/x/1.0", "host/12/soon", "/12/1.0"):
        assert ProcessOwner.decode(bad) is None, bad


def test_this_process_and_a_running_one_are_not_gone(child: subprocess.Popen[bytes]) -> None:
    here = ProcessOwner.this()
    assert not here.gone(here)
    running = ProcessOwner(here.host, child.pid, psutil.Process(child.pid).create_time())
    assert not running.gone(here)


def test_an_ended_process_is_gone(child: subprocess.Popen[bytes]) -> None:
    here = ProcessOwner.this()
    owner = ProcessOwner(here.host, child.pid, psutil.Process(child.pid).create_time())
    child.kill()
    child.wait()
    assert owner.gone(here)


def test_a_process_id_given_to_a_newer_process_is_gone(child: subprocess.Popen[bytes]) -> None:
    here = ProcessOwner.this()
    started = psutil.Process(child.pid).create_time()
    assert ProcessOwner(here.host, child.pid, started - 3600).gone(here)
    # this very process id, started earlier: a server that ran before this one (a container)
    assert ProcessOwner(here.host, here.pid, here.started - 3600).gone(here)


def test_an_owner_on_another_machine_is_left_alone() -> None:
    here = ProcessOwner.this()
    assert not ProcessOwner(here.host + "-other", 999_999_999, 0.0).gone(here)
