import type { TaskStatus } from '../models';
import {
  TensorBoardLink,
  tensorboardTarget,
  type ITensorBoardLinkProps
} from '../tensorboardlink';

function task(
  ports: Record<string, number[]>,
  state: TaskStatus['state'] = 'RUNNING'
): TaskStatus {
  return {
    role: 'worker',
    index: 0,
    state,
    node: 'localhost',
    ip: '127.0.0.1',
    gpuNumber: 0,
    gpus: [],
    ports,
    exitCode: null,
    exitReason: null,
    retries: 0,
    startedTime: '2024-05-01T10:00:00Z',
    completedTime: null
  };
}

const PORTS = { tensorboard: [41234], ssh: [41235], http: [41236] };

/** The element the component renders (it has no hooks, so it can be called). */
function render(
  props: ITensorBoardLinkProps
): { type: string; props: Record<string, any> } | null {
  return TensorBoardLink(props) as any;
}

/** An element's text children as one string. */
function text(el: { props: Record<string, any> } | null): string {
  return ([] as unknown[]).concat(el?.props.children).join('');
}

describe('the TensorBoard link of a task', () => {
  it('opens the port on the host JupyterLab was reached by, on the local backend', () => {
    expect(tensorboardTarget(task(PORTS), 'local', 'gpu-box.lan')).toEqual({
      kind: 'link',
      port: 41234,
      href: 'http://gpu-box.lan:41234/'
    });
    const a = render({
      task: task(PORTS),
      backend: 'local',
      hostname: 'gpu-box.lan'
    });
    expect(a?.type).toBe('a');
    expect(text(a)).toBe('Open TensorBoard');
    expect(a?.props.href).toBe('http://gpu-box.lan:41234/');
    expect(a?.props.target).toBe('_blank');
    expect(a?.props.rel).toBe('noopener');
  });

  it("uses the page's host name by default", () => {
    const a = render({ task: task(PORTS), backend: 'local' });
    expect(a?.props.href).toBe(`http://${window.location.hostname}:41234/`);
  });

  it('tells the port, not a dead link, on Kubernetes', () => {
    expect(tensorboardTarget(task(PORTS), 'kubernetes', 'x')).toEqual({
      kind: 'unreachable',
      port: 41234
    });
    const note = render({
      task: task(PORTS),
      backend: 'kubernetes',
      hostname: 'x'
    });
    expect(note?.type).toBe('span');
    expect(note?.props.href).toBeUndefined();
    expect(text(note)).toBe(
      'TensorBoard on pod port 41234: not reachable from the browser yet'
    );
  });

  it('is not shown without a tensorboard port, before the backend is known, or once the task ended', () => {
    expect(
      tensorboardTarget(task({ ssh: [1], http: [2] }), 'local', 'h')
    ).toBeNull();
    expect(tensorboardTarget(task({}), 'local', 'h')).toBeNull();
    expect(tensorboardTarget(task(PORTS), null, 'h')).toBeNull();
    expect(
      tensorboardTarget(task(PORTS, 'SUCCEEDED'), 'local', 'h')
    ).toBeNull();
    expect(tensorboardTarget(task(PORTS, 'WAITING'), 'local', 'h')).toBeNull();
    expect(
      render({ task: task({}), backend: 'local', hostname: 'h' })
    ).toBeNull();
  });
});
