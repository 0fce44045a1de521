import type { AbnormalJob, JobSummary } from '../restmodels';
import { abnormalMessage, toNotify } from '../abnormaljobs';

const job = (id: string): JobSummary => ({
  id,
  name: id.split('~')[1],
  user: id.split('~')[0],
  state: 'RUNNING',
  subState: null,
  virtualCluster: 'default',
  retries: 0,
  submissionTime: '2024-05-01T10:00:00Z',
  launchedTime: '2024-05-01T10:00:01Z',
  completedTime: null,
  exitCode: null,
  totalGpuNumber: 1,
  totalTaskNumber: 1,
  totalTaskRoleNumber: 1,
  waitingReason: null,
  kind: 'job'
});

const abnormal = (id: string, mayStop: boolean): AbnormalJob => ({
  job: job(id),
  reasons: ['GPU utilisation 3 % over the last hour (under 10 %)'],
  gpuPercentLastHour: 3,
  mayStop
});

describe('abnormal jobs', () => {
  it('notify about the user’s own jobs, once each', () => {
    const notified = new Set<string>(['alice~old']);
    const items = [
      abnormal('alice~old', true),
      abnormal('alice~idle', true),
      abnormal('bob~theirs', false)
    ];
    expect(toNotify(items, notified).map(a => a.job.id)).toEqual([
      'alice~idle'
    ]);
  });

  it('say which job and why', () => {
    expect(abnormalMessage(abnormal('alice~idle', true))).toBe(
      'Your job idle looks abnormal: GPU utilisation 3 % over the last hour (under 10 %).'
    );
  });
});
