import { PAIClient } from '../api';
import { PAIModel, type IJobEnded } from '../panelstate';
import type { JobState, JobSummary } from '../restmodels';
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

describe('PAIModel with conditional requests and the change stream', () => {
  it('sends the last ETag and keeps its list on a 304', async () => {
    const jobs = [job('a', 'RUNNING')];
    let etag = '"v1"';
    const { server, model } = setup();
    server.on('GET', 'pai/api/jobs', request => {
      if (request.headers.get('If-None-Match') === etag) {
        return new Response(null, { status: 304, headers: { ETag: etag } });
      }
      return new Response(JSON.stringify({ items: jobs, total: jobs.length }), {
        headers: { 'Content-Type': 'application/json', ETag: etag }
      });
    });
    await model.refresh();
    await model.refresh();
    const sent = server.requests
      .filter(r => r.path === 'pai/api/jobs')
      .map(r => r.headers.get('If-None-Match'));
    expect(sent).toEqual([null, '"v1"']);
    expect(model.jobs.map(j => j.id)).toEqual(['a']);

    jobs[0] = job('a', 'SUCCEEDED');
    etag = '"v2"';
    await model.refresh();
    expect(model.jobs.map(j => j.state)).toEqual(['SUCCEEDED']);
    model.dispose();
  });

  it('applies changes from the stream and tells when my job ends', async () => {
    const sources: { url: string; fire: (type: string, data: any) => void }[] =
      [];
    const { server, model, jobs } = setup();
    const streamed = new PAIModel(new PAIClient(server.settings), url => {
      const listeners = new Map<string, (e: MessageEvent) => void>();
      sources.push({
        url,
        fire: (type, data) =>
          listeners.get(type)?.({ data: JSON.stringify(data) } as MessageEvent)
      });
      return {
        onerror: null,
        addEventListener: (type: string, l: (e: MessageEvent) => void) =>
          listeners.set(type, l),
        close: () => undefined
      };
    });
    model.dispose();
    jobs.push({
      ...job('old', 'SUCCEEDED'),
      submissionTime: '2024-04-01T00:00:00Z'
    });
    await streamed.start();
    expect(sources.map(s => s.url)).toEqual([
      'http://localhost:8888/lab-base/pai/api/job-changes'
    ]);
    expect(streamed.streaming).toBe(false);
    sources[0].fire('ready', {});
    expect(streamed.streaming).toBe(true);
    await streamed.refreshNow();
    expect(streamed.jobs.map(j => j.id)).toEqual(['old']);

    const ended: IJobEnded[] = [];
    streamed.jobEnded.connect((_, e) => ended.push(e));
    sources[0].fire('added', { type: 'added', job: job('new', 'RUNNING') });
    expect(streamed.jobs.map(j => j.id)).toEqual(['new', 'old']);
    sources[0].fire('modified', {
      type: 'modified',
      job: job('new', 'SUCCEEDED')
    });
    expect(streamed.jobs.map(j => [j.id, j.state])).toEqual([
      ['new', 'SUCCEEDED'],
      ['old', 'SUCCEEDED']
    ]);
    expect(ended.map(e => [e.job.id, e.previous])).toEqual([
      ['new', 'RUNNING']
    ]);
    sources[0].fire('deleted', {
      type: 'deleted',
      job: job('old', 'SUCCEEDED')
    });
    expect(streamed.jobs.map(j => j.id)).toEqual(['new']);
    streamed.dispose();
  });
});

describe('PAIModel paging the job list', () => {
  /** A server with `count` jobs, newest first, paged as `GET jobs` pages. */
  function paged(count: number): {
    server: FakeServer;
    model: PAIModel;
    jobs: JobSummary[];
  } {
    const { server, model, jobs } = setup();
    for (let i = 0; i < count; i++) {
      jobs.push(job(`job-${String(count - i).padStart(4, '0')}`, 'SUCCEEDED'));
    }
    server.on('GET', 'pai/api/jobs', request => {
      const limit = Number(
        request.url.searchParams.get('limit') ?? jobs.length
      );
      const start = Number(request.url.searchParams.get('continue') ?? 0);
      const end = Math.min(jobs.length, start + limit);
      const body = {
        items: jobs.slice(start, end),
        total: jobs.length,
        continue: end < jobs.length ? String(end) : null
      };
      return new Response(JSON.stringify(body), {
        headers: { 'Content-Type': 'application/json', ETag: `"${start}"` }
      });
    });
    return { server, model, jobs };
  }

  function limits(server: FakeServer): [string | null, string | null][] {
    return server.requests
      .filter(r => r.path === 'pai/api/jobs')
      .map(r => [
        r.url.searchParams.get('limit'),
        r.url.searchParams.get('continue')
      ]);
  }

  it('reads the newest page, then one more per "Show more"', async () => {
    const { server, model } = paged(250);
    await model.refreshNow();
    expect(model.jobs.length).toBe(100);
    expect(model.jobsTotal).toBe(250);
    expect(model.jobs[0].id).toBe('job-0250');
    await model.showMoreJobs();
    expect(model.jobs.length).toBe(200);
    expect(model.jobs[199].id).toBe('job-0051');
    await model.showMoreJobs();
    expect(model.jobs.map(j => j.id).slice(-1)).toEqual(['job-0001']);
    expect(model.jobs.length).toBe(250);
    // Each poll reads as many as are shown, in one request while they fit.
    expect(limits(server)).toEqual([
      ['100', null],
      ['200', null],
      ['300', null]
    ]);
    model.dispose();
  });

  it('follows `continue` past the largest page', async () => {
    const { server, model } = paged(2500);
    await model.refreshNow();
    for (let i = 0; i < 11; i++) {
      await model.showMoreJobs();
    }
    expect(model.jobs.length).toBe(1200);
    expect(model.jobs[1199].id).toBe('job-1301');
    expect(limits(server).slice(-2)).toEqual([
      ['1000', null],
      ['200', '1000']
    ]);
    model.dispose();
  });

  it('counts jobs added and deleted by the stream', async () => {
    const { model } = paged(150);
    await model.refreshNow();
    model.applyChange({ type: 'added', job: job('job-9999', 'RUNNING') });
    expect(model.jobsTotal).toBe(151);
    expect(model.jobs[0].id).toBe('job-9999');
    model.applyChange({ type: 'deleted', job: job('job-0150', 'SUCCEEDED') });
    expect(model.jobsTotal).toBe(150);
    expect(model.jobs.length).toBe(100);
    model.dispose();
  });
});
