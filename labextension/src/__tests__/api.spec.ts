import { PAIClient } from '../api';
import {
  PAIRequestError,
  encodePath,
  queryString,
  requestAPI
} from '../apirequest';
import type {
  ConvertResult,
  Info,
  JobDetail,
  JobSummary,
  NotebookJobResult,
  SubmitResult,
  VirtualCluster
} from '../restmodels';
import { FakeServer, jsonResponse } from './fakeserver';

const INFO: Info = {
  backend: 'local',
  flavor: null,
  version: '0.1.0',
  user: 'mei',
  namespace: null,
  gpuSlots: 4
};

const JOB: JobSummary = {
  id: 'mei~train-1',
  name: 'train-1',
  user: 'mei',
  state: 'RUNNING',
  subState: null,
  virtualCluster: 'research',
  retries: 0,
  submissionTime: '2024-05-01T10:00:00Z',
  launchedTime: '2024-05-01T10:01:00Z',
  completedTime: null,
  exitCode: null,
  totalGpuNumber: 8,
  totalTaskNumber: 2,
  totalTaskRoleNumber: 1,
  waitingReason: null
};

describe('requestAPI', () => {
  it('calls <base>/pai/api/<endpoint> and returns the JSON body', async () => {
    const server = new FakeServer().json('GET', 'pai/api/info', INFO);
    const info = await requestAPI<Info>('info', {}, server.settings);
    expect(info).toEqual(INFO);
    expect(server.requests).toHaveLength(1);
    expect(server.requests[0].path).toBe('pai/api/info');
  });

  it('sends the token when the settings have one', async () => {
    const server = new FakeServer('secret').json('GET', 'pai/api/info', INFO);
    await requestAPI<Info>('info', {}, server.settings);
    expect(server.requests[0].headers.get('Authorization')).toBe(
      'token secret'
    );
  });

  it('turns an error body into a typed error with field errors', async () => {
    const body = {
      message:
        'invalid job specification: taskRoles.worker.instances: must be ≥ 1',
      errors: [
        { path: 'taskRoles.worker.instances', message: 'must be ≥ 1' },
        { path: 'name', message: 'must match ^[a-zA-Z0-9_-]+$' }
      ]
    };
    const server = new FakeServer().json('POST', 'pai/api/jobs', body, 400);
    const error = await new PAIClient(server.settings)
      .submitJob('protocolVersion: 2')
      .catch((e: any) => e);
    expect(error).toBeInstanceOf(PAIRequestError);
    expect(error.status).toBe(400);
    expect(error.message).toBe(body.message);
    expect(error.errors).toEqual(body.errors);
    expect(error.unreachable).toBe(false);
  });

  it('says "cluster unreachable" for a 503', async () => {
    const server = new FakeServer().json(
      'GET',
      'pai/api/virtual-clusters',
      {
        message: 'kube-apiserver at 127.0.0.1:6443 refused the connection',
        errors: []
      },
      503
    );
    const error = await new PAIClient(server.settings)
      .virtualClusters()
      .catch((e: any) => e);
    expect(error).toBeInstanceOf(PAIRequestError);
    expect(error.unreachable).toBe(true);
    expect(error.describe()).toBe(
      'cluster unreachable: kube-apiserver at 127.0.0.1:6443 refused the connection'
    );
  });

  it('names the request and status when the body is not JSON', async () => {
    const server = new FakeServer();
    const error = await requestAPI<any>('info', {}, server.settings).catch(
      (e: any) => e
    );
    expect(error).toBeInstanceOf(PAIRequestError);
    expect(error.status).toBe(404);
    expect(error.message).toBe('GET pai/api/info failed: 404 Not Found');
    expect(error.errors).toEqual([]);
  });

  it('reports a network failure as status 0', async () => {
    const server = new FakeServer();
    (server.settings as any).fetch = () =>
      Promise.reject(new TypeError('Failed to fetch'));
    const error = await requestAPI<any>('info', {}, server.settings).catch(
      (e: any) => e
    );
    expect(error).toBeInstanceOf(PAIRequestError);
    expect(error.status).toBe(0);
    expect(error.describe()).toMatch(/^Jupyter server unreachable: /);
  });

  it('returns undefined for an empty body', async () => {
    const server = new FakeServer().on(
      'DELETE',
      'pai/api/jobs/a',
      () => new Response(null, { status: 204 })
    );
    await expect(
      requestAPI('jobs/a', { method: 'DELETE' }, server.settings)
    ).resolves.toBeUndefined();
  });
});

