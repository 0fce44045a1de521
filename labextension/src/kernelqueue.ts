/**
 * Remote kernels waiting in their VC's queue: while a kernel's job waits, a
 * notification says why in words ("waiting for 2 GPUs in VC research: 8 of 8
 * in use, 1 job ahead"), updated as it changes, with Cancel (stops the job,
 * which ends the kernel's start with that reason). The kernel provisioner on
 * the server words its log line the same way (jupyter_pai/kernels/queue.py).
 */
import { Notification } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';

import type { PAIClient } from './api';
import type { JobSummary, VirtualCluster } from './restmodels';

/** How backends say "the VC is full"; anything else is worth adding. */
const FULL_QUEUE = ['waiting for', 'queued behind', 'queue ', 'submitted'];

function plural(n: number, word: string): string {
  return `${n} ${word}${n === 1 ? '' : 's'}`;
}

/** The words for one waiting kernel job, from the waiting jobs and its VC. */
export function queueMessage(
  job: JobSummary,
  waiting: JobSummary[],
  vc: VirtualCluster | undefined
): string {
  const ahead = waiting.filter(
    j =>
      j.id !== job.id &&
      j.virtualCluster === job.virtualCluster &&
      j.submissionTime <= job.submissionTime
  ).length;
  const parts: string[] = [];
  if (vc) {
    parts.push(`${vc.used.gpu} of ${vc.capacity.gpu} in use`);
  }
  parts.push(`${plural(ahead, 'job')} ahead`);
  let text =
    `waiting for ${plural(job.totalGpuNumber, 'GPU')} in VC ` +
    `${job.virtualCluster}: ${parts.join(', ')}`;
  const reason = job.waitingReason ?? '';
  if (reason && !FULL_QUEUE.some(p => reason.startsWith(p))) {
    text += ` (${reason})`;
  }
  return text;
}

/** Notifications for the user's waiting kernels, polled every second while shown. */
export class KernelQueueNotifier {
  constructor(
    private readonly client: PAIClient,
    private readonly user: () => string | null
  ) {
    this._poll = new Poll({
      factory: () => this.refresh(),
      frequency: { interval: 1000, backoff: true, max: 30 * 1000 },
      name: 'jupyter-pai:kernel-queue',
      standby: 'when-hidden'
    });
  }

  async refresh(): Promise<void> {
    const waiting = await this.client.jobs({ state: ['WAITING'] });
    const me = this.user();
    const kernels = waiting.filter(
      j => j.kind === 'kernel' && (me === null || j.user === me)
    );
    const vcs = kernels.length ? await this.client.virtualClusters() : [];
    const seen = new Set<string>();
    for (const job of kernels) {
      seen.add(job.id);
      const vc = vcs.find(v => v.name === job.virtualCluster);
      const message = `Kernel ${job.name}: ${queueMessage(job, waiting, vc)}`;
      const actions = [
        {
          label: 'Cancel',
          caption: 'Stop the kernel’s job: the kernel does not start',
          callback: () => void this.client.stopJob(job.id)
        }
      ];
      const id = this._shown.get(job.id);
      if (id === undefined) {
        this._shown.set(
          job.id,
          Notification.emit(message, 'in-progress', {
            autoClose: false,
            actions
          })
        );
      } else {
        Notification.update({ id, message, type: 'in-progress', actions });
      }
    }
    for (const [jobId, id] of this._shown) {
      if (!seen.has(jobId)) {
        Notification.dismiss(id);
        this._shown.delete(jobId);
      }
    }
  }

  dispose(): void {
    this._poll.dispose();
  }

  private _poll: Poll;
  private _shown = new Map<string, string>();
}
