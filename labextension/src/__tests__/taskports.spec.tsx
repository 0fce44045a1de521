import type { TaskStatus } from '../restmodels';
import {
  createPortTab,
  openablePorts,
  portCaption,
  portWidgetId,
  TaskPorts,
  taskPortPath
} from '../taskports';

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

const PORTS = { tensorboard: [41234], ssh: [41235], http: [41236, 41237] };
const url = (path: string) => `/lab-base/pai/api/${path}`;

describe("a task's ports", () => {
  it('are opened through the proxy path of the job, task and port', () => {
    expect(taskPortPath('alice~my job', 'worker-0', 41234)).toBe(
      'jobs/alice~my%20job/tasks/worker-0/ports/41234/'
    );
  });

  it('of a running task: every web port, TensorBoard by name, ssh left out', () => {
    const ports = openablePorts('alice~j', task(PORTS), url);
    expect(ports.map(p => [p.label, p.port, portCaption(p)])).toEqual([
      ['tensorboard', 41234, 'Open TensorBoard'],
      ['http', 41236, 'http 41236'],
      ['http', 41237, 'http 41237']
    ]);
    expect(ports[0].url).toBe(
      '/lab-base/pai/api/jobs/alice~j/tasks/worker-0/ports/41234/'
    );
    expect(ports[0].task).toBe('worker-0');
  });

  it('of a task that is not running: nothing to open', () => {
    for (const state of ['WAITING', 'SUCCEEDED', 'STOPPED'] as const) {
      expect(openablePorts('alice~j', task(PORTS, state), url)).toEqual([]);
    }
  });

  it('render as the list and one button per openable port', () => {
    const opened: number[] = [];
    const el = TaskPorts({
      jobId: 'alice~j',
      task: task(PORTS),
      url,
      onOpen: p => opened.push(p.port)
    }) as any;
    const [list, buttons] = el.props.children;
    expect(list.props.children).toBe(
      'tensorboard:41234 ssh:41235 http:41236,41237'
    );
    expect(buttons.map((b: any) => b.props.children)).toEqual([
      'Open TensorBoard',
      'http 41236',
      'http 41237'
    ]);
    buttons[0].props.onClick();
    expect(opened).toEqual([41234]);
  });

  it('get DOM-safe, distinct tab ids', () => {
    const [a, b] = openablePorts('alice~j.1', task(PORTS), url);
    expect(portWidgetId(a)).toMatch(/^[a-zA-Z0-9_-]+$/);
    expect(portWidgetId(a)).not.toBe(portWidgetId(b));
  });

  it("open in a sandboxed frame that is never JupyterLab's origin", () => {
    const [port] = openablePorts('alice~j', task(PORTS), url);
    const tab = createPortTab(port, 'j');
    const frame = tab.content.node.querySelector('iframe')!;
    const allowed = (frame.getAttribute('sandbox') ?? '').split(/\s+/);
    expect(allowed).toContain('allow-scripts');
    expect(allowed).not.toContain('allow-same-origin');
    expect(allowed).not.toContain('allow-top-navigation');
    expect(frame.getAttribute('referrerpolicy')).toBe('no-referrer');
    expect(tab.content.url).toBe(port.url);
    tab.dispose();
  });
});