describe('PAIClient', () => {
  it('lists jobs with repeated state filters', async () => {
    const server = new FakeServer().json('GET', 'pai/api/jobs', {
      items: [JOB]
    });
    const jobs = await new PAIClient(server.settings).jobs({
      vc: 'research',
      state: ['RUNNING', 'WAITING'],
      keyword: 'train'
    });
    expect(jobs).toEqual([JOB]);
    const params = server.requests[0].url.searchParams;
    expect(params.get('vc')).toBe('research');
    expect(params.getAll('state')).toEqual(['RUNNING', 'WAITING']);
    expect(params.get('keyword')).toBe('train');
    expect(params.has('user')).toBe(false);
  });

  it('reads every list from its items envelope', async () => {
    const vc: VirtualCluster = {
      name: 'research',
      capacity: { gpu: 32, cpu: 256, memoryMB: 1 << 20 },
      used: { gpu: 24, cpu: 100, memoryMB: 1000 },
      free: { gpu: 8, cpu: 156, memoryMB: 1000 },
      runningJobs: 3,
      queuedJobs: 1,
      queued: { gpu: 8, cpu: 8, memoryMB: 0 }
    };
    const server = new FakeServer()
      .json('GET', 'pai/api/virtual-clusters', { items: [vc] })
      .json('GET', 'pai/api/images', {
        items: [{ name: 'pytorch', uri: 'pytorch/pytorch:2.3', gpu: true }]
      })
      .json('GET', 'pai/api/storage', { items: [] })
      .json('GET', 'pai/api/jobs/j1/events', {
        items: [
          {
            time: '2024-05-01T10:00:00Z',
            type: 'Normal',
            reason: 'Scheduled',
            message: 'placed',
            source: 'job'
          }
        ]
      });
    const client = new PAIClient(server.settings);
    expect(await client.virtualClusters()).toEqual([vc]);
    expect((await client.images()).map(i => i.name)).toEqual(['pytorch']);
    expect(await client.storages()).toEqual([]);
    expect((await client.events('j1')).map(e => e.reason)).toEqual([
      'Scheduled'
    ]);
  });

  it('submits YAML as text/yaml and objects as JSON', async () => {
    const detail: JobDetail = { ...JOB, spec: {}, tasks: [] };
    const answer: SubmitResult = {
      job: detail,
      warnings: [{ path: 'fancy', message: 'unknown field, ignored' }]
    };
    const server = new FakeServer().on('POST', 'pai/api/jobs', () =>
      jsonResponse(answer, 201)
    );
    const client = new PAIClient(server.settings);
    const { job, warnings } = await client.submitJob(
      'protocolVersion: 2\nname: a\n'
    );
    expect(job.id).toBe(JOB.id);
    expect(warnings).toEqual(answer.warnings);
    await client.submitJob({ protocolVersion: 2, name: 'a' });
    expect(server.requests[0].headers.get('Content-Type')).toBe('text/yaml');
    expect(server.requests[0].body).toBe('protocolVersion: 2\nname: a\n');
    expect(server.requests[1].headers.get('Content-Type')).toBe(
      'application/json'
    );
    expect(JSON.parse(server.requests[1].body)).toEqual({
      protocolVersion: 2,
      name: 'a'
    });
  });

  it('runs a notebook as a job (POST notebook-jobs)', async () => {
    const answer: NotebookJobResult = {
      job: { ...JOB, spec: {}, tasks: [] },
      warnings: [],
      output: 'study/analysis-20261123-101500.ipynb',
      outputLocation: '/home/mei/study/analysis-20261123-101500.ipynb'
    };
    const server = new FakeServer().on('POST', 'pai/api/notebook-jobs', () =>
      jsonResponse(answer, 201)
    );
    const result = await new PAIClient(server.settings).submitNotebook({
      path: 'study/analysis.ipynb',
      gpus: 1,
      params: { alpha: '0.5' }
    });
    expect(result.output).toBe(answer.output);
    expect(server.requests[0].headers.get('Content-Type')).toBe(
      'application/json'
    );
    expect(JSON.parse(server.requests[0].body)).toEqual({
      path: 'study/analysis.ipynb',
      gpus: 1,
      params: { alpha: '0.5' }
    });
  });

  it('converts a job without submitting it (POST convert)', async () => {
    const answer: ConvertResult = {
      format: 'v1',
      job: { protocolVersion: 2, name: 'old', taskRoles: {} },
      warnings: [{ path: '', message: 'converted from an OpenPAI v1 job' }]
    };
    const server = new FakeServer().json('POST', 'pai/api/convert', answer);
    const client = new PAIClient(server.settings);
    const text = '{"jobName": "old", "image": "i", "taskRoles": []}';
    expect(await client.convertJob(text)).toEqual(answer);
    await client.convertJob({ jobName: 'old' });
    expect(server.requests[0].method).toBe('POST');
    expect(server.requests[0].headers.get('Content-Type')).toBe('text/yaml');
    expect(server.requests[0].body).toBe(text);
    expect(server.requests[1].headers.get('Content-Type')).toBe(
      'application/json'
    );
    expect(JSON.parse(server.requests[1].body)).toEqual({ jobName: 'old' });
  });

  it('reports a job the converter refuses with its v1 fields', async () => {
    const body = {
      message: 'invalid job specification: authFile: cannot be converted',
      errors: [{ path: 'authFile', message: 'cannot be converted' }]
    };
    const server = new FakeServer().json('POST', 'pai/api/convert', body, 400);
    const error = await new PAIClient(server.settings)
      .convertJob('{"jobName": "g", "authFile": "hdfs://c"}')
      .catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PAIRequestError);
    expect((error as PAIRequestError).status).toBe(400);
    expect((error as PAIRequestError).errors).toEqual(body.errors);
  });

  it('encodes job ids and stops with DELETE', async () => {
    const server = new FakeServer().json('DELETE', 'pai/api/jobs/mei~a%20b', {
      ...JOB,
      state: 'STOPPING'
    });
    const job = await new PAIClient(server.settings).stopJob('mei~a b');
    expect(job?.state).toBe('STOPPING');
    expect(server.requests[0].method).toBe('DELETE');
  });

  it('reads a log tail and the X-Log-Size header', async () => {
    const server = new FakeServer().on(
      'GET',
      'pai/api/jobs/j1/logs',
      () =>
        new Response('line 1\nline 2\n', {
          headers: { 'Content-Type': 'text/plain', 'X-Log-Size': '123456' }
        })
    );
    const chunk = await new PAIClient(server.settings).logs('j1', {
      role: 'worker',
      index: 1,
      tail: 100
    });
    expect(chunk).toEqual({
      text: 'line 1\nline 2\n',
      offset: null,
      size: 123456
    });
    const params = server.requests[0].url.searchParams;
    expect(params.get('role')).toBe('worker');
    expect(params.get('index')).toBe('1');
    expect(params.get('tail')).toBe('100');
    expect(params.has('follow')).toBe(false);
  });

  it('reads a byte range of a log', async () => {
    const server = new FakeServer().on(
      'GET',
      'pai/api/jobs/j1/logs',
      () => new Response('abc', { headers: { 'X-Log-Size': '10' } })
    );
    const chunk = await new PAIClient(server.settings).logs('j1', {
      role: 'worker',
      index: 0,
      offset: 4,
      limit: 3
    });
    expect(chunk).toEqual({ text: 'abc', offset: 4, size: 10 });
    const params = server.requests[0].url.searchParams;
    expect(params.get('offset')).toBe('4');
    expect(params.get('limit')).toBe('3');
  });

  it('follows a streamed log piece by piece', async () => {
    const encoder = new TextEncoder();
    const server = new FakeServer().on('GET', 'pai/api/jobs/j1/logs', () => {
      // A streamed body: two pieces, the second cut inside a UTF-8 character.
      const bytes = encoder.encode('epoch 1 loss 0.9\nepoch 2 loss 0.5 ✓\n');
      const cut = bytes.length - 3;
      const pieces = [bytes.slice(0, cut), bytes.slice(cut)];
      const reader = {
        read: async () =>
          pieces.length
            ? { done: false, value: pieces.shift() }
            : { done: true, value: undefined },
        cancel: async () => undefined,
        releaseLock: () => undefined
      };
      return {
        ok: true,
        status: 200,
        headers: new Headers({ 'Content-Type': 'text/plain' }),
        body: { getReader: () => reader }
      } as unknown as Response;
    });
    const pieces: string[] = [];
    await new PAIClient(server.settings).followLogs(
      'j1',
      { role: 'worker', index: 0, tail: 10 },
      text => pieces.push(text)
    );
    expect(pieces.join('')).toBe('epoch 1 loss 0.9\nepoch 2 loss 0.5 ✓\n');
    expect(pieces.length).toBe(2);
    expect(server.requests[0].url.searchParams.get('follow')).toBe('true');
  });

  it('tells a storage listing from a file', async () => {
    const listing = {
      storage: 'team',
      path: 'ckpt',
      type: 'directory',
      entries: [{ name: 'a.txt', path: 'ckpt/a.txt', type: 'file', size: 3 }]
    };
    const server = new FakeServer()
      .json('GET', 'pai/api/storage/team/ckpt', listing)
      .on(
        'GET',
        'pai/api/storage/team/ckpt/a.txt',
        () =>
          new Response('abcdef', { headers: { 'Content-Type': 'text/plain' } })
      );
    const client = new PAIClient(server.settings);
    const dir = await client.storageContent('team', 'ckpt');
    expect(dir).toEqual({ kind: 'directory', listing });
    const file = await client.storageContent('team', 'ckpt/a.txt', 4);
    expect(file).toMatchObject({ kind: 'file', text: 'abcd', truncated: true });
  });

  it('adds the token to download links', () => {
    const client = new PAIClient(new FakeServer('t k').settings);
    expect(client.downloadUrl('jobs/j1/logs?role=w&index=0')).toBe(
      'http://localhost:8888/lab-base/pai/api/jobs/j1/logs?role=w&index=0&token=t%20k'
    );
  });
});

describe('helpers', () => {
  it('builds query strings from defined values only', () => {
    expect(
      queryString({ a: 1, b: undefined, c: null, d: '', e: ['x', 'y'] })
    ).toBe('?a=1&e=x&e=y');
    expect(queryString({})).toBe('');
  });

  it('encodes paths segment by segment', () => {
    expect(encodePath('/a b/c#d/')).toBe('a%20b/c%23d');
  });
});
