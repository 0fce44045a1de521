/**
 * The permission self-check in the cluster view: what `GET check` answers,
 * shown as problems first (each missing permission in words), then what holds.
 */
import * as React from 'react';
import { act } from 'react';

import {
  checkLines,
  ClusterCheck,
  loadCheck,
  SelfCheck
} from '../clustercheck';
import { FakeServer } from './fakeserver';

const MISSING =
  'cannot create batch.volcano.sh/jobs in namespace alice — ask your admin to ' +
  'bind jupyter-pai-user; without it you cannot submit a job (its Volcano Job)';

const UNBOUND: SelfCheck = {
  backend: 'kubernetes',
  flavor: 'volcano',
  namespace: 'alice',
  user: 'alice',
  ok: false,
  checked: 36,
  missing: [
    {
      group: 'batch.volcano.sh',
      resource: 'jobs',
      verb: 'create',
      namespace: 'alice',
      why: 'submit a job (its Volcano Job)',
      message: MISSING
    }
  ],
  reachability: [
    { name: 'API server', ok: true, detail: 'https://k8s answers' },
    { name: 'Prometheus', ok: false, detail: 'did not answer' }
  ],
  note: ''
};

const LOCAL: SelfCheck = {
  backend: 'local',
  flavor: null,
  namespace: null,
  user: 'alice',
  ok: true,
  checked: 0,
  missing: [],
  reachability: [],
  note: 'local backend: jobs run on this machine, nothing to check on a cluster'
};

describe('the permission check', () => {
  it('lists each missing permission and what does not answer first', () => {
    expect(checkLines(UNBOUND)).toEqual([
      {
        ok: false,
        text: '1 permission missing: ask your admin to bind jupyter-pai-user in namespace alice.'
      },
      {
        ok: false,
        text:
          'cannot create batch.volcano.sh/jobs in namespace alice: without it you ' +
          'cannot submit a job (its Volcano Job)'
      },
      { ok: false, text: 'Prometheus: did not answer' },
      { ok: true, text: 'API server: https://k8s answers' }
    ]);
  });

  it('groups the verbs of one resource and says whom to ask once', () => {
    const perm = (verb: string, why: string, namespace: string | null) => ({
      group: '',
      resource: namespace ? 'configmaps' : 'nodes',
      verb,
      namespace,
      why,
      message: ''
    });
    const unbound = {
      ...UNBOUND,
      missing: [
        perm('get', 'read a kept log', 'alice'),
        perm('list', 'list kept logs', 'alice'),
        perm('watch', 'list kept logs', 'alice'),
        perm('list', 'see the nodes', null)
      ],
      reachability: []
    };
    expect(checkLines(unbound).map(l => l.text)).toEqual([
      '4 permissions missing: ask your admin to bind jupyter-pai-user in namespace alice and jupyter-pai-cluster-reader.',
      'cannot get, list, watch configmaps in namespace alice: without it you cannot read a kept log; list kept logs',
      'cannot list nodes cluster-wide: without it you cannot see the nodes'
    ]);
  });

  it('says all are held when none is missing', () => {
    const held = { ...UNBOUND, ok: true, missing: [], reachability: [] };
    expect(checkLines(held)).toEqual([
      {
        ok: true,
        text: 'All 36 permissions the volcano flavour needs are held.'
      }
    ]);
  });

  it('shows nothing on the local backend', () => {
    expect(checkLines(LOCAL)).toEqual([]);
  });

  it('is read from GET check', async () => {
    const server = new FakeServer().json('GET', 'pai/api/check', UNBOUND);
    expect(await loadCheck(server.settings)).toEqual(UNBOUND);
    expect(server.requests.map(r => `${r.method} ${r.path}`)).toEqual([
      'GET pai/api/check'
    ]);
  });

  it('renders the missing permissions once the section is shown', async () => {
    const server = new FakeServer().json('GET', 'pai/api/check', UNBOUND);
    // react-dom has no type declarations here: loaded by a name TypeScript leaves alone.
    const client = 'react-dom/client';
    const { createRoot } = await import(client);
    const host = document.createElement('div');
    const root = createRoot(host);
    (globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
    await act(async () => {
      root.render(<ClusterCheck shown={false} settings={server.settings} />);
    });
    expect(server.requests).toEqual([]); // hidden: nothing asked
    await act(async () => {
      root.render(<ClusterCheck shown={true} settings={server.settings} />);
    });
    const alert = host.querySelector('[role="alert"]');
    expect(alert?.textContent).toContain(
      'cannot create batch.volcano.sh/jobs in namespace alice: without it you ' +
        'cannot submit a job (its Volcano Job)'
    );
    expect(host.textContent).toContain('✓ API server: https://k8s answers');
    act(() => root.unmount());
  });
});
