"""Pod host names in /etc/hosts, between marker comments, so stable peer names of pods
behind a headless Service (hostname.subdomain) resolve to their loopback pod IPs."""

from __future__ import annotations

import contextlib
import fcntl
from collections.abc import Iterable
from pathlib import Path

HOSTS = Path("/etc/hosts")


def marker(cluster_dir: Path) -> str:
    return f"jupyter-pai test cluster {cluster_dir}"


def _without_block(lines: list[str], mark: str) -> list[str]:
    begin, end = f"# BEGIN {mark}", f"# END {mark}"
    out, inside = [], False
    for line in lines:
        if line == begin:
            inside = True
        elif line == end:
            inside = False
        elif not inside:
            out.append(line)
    return out


def _rewrite(mark: str, entries: Iterable[tuple[str, list[str]]], hosts: Path) -> None:
    # Rewritten in place (not renamed over): /etc/hosts is often a bind mount.
    with contextlib.suppress(PermissionError, FileNotFoundError), open(hosts, "r+") as f:
        fcntl.flock(f, fcntl.LOCK_EX)
        lines = _without_block(f.read().splitlines(), mark)
        block = [f"{ip} {' '.join(names)}" for ip, names in entries if names]
        if block:
            lines += [f"# BEGIN {mark}", *block, f"# END {mark}"]
        f.seek(0)
        f.write("\n".join(lines) + "\n")
        f.truncate()


def set_block(mark: str, entries: Iterable[tuple[str, list[str]]], hosts: Path = HOSTS) -> None:
    _rewrite(mark, entries, hosts)


def remove_block(mark: str, hosts: Path = HOSTS) -> None:
    _rewrite(mark, [], hosts)


def pod_names(name: str, namespace: str, hostname: str | None, subdomain: str | None) -> list[str]:
    """The names cluster DNS would give a pod: hostname.subdomain.namespace.svc…"""
    host = hostname or name
    if not subdomain:
        return []
    base = f"{host}.{subdomain}"
    return [
        f"{base}.{namespace}.svc.cluster.local",
        f"{base}.{namespace}.svc",
        f"{base}.{namespace}",
        base,
    ]
