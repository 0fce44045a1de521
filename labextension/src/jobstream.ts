/**
 * The `job-changes` stream (server-sent events) with reconnection: while it is
 * up, open panels learn of job changes as they happen; when it fails or
 * closes, the owner is told (to poll meanwhile) and it reconnects with
 * backoff.
 */
import type { JobChange } from './restmodels';

/** What the stream needs of a browser `EventSource` (a fake in tests). */
export interface IEventSourceLike {
  onerror: ((event: Event) => void) | null;
  addEventListener(type: string, listener: (event: MessageEvent) => void): void;
  close(): void;
}

export type EventSourceFactory = (url: string) => IEventSourceLike;

export interface IJobStreamOptions {
  url: string;
  /** Subscribed: list the jobs now and nothing is missed. */
  onReady: () => void;
  onChange: (change: JobChange) => void;
  /** The stream failed or closed: poll until `onReady` again. */
  onDown: () => void;
  factory?: EventSourceFactory | null;
  minDelay?: number;
  maxDelay?: number;
}

const KINDS = ['added', 'modified', 'deleted'] as const;

/** The browser's EventSource, or null where there is none (old browsers, Jest). */
export function browserEventSource(): EventSourceFactory | null {
  if (typeof EventSource === 'undefined') {
    return null;
  }
  return (url: string) => new EventSource(url, { withCredentials: true });
}

export class JobStream {
  constructor(private readonly _options: IJobStreamOptions) {
    this._delay = _options.minDelay ?? 1000;
  }

  /** Whether the stream is up (subscribed, not failed since). */
  get connected(): boolean {
    return this._connected;
  }

  /** The wait before the next reconnection attempt, in ms. */
  get delay(): number {
    return this._delay;
  }

  start(): void {
    const factory =
      this._options.factory === undefined
        ? browserEventSource()
        : this._options.factory;
    if (!factory || this._disposed || this._source) {
      return;
    }
    const source = factory(this._options.url);
    this._source = source;
    source.addEventListener('ready', () => {
      this._connected = true;
      this._delay = this._options.minDelay ?? 1000;
      this._options.onReady();
    });
    for (const kind of KINDS) {
      source.addEventListener(kind, event => {
        this._options.onChange(JSON.parse(event.data) as JobChange);
      });
    }
    // Fell behind: list again (the server closes; the retry reconnects).
    source.addEventListener('reset', () => this._options.onReady());
    source.onerror = () => this._failed();
  }

  dispose(): void {
    this._disposed = true;
    window.clearTimeout(this._timer);
    this._source?.close();
    this._source = null;
  }

  private _failed(): void {
    // Our own backoff instead of EventSource's fixed retry.
    this._source?.close();
    this._source = null;
    this._connected = false;
    this._options.onDown();
    if (this._disposed) {
      return;
    }
    window.clearTimeout(this._timer);
    this._timer = window.setTimeout(() => this.start(), this._delay);
    this._delay = Math.min(this._delay * 2, this._options.maxDelay ?? 60000);
  }

  private _source: IEventSourceLike | null = null;
  private _connected = false;
  private _disposed = false;
  private _delay: number;
  private _timer = 0;
}
