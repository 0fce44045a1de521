"""Names and labels of a job's Kubernetes objects.

Every name is made DNS-safe by one slug function and stored in the job's annotations when
it is created (see :data:`ANN_NAMES`), so a reader never recomputes them."""

from __future__ import annotations

import hashlib
import json
import re
import sys
from dataclasses import dataclass, field

from ...spec.protocol import JobProtocol

DOMAIN = "jupyter-pai.io"
LABEL_MANAGED_BY = "app.kubernetes.io/managed-by"
MANAGED_BY = "jupyter-pai"
LABEL_USER = f"{DOMAIN}/user"
LABEL_VC = f"{DOMAIN}/virtual-cluster"
LABEL_JOB = f"{DOMAIN}/job"
LABEL_ROLE = f"{DOMAIN}/role"
LABEL_INDEX = f"{DOMAIN}/index"
LABEL_PRIMARY = f"{DOMAIN}/primary"
ANN_JOB_ID = f"{DOMAIN}/job-id"
ANN_USER = f"{DOMAIN}/user"
ANN_NAME = f"{DOMAIN}/job-name"
ANN_SPEC = f"{DOMAIN}/spec"
ANN_NAMES = f"{DOMAIN}/names"
ANN_STOP = f"{DOMAIN}/stop-requested"
ANN_FLAVOR = f"{DOMAIN}/flavor"
#: The completion policy's decision, recorded once the backend enforced it.
ANN_OUTCOME = f"{DOMAIN}/outcome"
# A ConfigMap keeping an evicted attempt's log (``logarchive``), and when its pod was made.
LABEL_ARCHIVED = f"{DOMAIN}/archived-log"
ANN_POD_CREATED = f"{DOMAIN}/pod-created"

#: Budget for the job's base name: pod host names ``<base>-<role>-<index>`` stay under 63.
BASE_MAX = 30
ROLE_MAX = 20


def _digest(text: str, n: int = 5) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:n]


def slug(text: str, max_len: int = 63) -> str:
    """A DNS-1035 label: lowercase letters, digits and '-', starting with a letter."""
    s = re.sub(r"[^a-z0-9-]+", "-", text.lower()).strip("-")
    s = re.sub(r"-{2,}", "-", s)
    if not s or not s[0].isalpha():
        s = "x" + ("-" + s if s else "")
    return s[:max_len].rstrip("-")


def label_value(text: str) -> str:
    """A label value (63 characters of [A-Za-z0-9._-], alphanumeric at both ends)."""
    s = re.sub(r"[^A-Za-z0-9._-]+", "-", text).strip("-._")
    if len(s) > 63 or s != text:
        s = f"{s[:57].rstrip('-._')}-{_digest(text)}"
    return s


def job_id(user: str, name: str) -> str:
    """OpenPAI's ``<user>~<name>``, the id users see and the API takes."""
    return f"{user}~{name}"


@dataclass(frozen=True, slots=True)
class JobNames:
    """The generated names of one job's objects."""

    job_id: str
    user: str
    name: str
    base: str
    roles: dict[str, str] = field(default_factory=dict)

    @property
    def service(self) -> str:
        return self.base

    @property
    def secret(self) -> str:
        return f"{self.base}-secrets"

    def role_object(self, role: str) -> str:
        """Per-role object (a batch Job, a replicated job or task of the workload object)."""
        return f"{self.base}-{self.roles[role]}"

    def pod_host(self, role: str, index: int) -> str:
        return f"{self.role_object(role)}-{index}"

    def to_json(self) -> str:
        return json.dumps({"base": self.base, "roles": self.roles}, sort_keys=True)

    @classmethod
    def from_annotations(cls, annotations: dict[str, str]) -> JobNames:
        stored = json.loads(annotations[ANN_NAMES])
        return cls(
            job_id=annotations[ANN_JOB_ID],
            user=annotations[ANN_USER],
            name=annotations[ANN_NAME],
            base=stored["base"],
            # Role names repeat across a namespace's jobs: kept once (see ``watch._shared``).
            roles={sys.intern(k): sys.intern(v) for k, v in stored["roles"].items()},
        )


def make_names(job: JobProtocol, user: str) -> JobNames:
    """Names for a new job. The base is the user and job name made DNS-safe plus a digest of
    the exact id, so ``a_b`` and ``a-b`` (or two long names) never collide."""
    jid = job_id(user, job.name)
    readable = slug(f"{user}-{job.name}", BASE_MAX - 6)
    base = f"{readable}-{_digest(jid)}"
    roles: dict[str, str] = {}
    used: set[str] = set()
    for role in job.task_roles:
        r = slug(role, ROLE_MAX)
        if r in used or r != role.lower().replace("_", "-"):
            r = f"{slug(role, ROLE_MAX - 6)}-{_digest(role, 4)}"
        used.add(r)
        roles[role] = r
    return JobNames(job_id=jid, user=user, name=job.name, base=base, roles=roles)


def base_labels(names: JobNames, vc: str) -> dict[str, str]:
    return {
        LABEL_MANAGED_BY: MANAGED_BY,
        LABEL_USER: label_value(names.user),
        LABEL_VC: label_value(vc),
        LABEL_JOB: names.base,
    }


def selector(names: JobNames) -> str:
    return f"{LABEL_MANAGED_BY}={MANAGED_BY},{LABEL_JOB}={names.base}"
