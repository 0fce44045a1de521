import { Widget } from '@lumino/widgets';

import type { PAIClient } from '../api';
import { LogViewer } from '../logviewer';

/** A task log in memory, served by byte ranges like GET jobs/{id}/logs?offset=&limit=. */
class FakeLog {
  bytes = new Uint8Array(0);
  reads: Array<{ offset: number; limit: number }> = [];

  write(text: string): void {
    const more = new TextEncoder().encode(text);
    const all = new Uint8Array(this.bytes.length + more.length);
    all.set(this.bytes);
    all.set(more, this.bytes.length);
    this.bytes = all;
  }

  client(): PAIClient {
    return {
      logBytes: async (
        _id: string,
        q: { role: string; index: number; offset: number; limit: number }
      ) => {
        this.reads.push({ offset: q.offset, limit: q.limit });
        const start = Math.min(q.offset, this.bytes.length);
        return {
          bytes: this.bytes.slice(start, start + q.limit),
          size: this.bytes.length
        };
      },
      logsEndpoint: () => 'jobs/j/logs?role=worker&index=0',
      downloadUrl: (e: string) => `http://x/pai/api/${e}`
    } as unknown as PAIClient;
  }
}

function lines(n: number, from = 0): string {
  let text = '';
  for (let i = from; i < from + n; i++) {
    text += `line ${i} ${'é'.repeat(i % 3)}\n`;
  }
  return text;
}

function viewer(log: FakeLog, chunkBytes = 256): LogViewer {
  const v = new LogViewer({
    client: log.client(),
    jobId: 'j',
    jobName: 'job',
    role: 'worker',
    index: 0,
    chunkBytes,
    followInterval: 60000
  });
  Widget.attach(v, document.body);
  return v;
}

describe('LogViewer', () => {
  let v: LogViewer;
  afterEach(() => v?.dispose());

  it('opens at the end of the log, reading one chunk only', async () => {
    const log = new FakeLog();
    log.write(lines(1000));
    v = viewer(log);
    await v.start();
    const { start, end, size } = v.window;
    expect(end).toBe(size);
    expect(size).toBe(log.bytes.length);
    expect(v.lines[v.lines.length - 1]).toBe('line 999 ');
    // Only whole lines, and exactly the bytes [start, end).
    const text = new TextDecoder().decode(log.bytes.slice(start, end));
    expect(v.lines.join('\n') + '\n').toBe(text);
    // A size probe and one range read: never the whole log.
    expect(log.reads.every(r => r.limit <= 256)).toBe(true);
  });

  it('reads earlier parts exactly, up to the start', async () => {
    const log = new FakeLog();
    log.write(lines(300));
    v = viewer(log, 200);
    await v.start();
    while (v.window.start > 0) {
      expect(await v.loadEarlier()).toBeGreaterThan(0);
    }
    expect(v.lines.join('\n') + '\n').toBe(lines(300));
  });

  it('follows new output, holding back an unfinished line', async () => {
    const log = new FakeLog();
    log.write(lines(10));
    v = viewer(log);
    await v.start();
    log.write('epoch 1 loss 0.5\nepoch 2 lo');
    await v.jumpToEnd();
    expect(v.lines.slice(-1)).toEqual(['epoch 1 loss 0.5']);
    log.write('ss 0.4\n');
    await v.jumpToEnd();
    expect(v.lines.slice(-2)).toEqual(['epoch 1 loss 0.5', 'epoch 2 loss 0.4']);
    expect(v.window.end).toBe(log.bytes.length);
  });

  it('renders only the rows on screen for a long log', async () => {
    const log = new FakeLog();
    log.write(lines(20000));
    v = viewer(log, 1 << 20);
    await v.start();
    expect(v.lines.length).toBe(20000);
    expect(v.node.querySelectorAll('.jp-PAI-log-line').length).toBeLessThan(
      200
    );
  });

  it('finds text and marks it', async () => {
    const log = new FakeLog();
    log.write(lines(50));
    v = viewer(log, 4096);
    await v.start();
    expect(v.find('line 7 ')).toBe(true);
    expect(v.node.querySelector('.jp-mod-current mark')?.textContent).toBe(
      'line 7 '
    );
    expect(v.find('no such text')).toBe(false);
  });

  it('says when reading fails', async () => {
    const log = new FakeLog();
    v = new LogViewer({
      client: {
        ...log.client(),
        logBytes: async () => {
          throw new Error('cluster unreachable: connection refused');
        }
      } as unknown as PAIClient,
      jobId: 'j',
      jobName: 'job',
      role: 'worker',
      index: 0
    });
    Widget.attach(v, document.body);
    await v.start();
    expect(v.node.querySelector('.jp-PAI-error')?.textContent).toBe(
      'Could not read the log: cluster unreachable: connection refused'
    );
  });
});

describe('LogViewer before the task writes', () => {
  it('waits quietly for a log that does not exist yet, then shows it', async () => {
    const { PAIRequestError } = await import('../apirequest');
    const log = new FakeLog();
    let exists = false;
    const client = log.client();
    const v = new LogViewer({
      client: {
        ...client,
        logBytes: async (id: string, q: any) => {
          if (!exists) {
            throw new PAIRequestError('no log for worker-0 yet', 404);
          }
          return (client as any).logBytes(id, q);
        }
      } as unknown as PAIClient,
      jobId: 'j',
      jobName: 'job',
      role: 'worker',
      index: 0,
      followInterval: 60000
    });
    Widget.attach(v, document.body);
    await v.start();
    expect((v.node.querySelector('.jp-PAI-error') as HTMLElement).hidden).toBe(
      true
    );
    expect(v.node.querySelector('.jp-PAI-log-status')?.textContent).toMatch(
      /No log yet/
    );
    exists = true;
    log.write('hello\n');
    await (v as any)._follow();
    expect(v.lines).toEqual(['hello']);
    v.dispose();
  });
});
