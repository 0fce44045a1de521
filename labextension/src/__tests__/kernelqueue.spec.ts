/**
 * A waiting remote kernel's words: the same as the provisioner's
 * (jupyter_pai/kernels/queue.py), from the waiting jobs and the kernel's VC.
 */
import { queueMessage } from '../kernelqueue';
import type { JobSummary, VirtualCluster } from '../restmodels';

function job(extra: Partial<JobSummary>): JobSummary {
  return {
    id: 'alice~kernel-1',
    name: 'kernel-1',
    user: 'alice',
    state: 'WAITING',
    virtualCluster: 'research',
    retries: 0,
    submissionTime: '2026-11-23T10:00:02Z',
    totalGpuNumber: 2,
    totalTaskNumber: 1,
    totalTaskRoleNumber: 1,
    kind: 'kernel',
    ...extra
  };
}

const research: VirtualCluster = {
  name: 'research',
  capacity: { gpu: 8, cpu: 64, memoryMB: 1024 },
  used: { gpu: 8, cpu: 8, memoryMB: 0 },
  free: { gpu: 0, cpu: 56, memoryMB: 1024 },
  runningJobs: 2,
  queuedJobs: 2,
  queued: { gpu: 6, cpu: 0, memoryMB: 0 }
};

describe('queueMessage', () => {
  it('counts the jobs ahead in the same VC', () => {
    const kernel = job({
      waitingReason: 'queue research: 8 of 8 GPUs in use, needs 2'
    });
    const ahead = job({
      id: 'bob~train',
      kind: 'job',
      submissionTime: '2026-11-23T10:00:01Z'
    });
    const behind = job({
      id: 'bob~late',
      submissionTime: '2026-11-23T10:00:09Z'
    });
    const elsewhere = job({
      id: 'x',
      virtualCluster: 'default',
      submissionTime: '2026-11-23T09:00:00Z'
    });
    expect(
      queueMessage(kernel, [ahead, kernel, behind, elsewhere], research)
    ).toBe('waiting for 2 GPUs in VC research: 8 of 8 in use, 1 job ahead');
  });

  it('adds what the backend says beyond a full queue', () => {
    const kernel = job({
      totalGpuNumber: 1,
      waitingReason: 'no node has 16 free GPUs'
    });
    expect(queueMessage(kernel, [kernel], undefined)).toBe(
      'waiting for 1 GPU in VC research: 0 jobs ahead (no node has 16 free GPUs)'
    );
  });
});
