import { JobStream, type IEventSourceLike } from '../jobstream';
import type { JobChange } from '../restmodels';

/** A stand-in for the browser's EventSource that the test drives. */
class FakeSource implements IEventSourceLike {
  onerror: ((event: Event) => void) | null = null;
  closed = false;
  listeners = new Map<string, ((event: MessageEvent) => void)[]>();

  constructor(readonly url: string) {}

  addEventListener(type: string, listener: (event: MessageEvent) => void) {
    this.listeners.set(type, [...(this.listeners.get(type) ?? []), listener]);
  }

  emit(type: string, data: unknown = {}): void {
    const event = { data: JSON.stringify(data) } as MessageEvent;
    (this.listeners.get(type) ?? []).forEach(l => l(event));
  }

  fail(): void {
    this.onerror?.(new Event('error'));
  }

  close(): void {
    this.closed = true;
  }
}

function change(type: JobChange['type'], id: string): JobChange {
  return {
    type,
    job: {
      id,
      name: id,
      user: 'mei',
      state: 'RUNNING',
      virtualCluster: 'default',
      retries: 0,
      submissionTime: '2026-11-23T10:00:00Z',
      totalGpuNumber: 0,
      totalTaskNumber: 1,
      totalTaskRoleNumber: 1
    }
  };
}

describe('JobStream', () => {
  beforeEach(() => jest.useFakeTimers());
  afterEach(() => jest.useRealTimers());

  function open() {
    const sources: FakeSource[] = [];
    const seen: string[] = [];
    const stream = new JobStream({
      url: 'http://server/pai/api/job-changes',
      factory: url => {
        const source = new FakeSource(url);
        sources.push(source);
        return source;
      },
      onReady: () => seen.push('ready'),
      onChange: c => seen.push(`${c.type} ${c.job.id}`),
      onDown: () => seen.push('down'),
      minDelay: 1000,
      maxDelay: 4000
    });
    stream.start();
    return { stream, sources, seen };
  }

  it('passes on ready and each change', () => {
    const { stream, sources, seen } = open();
    expect(sources.map(s => s.url)).toEqual([
      'http://server/pai/api/job-changes'
    ]);
    expect(stream.connected).toBe(false);
    sources[0].emit('ready');
    expect(stream.connected).toBe(true);
    sources[0].emit('added', change('added', 'mei~a'));
    sources[0].emit('modified', change('modified', 'mei~a'));
    sources[0].emit('deleted', change('deleted', 'mei~a'));
    sources[0].emit('reset');
    expect(seen).toEqual([
      'ready',
      'added mei~a',
      'modified mei~a',
      'deleted mei~a',
      'ready'
    ]);
    stream.dispose();
    expect(sources[0].closed).toBe(true);
  });

  it('says when it fails and reconnects with backoff', () => {
    const { stream, sources, seen } = open();
    sources[0].emit('ready');
    sources[0].fail();
    expect(stream.connected).toBe(false);
    expect(sources[0].closed).toBe(true);
    expect(seen).toEqual(['ready', 'down']);

    jest.advanceTimersByTime(999);
    expect(sources).toHaveLength(1);
    jest.advanceTimersByTime(1);
    expect(sources).toHaveLength(2);
    // Failing again without ever being ready: each wait doubles, up to the max.
    sources[1].fail();
    jest.advanceTimersByTime(1999);
    expect(sources).toHaveLength(2);
    jest.advanceTimersByTime(1);
    expect(sources).toHaveLength(3);
    sources[2].fail();
    expect(stream.delay).toBe(4000);
    sources[2].fail();
    expect(stream.delay).toBe(4000);
    jest.advanceTimersByTime(4000);
    // Up again: the wait starts over.
    sources[3].emit('ready');
    expect(stream.delay).toBe(1000);
    expect(stream.connected).toBe(true);
    stream.dispose();
  });

  it('stops reconnecting once disposed', () => {
    const { stream, sources } = open();
    sources[0].fail();
    stream.dispose();
    jest.advanceTimersByTime(60000);
    expect(sources).toHaveLength(1);
  });

  it('does nothing without an EventSource (the panel polls)', () => {
    const seen: string[] = [];
    const stream = new JobStream({
      url: 'x',
      factory: null,
      onReady: () => seen.push('ready'),
      onChange: () => seen.push('change'),
      onDown: () => seen.push('down')
    });
    stream.start();
    expect(stream.connected).toBe(false);
    expect(seen).toEqual([]);
  });
});
