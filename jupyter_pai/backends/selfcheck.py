"""What ``jupyter pai check`` reports, for any backend: the permissions the backend lacks
where its jobs run, in words, and whether what it relies on answers. The Kubernetes
backend fills it in (``backends.kubernetes.selfcheck``); a backend whose jobs run on this
machine has nothing to check."""

from __future__ import annotations

import logging
from typing import Protocol

from pydantic import Field

from .models import ApiModel


class MissingPermission(ApiModel):
    """A permission the flavor uses that the user does not hold (or that could not be
    checked), with the sentence to show."""

    group: str
    resource: str
    verb: str
    #: None: cluster wide.
    namespace: str | None = None
    why: str
    message: str


class Reachability(ApiModel):
    """Whether one thing the backend relies on answers: the API server, the scheduler's
    resources, HiveD, Prometheus."""

    name: str
    ok: bool
    detail: str


class SelfCheck(ApiModel):
    """``GET check`` and ``jupyter pai check --json``: what the backend may not do where
    its jobs run and what does not answer; ``ok`` when nothing is missing or unreachable."""

    backend: str
    flavor: str | None = None
    namespace: str | None = None
    user: str
    ok: bool
    #: How many permissions were asked about.
    checked: int = 0
    missing: list[MissingPermission] = Field(default_factory=list)
    reachability: list[Reachability] = Field(default_factory=list)
    note: str = ""

    def lines(self) -> list[str]:
        """The report as a terminal shows it."""
        where = ", ".join(
            f"{k} {v}"
            for k, v in (
                ("flavor", self.flavor),
                ("namespace", self.namespace),
                ("user", self.user),
            )
            if v
        )
        out = [f"{self.backend} backend ({where})"]
        if self.note:
            out.append(f"ok: {self.note}")
        out += [f"{'ok' if r.ok else 'FAILED'}: {r.name}: {r.detail}" for r in self.reachability]
        if self.checked and not self.missing:
            out.append(f"ok: all {self.checked} permissions the {self.flavor} flavor uses are held")
        out += [f"MISSING: {m.message}" for m in self.missing]
        return out


def nothing_to_check(backend: str, user: str) -> SelfCheck:
    """The answer of a backend whose jobs run on this machine."""
    return SelfCheck(
        backend=backend,
        user=user,
        ok=True,
        note=f"{backend} backend: jobs run on this machine, nothing to check on a cluster",
    )


class Checked(Protocol):
    """What the check at start needs of a backend (:class:`.Backend` has it)."""

    @property
    def log(self) -> logging.Logger | logging.LoggerAdapter[logging.Logger]: ...

    async def self_check(self) -> SelfCheck: ...


async def check_and_log(backend: Checked) -> None:
    """The server's check at start, in the background: each problem logged once, as a
    warning an admin finds in the server's log."""
    try:
        report = await backend.self_check()
    except Exception:  # a diagnosis: never a reason for the backend to fail
        backend.log.exception("jupyter-pai: the permission self-check failed")
        return
    for r in report.reachability:
        if not r.ok:
            backend.log.warning("jupyter-pai: %s: %s", r.name, r.detail)
    for m in report.missing:
        backend.log.warning("jupyter-pai: %s", m.message)
    if report.ok and report.checked:
        backend.log.info("jupyter-pai: self-check: all %d permissions held", report.checked)
