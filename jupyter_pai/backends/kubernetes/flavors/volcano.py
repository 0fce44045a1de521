"""Volcano: one ``batch.volcano.sh`` Job, one Volcano task per task role, the virtual
cluster as the Volcano queue, gang = ``minAvailable``.

Everything Volcano's admission webhook would default is set here, so clusters without the
webhook behave the same. OpenPAI's completion policy is written into the Job, so Volcano's
controller ends a decided job with no jupyter-pai process running (:func:`completion_plan`);
eviction restarts the whole job (``PodEvicted → RestartJob``), like OpenPAI; with
``jobRetryCount: 0`` that is unlimited, with n > 0 preemptions count against the n retries
(Volcano has one restart counter).

Stop is a bus ``Command`` with ``AbortJob``: the job stays, in phase ``Aborted``. A waiting
gang says why through its PodGroup's ``Unschedulable`` condition.

A virtual cluster is a Volcano ``Queue`` (``volcano_queues``: guaranteed share, may
borrow, may lend). The scheduler does the preempting: a reclaimed pod gets the event
``Evict`` ("Pod is evicted, because of reclaim") and the job's ``PodEvicted → RestartJob``
policy recreates every pod, so the job waits again, saying why, and runs when capacity
frees.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from ....errors import FieldError, SpecError
from ....spec.protocol import JobProtocol
from ...completion_policy import Decision
from ...models import JobState, JobSummary, Resources, VirtualCluster
from .. import vc_usage
from ..gpu_placement import sku_field, typed_roles, waiting_for
from ..naming import JobNames, base_labels
from ..pods import Manifest
from ..resources import Kind
from ..states import Ending
from .base import Built, Flavor, ObjectsOf, StopStep, Waiting, companions, primary_metadata
from .volcano_queues import VOLCANO_QUEUE, preemption_reason, queue_virtual_clusters, type_queues

VOLCANO_JOB = Kind("batch.volcano.sh/v1alpha1", "Job", "jobs")
VOLCANO_POD_GROUP = Kind("scheduling.volcano.sh/v1beta1", "PodGroup", "podgroups")
VOLCANO_COMMAND = Kind("bus.volcano.sh/v1alpha1", "Command", "commands")

SCHEDULER = "volcano"
TASK_INDEX_ANNOTATION = "volcano.sh/task-index"
# The vcjob's maxRetry when the job itself may not be retried: failures then terminate it
# (no policy restarts it), so only evictions (PodEvicted → RestartJob) restart it, and a
# preempted job must come back however often it is preempted. 0 cannot be written (the
# admission policy defaults it to 3); int32 is the field's type.
UNLIMITED_RESTARTS = 2**31 - 1
#: How each phase of a Job says it ends (any other: it goes on). While Volcano's controller
#: ends a job (a lifecycle policy, ``minSuccess``, a command), the pods it deletes were
#: killed, they did not fail; Aborting / Aborted is a stop (``AbortJob``).
PHASE_ENDINGS = {
    "Completing": Ending(),
    "Completed": Ending(JobState.SUCCEEDED),
    "Terminating": Ending(),
    "Terminated": Ending(JobState.FAILED),
    "Failed": Ending(JobState.FAILED),
    "Aborting": Ending(stopped=True),
    "Aborted": Ending(stopped=True),
}


@dataclass(frozen=True)
class CompletionPlan:
    """OpenPAI's completion policy as Volcano Job fields: task ``policies`` per role, the
    job's ``minSuccess``, and the (role, rule) decisions Volcano thereby acts on itself."""

    policies: dict[str, list[dict[str, Any]]]
    min_success: int | None
    enforced: frozenset[tuple[str, str]]


