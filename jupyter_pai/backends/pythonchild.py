"""The command lines of the Python programs this package starts of its own (the log relay,
local supervisors and their launcher, the request parser): none imports from the folder
the server was started in.

``python -c`` and ``python -m`` put the working folder first on ``sys.path``, so a
``json.py`` planted there (by a job, by another user of a shared folder) would run as the
server's user. ``-P`` leaves it out, but only from Python 3.11, and ``-I`` would drop
``PYTHONPATH`` and the user's site-packages, where this package may be installed. So the
program drops the entry itself, before its first import. (A job's own commands run in its
working folder with that folder on ``sys.path``, as they would in a terminal there.)"""

from __future__ import annotations

import sys

#: First lines of each program: ``python -c`` puts the working folder first as ``''``
#: (not at all under ``-P`` or ``PYTHONSAFEPATH``); ``sys`` is built in, nothing is read.
SAFE_PATH = "import sys\nif sys.path[:1] == ['']:\n    del sys.path[0]\n"


def python_command(program: str, *args: str) -> list[str]:
    """``python -c program args…``, run by this interpreter without its working folder."""
    return [sys.executable, "-c", SAFE_PATH + program, *args]
