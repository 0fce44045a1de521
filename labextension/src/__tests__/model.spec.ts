import { PAIClient } from '../api';
import { PAIModel, type IJobEnded } from '../model';
import type { JobState, JobSummary } from '../models';
import { statusText } from '../statusbar';
import { FakeServer } from './fakeserver';

function job(id: string, state: JobState, user = 'mei'): JobSummary {
  return {
    id,
    name: id,
    user,
    state,
    virtualCluster: 'research',
    retries: 0,
    submissionTime: '2024-05-01T10:00:00Z',
    totalGpuNumber: 1,
    totalTaskNumber: 1,
    totalTaskRoleNumber: 1
  };
}

function setup(): { server: FakeServer; model: PAIModel; jobs: JobSummary[] } {
  const jobs: JobSummary[] = [];
  const server = new FakeServer()
    .json('GET', 'pai/api/info', {
      backend: 'local',
      version: '0',
      user: 'mei'
    })
    .json('GET', 'pai/api/images', { items: [] })
    .json('GET', 'pai/api/storage', { items: [] })
    .json('GET', 'pai/api/virtual-clusters', { items: [] })
    .on(
      'GET',
      'pai/api/jobs',
      () =>
        new Response(JSON.stringify({ items: jobs }), {
          headers: { 'Content-Type': 'application/json' }
        })
    );
  const model = new PAIModel(new PAIClient(server.settings));
  return { server, model, jobs };
}

describe('PAIModel', () => {
  it('tells when one of my jobs ends, once', async () => {
    const { model, jobs } = setup();
    await model.refreshCatalogues();
    const ended: IJobEnded[] = [];
    model.jobEnded.connect((_, e) => ended.push(e));
    jobs.push(
      job('a', 'RUNNING'),
      job('b', 'SUCCEEDED'),
      job('c', 'RUNNING', 'tom')
    );
    await model.refresh();
    expect(ended).toEqual([]); // b ended before we watched
    jobs[0] = job('a', 'FAILED');
    jobs[2] = job('c', 'SUCCEEDED', 'tom');
    await model.refresh();
    await model.refresh();
    expect(ended.map(e => [e.job.id, e.previous, e.job.state])).toEqual([
      ['a', 'RUNNING', 'FAILED']
    ]);
    model.dispose();
  });

  it('counts my running and waiting jobs for the status bar', async () => {
    const { model, jobs } = setup();
    await model.refreshCatalogues();
    jobs.push(
      job('a', 'RUNNING'),
      job('b', 'WAITING'),
      job('c', 'WAITING'),
      job('d', 'RUNNING', 'tom')
    );
    await model.refresh();
    expect(statusText(model).text).toBe('1 running · 2 waiting');
    model.dispose();
  });

  it('keeps the last jobs and says why a refresh failed', async () => {
    const { server, model, jobs } = setup();
    jobs.push(job('a', 'RUNNING'));
    await model.refresh();
    server.json(
      'GET',
      'pai/api/jobs',
      { message: 'kube-apiserver refused the connection', errors: [] },
      503
    );
    await expect(model.refresh()).rejects.toThrow();
    expect(model.error).toBe(
      'cluster unreachable: kube-apiserver refused the connection'
    );
    expect(model.jobs.map(j => j.id)).toEqual(['a']);
    model.dispose();
  });
});