def completion_plan(job: JobProtocol) -> CompletionPlan:
    """Per role (FrameworkController's rule, :mod:`jupyter_pai.backends.completion_policy`):

    * ``minSucceededInstances`` = instances (the default) → ``TaskCompleted → CompleteJob``
      (Volcano's TaskCompleted fires when every replica of the task has succeeded);
    * 1 ≤ ``minSucceededInstances`` < instances in a one-role job → the Job's ``minSuccess``
      (which counts succeeded pods of all tasks, so it is exact only with one role);
    * ``minFailedInstances: 1`` → ``PodFailed → TerminateJob`` (Terminated: FAILED), or
      ``RestartJob`` while ``jobRetryCount`` allows; with ``taskRetryCount`` n the container
      restarts in place (``restartPolicy: OnFailure``) and ``TaskFailed`` replaces
      ``PodFailed``: Volcano raises it when the role's restarts (summed over its pods, a
      budget per role) reach the task's ``maxRetry`` n + 1;
    * -1 → no policy: Volcano does nothing on that role's successes or failures.

    Volcano cannot count: ``minFailedInstances`` > 1 (PodFailed fires per pod, TaskFailed only
    when in-place restarts exceed ``maxRetry``) and 1 ≤ ``minSucceededInstances`` < instances
    in a job of several roles are left out of ``enforced``; a running jupyter-pai backend ends
    those jobs (:meth:`VolcanoFlavor.ending_steps`)."""
    policies: dict[str, list[dict[str, Any]]] = {}
    min_success: int | None = None
    enforced: set[tuple[str, str]] = set()
    for role, spec in job.task_roles.items():
        mine: list[dict[str, Any]] = []
        if spec.min_failed == 1:
            # With taskRetryCount the container restarts in place (OnFailure: the pod and
            # the earlier attempt's log stay; RestartPod would delete the pod and make one
            # of the same name); TaskFailed fires when the role's restarts reach maxRetry.
            action = "RestartJob" if job.job_retry_count > 0 else "TerminateJob"
            event = "TaskFailed" if spec.task_retry_count > 0 else "PodFailed"
            mine.append({"event": event, "action": action})
            enforced.add((role, "failed"))
        if spec.min_succeeded == spec.instances:
            mine.append({"event": "TaskCompleted", "action": "CompleteJob"})
            enforced.add((role, "succeeded"))
        elif spec.min_succeeded != -1 and len(job.task_roles) == 1:
            min_success = spec.min_succeeded
            enforced.add((role, "succeeded"))
        policies[role] = mine
    return CompletionPlan(policies, min_success, frozenset(enforced))


