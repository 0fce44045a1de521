import {
  JOB_STATES,
  TASK_STATES,
  isTerminal,
  matchesFilter,
  type JobSummary
} from '../restmodels';
import { nextName } from '../jobslist';

const job = (over: Partial<JobSummary> = {}): JobSummary => ({
  id: 'mei~resnet-lr3',
  name: 'resnet-lr3',
  user: 'mei',
  state: 'WAITING',
  virtualCluster: 'research',
  retries: 0,
  submissionTime: '2024-05-01T10:00:00Z',
  totalGpuNumber: 8,
  totalTaskNumber: 2,
  totalTaskRoleNumber: 1,
  ...over
});

describe('models', () => {
  it('has OpenPAI job and task states', () => {
    expect([...JOB_STATES]).toEqual([
      'WAITING',
      'RUNNING',
      'SUCCEEDED',
      'FAILED',
      'STOPPING',
      'STOPPED'
    ]);
    expect([...TASK_STATES]).not.toContain('STOPPING');
  });

  it('knows terminal states as the server does', () => {
    expect(JOB_STATES.filter(isTerminal)).toEqual([
      'SUCCEEDED',
      'FAILED',
      'STOPPED'
    ]);
  });

  it('filters jobs like JobFilter.matches', () => {
    expect(matchesFilter({}, job())).toBe(true);
    expect(matchesFilter({ vc: 'default' }, job())).toBe(false);
    expect(matchesFilter({ state: ['RUNNING'] }, job())).toBe(false);
    expect(matchesFilter({ state: ['WAITING', 'RUNNING'] }, job())).toBe(true);
    expect(matchesFilter({ user: 'tom' }, job())).toBe(false);
    expect(matchesFilter({ keyword: 'LR3' }, job())).toBe(true);
    expect(matchesFilter({ keyword: 'mei~' }, job())).toBe(true);
    expect(matchesFilter({ keyword: 'bert' }, job())).toBe(false);
  });
});

describe('clone names', () => {
  it('counts up a short suffix and keeps long numbers whole', () => {
    expect(nextName('train', [])).toBe('train-2');
    expect(nextName('train-2', [{ name: 'train-3' }])).toBe('train-4');
    expect(nextName('job-20240501-1432', [])).toBe('job-20240501-1432-2');
  });
});