class VolcanoFlavor(Flavor):
    name = "volcano"
    primary_kind = VOLCANO_JOB
    # Volcano's controller makes the PodGroup (owned by the Job), not us.
    foreign_kinds: ClassVar[tuple[Kind, ...]] = (VOLCANO_POD_GROUP,)
    cluster_kinds: ClassVar[tuple[Kind, ...]] = (VOLCANO_QUEUE,)
    pod_group_kind = VOLCANO_POD_GROUP
    index_annotation = TASK_INDEX_ANNOTATION

    def pod_evicted(self, pod: Manifest) -> bool:
        # vc-scheduler's evictor writes this condition, then deletes the pod.
        return any(
            c.get("type") == "Ready" and c.get("status") == "False" and c.get("reason") == "Evict"
            for c in (pod.get("status") or {}).get("conditions") or []
        )

    def phase(self, primary: Manifest) -> str | None:
        phase = ((primary.get("status") or {}).get("state") or {}).get("phase")
        return None if phase is None else str(phase)

    def ended(self, primary: Manifest) -> Ending | None:
        return PHASE_ENDINGS.get(self.phase(primary) or "")

    def restarts(self, primary: Manifest) -> int:
        return int((primary.get("status") or {}).get("retryCount") or 0)

    def build(self, job: JobProtocol, names: JobNames) -> Built:
        labels = base_labels(names, job.virtual_cluster)
        gang = job.gang_allocation
        plan = completion_plan(job)
        tasks = []
        for role, spec in job.task_roles.items():
            template = self.pod_template(
                job, names, role, scheduler_name=SCHEDULER, subdomain=names.service
            )
            if spec.task_retry_count > 0:
                template["spec"]["restartPolicy"] = "OnFailure"
            tasks.append(
                {
                    "name": names.roles[role],
                    "replicas": spec.instances,
                    "minAvailable": spec.instances if gang else 1,
                    # TaskFailed fires when the role's restarts reach maxRetry.
                    "maxRetry": spec.task_retry_count + 1 if spec.task_retry_count else 0,
                    "policies": plan.policies[role],
                    "template": template,
                }
            )
        vcjob: Manifest = {
            "apiVersion": VOLCANO_JOB.api_version,
            "kind": "Job",
            "metadata": primary_metadata(job, names, self.name),
            "spec": {
                "schedulerName": SCHEDULER,
                "queue": self.queue(job),
                "minAvailable": job.total_instances if gang else 1,
                "maxRetry": job.job_retry_count or UNLIMITED_RESTARTS,
                "policies": [{"event": "PodEvicted", "action": "RestartJob"}],
                # svc: pod host names <job>-<task>-<index> in subdomain <job> (our Service);
                # env: VK_TASK_INDEX for scripts written for Volcano.
                "plugins": {"svc": ["--disable-network-policy=true"], "env": []},
                "tasks": tasks,
            },
        }
        if plan.min_success is not None:
            vcjob["spec"]["minSuccess"] = plan.min_success
        hived = job.extras.hived_scheduler
        # Only a class the job names: a GPU type alone (``skuType``) asks for no priority.
        if hived is not None and "job_priority_class" in hived.model_fields_set:
            vcjob["spec"]["priorityClassName"] = f"pai-{hived.job_priority_class}"
        objects = [*companions(job, names, labels), vcjob]
        return Built(objects=objects, primary=len(objects) - 1)

    def stop_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        return [_command(primary, names, "AbortJob", "StoppedByUser", f"stopped by {names.user}")]

    def split(self, vc: str) -> dict[str, str]:
        """GPU type → queue, where ``vc`` is split by type (else empty)."""
        if self.cluster_objects is None:
            return {}
        return type_queues(self.cluster_objects(VOLCANO_QUEUE)).get(vc, {})

    def queue(self, job: JobProtocol) -> str:
        """The job's queue: its VC's, or where the VC is split by GPU type (a queue per
        type), the queue of the one type its GPU roles name; a SpecError naming the field
        where the job names none, several, or one the VC holds no share of. A job with no
        GPUs goes into the first type's queue (it takes none of its quota)."""
        vc = job.virtual_cluster
        split = self.split(vc)
        if not split:
            return vc
        have = ", ".join(sorted(split))
        typed = typed_roles(job)
        gpu_roles = [r for r, s in job.task_roles.items() if s.resource_per_instance.gpu > 0]
        untyped = [r for r in gpu_roles if r not in typed]
        if untyped:
            raise SpecError(
                [
                    FieldError(
                        sku_field(untyped[0]),
                        f"virtual cluster {vc} holds its GPUs per type ({have}): name the "
                        f"type, e.g. gpuType: {min(split)} or --gpus {min(split)}:N",
                    )
                ]
            )
        names = sorted(set(typed.values()))
        for role, name in typed.items():
            if name not in split:
                raise SpecError(
                    [
                        FieldError(
                            sku_field(role),
                            f"virtual cluster {vc} holds no {name} GPUs; its types: {have}",
                        )
                    ]
                )
        if len(names) > 1:
            role = next(r for r, n in typed.items() if n == names[1])
            raise SpecError(
                [
                    FieldError(
                        sku_field(role),
                        f"on volcano a job of virtual cluster {vc} takes one GPU type (a "
                        f"queue per type): its roles name {' and '.join(names)}",
                    )
                ]
            )
        return split[names[0]] if names else split[min(split)]

    def check_virtual_cluster(
        self, job: JobProtocol, known: Mapping[str, VirtualCluster] | None
    ) -> None:
        super().check_virtual_cluster(job, known)
        self.queue(job)
        vc = (known or {}).get(job.virtual_cluster)
        rows = {t.name: t for t in vc.gpu_types} if vc is not None else {}
        need: dict[str, int] = {}
        for role, name in typed_roles(job).items():
            spec = job.task_roles[role]
            need[name] = need.get(name, 0) + spec.instances * spec.resource_per_instance.gpu
            row = rows.get(name)
            if row is not None and need[name] > row.capacity:
                raise SpecError(
                    [
                        FieldError(
                            sku_field(role),
                            f"the job needs {need[name]} {name} GPUs at once but virtual "
                            f"cluster {job.virtual_cluster} has {row.capacity} of that type",
                        )
                    ]
                )

    def ends_itself(self, job: JobProtocol, decision: Decision) -> bool:
        return (decision.role, decision.rule) in completion_plan(job).enforced

    def ending_steps(
        self, primary: Manifest, names: JobNames, decision: Decision
    ) -> list[StopStep]:
        # What the Job's policies cannot count, a command ends the same way: Completing →
        # Completed, or Terminating → Terminated (AbortJob would read as a stop).
        succeeded = decision.state == JobState.SUCCEEDED
        action = "CompleteJob" if succeeded else "TerminateJob"
        return [_command(primary, names, action, "CompletionPolicy", decision.reason)]

    def missed_event(
        self, primary: Manifest, related: Mapping[Kind, list[Manifest]], pods: int
    ) -> bool:
        # Volcano's job controller acts on PodGroup *updates* only: a PodGroup that went
        # Pending → Inqueue while the controller's watch was broken (a kube-apiserver
        # restart) comes back from its relist as an add, which it ignores, so the job
        # waits with no pods for good. A SyncJob command makes it look again.
        phase = self.phase(primary) or "Pending"
        groups = related.get(VOLCANO_POD_GROUP) or []
        admitted = any(
            (g.get("status") or {}).get("phase") in ("Inqueue", "Running") for g in groups
        )
        return phase == "Pending" and admitted and pods == 0

    def resync_steps(self, primary: Manifest, names: JobNames) -> list[StopStep]:
        message = "its PodGroup is admitted but it has no pods: a missed event"
        return [_command(primary, names, "SyncJob", "MissedPodGroupEvent", message)]

    def why_waiting(self, w: Waiting) -> str:
        # Reclaimed: the job's own policy (PodEvicted → RestartJob) requeued it.
        reclaimed = preemption_reason(w.job, w.job.virtual_cluster, w.events, w.peers)
        if reclaimed:
            return reclaimed
        # A VC split by type: its type queue's share is what the job waits for.
        if w.vc is not None and w.vc.gpu_types and self.split(w.vc.name):
            rows = {t.name: t for t in w.vc.gpu_types}
            need = waiting_for(w.job, w.vc.name, rows)
            if need and any(
                rows[n].free < w.job.task_roles[r].resource_per_instance.gpu
                for r, n in typed_roles(w.job).items()
                if n in rows
            ):
                return need
        return super().why_waiting(w)

    def virtual_clusters(
        self, objects: ObjectsOf, jobs: list[JobSummary], cluster: Resources | None
    ) -> list[VirtualCluster] | None:
        # With no cluster size, what a queue does not cap is unlimited (a queue with no
        # capability, deserved or guarantee, like Volcano's `default`, takes any job).
        return queue_virtual_clusters(
            objects(VOLCANO_QUEUE),
            jobs,
            cluster if cluster is not None else vc_usage.UNLIMITED,
            self.options.gpu_resource,
        )


def _command(
    primary: Manifest, names: JobNames, action: str, reason: str, message: str
) -> StopStep:
    """A bus ``Command`` applying ``action`` to the job (the controller deletes it once run)."""
    meta = primary["metadata"]
    command = {
        "apiVersion": VOLCANO_COMMAND.api_version,
        "kind": "Command",
        "metadata": {
            "generateName": f"{names.base}-{action.removesuffix('Job').lower()}-",
            "ownerReferences": [
                {
                    "apiVersion": VOLCANO_JOB.api_version,
                    "kind": "Job",
                    "name": meta["name"],
                    "uid": meta.get("uid", ""),
                }
            ],
        },
        "action": action,
        "target": {
            "apiVersion": VOLCANO_JOB.api_version,
            "kind": "Job",
            "name": meta["name"],
            "uid": meta.get("uid", ""),
            "controller": True,
        },
        "reason": reason,
        "message": message,
    }
    return StopStep("create", VOLCANO_COMMAND, body=command)
