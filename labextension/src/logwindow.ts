/**
 * A window of a task's log in memory: whole lines between two byte offsets,
 * read by byte ranges and never whole, grown at either end and moved to the
 * start or the end of the log. No DOM: `LogViewer` shows it.
 */

import { formatBytes } from './displayformat';

/** Lines kept in memory at most; older (or newer) ones are dropped and re-read on demand. */
export const MAX_LINES = 250_000;
const NEWLINE = 0x0a;

/** Bytes of the log from an offset, and the log's size when they were read (if known). */
export interface ILogBytes {
  bytes: Uint8Array;
  size: number | null;
}

/** Reads at most `limit` bytes of the log from `offset`. */
export type LogReader = (offset: number, limit: number) => Promise<ILogBytes>;

export interface ILogWindowOptions {
  read: LogReader;
  /** Bytes read at a time. */
  chunkBytes: number;
  /** `count` lines were dropped from the start, to stay within MAX_LINES. */
  onDropStart?: (count: number) => void;
  /** Lines were dropped from the end: `lines` holds what is kept. */
  onDropEnd?: () => void;
  /** The log was read anew from its end: the task restarted into a new file. */
  onReload?: () => void;
}

const decoder = new TextDecoder();
const encoder = new TextEncoder();

function byteLength(line: string): number {
  return encoder.encode(line).length + 1;
}

/** Bytes → complete lines (the bytes end at a line end). */
function toLines(bytes: Uint8Array): string[] {
  if (!bytes.length) {
    return [];
  }
  const lines = decoder.decode(bytes).split('\n');
  if (lines[lines.length - 1] === '') {
    lines.pop();
  }
  return lines.map(l => (l.endsWith('\r') ? l.slice(0, -1) : l));
}

/** Where the first whole line starts in bytes read from `offset` (0 at the log's start). */
function firstLineStart(bytes: Uint8Array, offset: number): number {
  if (offset === 0) {
    return 0;
  }
  const nl = bytes.indexOf(NEWLINE);
  // A line longer than a chunk: keep its end as one line.
  return nl >= 0 ? nl + 1 : 0;
}

export class LogWindow {
  constructor(options: ILogWindowOptions) {
    this._options = options;
    this._chunk = options.chunkBytes;
  }

  /** The whole lines in memory. */
  get lines(): readonly string[] {
    return this._lines;
  }

  /** The unfinished last line of the log, while the window holds its end. */
  get partial(): string {
    return this._partial;
  }

  /** Bytes [start, end) of the log are in memory; `size`: the log's size when last read. */
  get range(): { start: number; end: number; size: number } {
    return { start: this._start, end: this._end, size: this._size };
  }

  /** Part of the log before the window is not in memory. */
  get hasEarlier(): boolean {
    return this._start > 0;
  }

  /** Everything the log held when last read is in the window. */
  get caughtUp(): boolean {
    return this._end + this._partialBytes() >= this._size;
  }

  /** The window reaches the log's end: new output is appended as it comes. */
  get attached(): boolean {
    return this._attached;
  }

  /** The log was read at least once. */
  get loaded(): boolean {
    return this._loaded;
  }

  /** "1,024 lines, 56.0 KiB" for the whole log, else which bytes of it are in memory. */
  describe(): string {
    const lines = this._lines.length.toLocaleString();
    const size = formatBytes(this._size);
    return this._start === 0 && this._attached
      ? `${lines} lines, ${size}`
      : `bytes ${formatBytes(this._start)}–${formatBytes(this._end)} of ${size} (${lines} lines in view; scroll for more)`;
  }

  /** How many lines in memory hold `needle` (lower case), ignoring case. */
  countMatching(needle: string): number {
    let count = 0;
    for (const line of this._lines) {
      if (line.toLowerCase().includes(needle)) {
        count++;
      }
    }
    return count;
  }

  /** Read the last chunk of the log: the window becomes the end of the log. */
  async loadTail(): Promise<void> {
    const probe = await this._options.read(0, 0);
    const size = probe.size ?? 0;
    const offset = Math.max(0, size - this._chunk);
    const { bytes, size: now } = await this._options.read(
      offset,
      size - offset
    );
    this._size = Math.max(now ?? size, size);
    const skip = firstLineStart(bytes, offset);
    const body = bytes.subarray(skip);
    const cut = body.lastIndexOf(NEWLINE) + 1;
    this._lines = toLines(body.subarray(0, cut));
    this._partial = decoder.decode(body.subarray(cut));
    this._start = offset + skip;
    this._end = offset + skip + cut;
    this._attached = true;
    this._loaded = true;
  }

  /** Read the first chunk of the log: the window becomes its start. */
  async loadHead(): Promise<void> {
    const { bytes, size } = await this._options.read(0, this._chunk);
    this._setSize(size);
    const cut = bytes.lastIndexOf(NEWLINE) + 1;
    const complete = cut > 0 ? bytes.subarray(0, cut) : bytes;
    this._lines = toLines(complete);
    this._start = 0;
    this._end = cut > 0 ? cut : bytes.length;
    this._partial = '';
    this._attached = this._end >= this._size;
  }

  /** Read the chunk before the window; returns the lines added at the start. */
  async prepend(): Promise<number> {
    const offset = Math.max(0, this._start - this._chunk);
    const { bytes, size } = await this._options.read(
      offset,
      this._start - offset
    );
    this._setSize(size);
    const skip = firstLineStart(bytes, offset);
    const lines = toLines(bytes.subarray(skip));
    this._lines = lines.concat(this._lines);
    this._start = offset + skip;
    if (this._lines.length > MAX_LINES) {
      this._dropEnd(this._lines.length - MAX_LINES);
    }
    return lines.length;
  }

  /** Read what follows the window's end; returns the lines added. */
  async append(): Promise<number> {
    const { bytes, size } = await this._options.read(this._end, this._chunk);
    this._setSize(size);
    if (size !== null && size < this._end) {
      // The log is shorter than what we hold: the task restarted into a new file.
      this._attached = false;
      await this.loadTail();
      this._options.onReload?.();
      return this._lines.length;
    }
    const cut = bytes.lastIndexOf(NEWLINE) + 1;
    const lines = toLines(bytes.subarray(0, cut));
    const atEnd = this._end + bytes.length >= this._size;
    this._partial = atEnd ? decoder.decode(bytes.subarray(cut)) : '';
    if (cut === 0 && bytes.length >= this._chunk) {
      // One line longer than a chunk: show it cut rather than never.
      lines.push(decoder.decode(bytes));
      this._partial = '';
      this._end += bytes.length;
    } else {
      this._end += cut;
    }
    if (lines.length) {
      for (const line of lines) {
        this._lines.push(line);
      }
      if (this._lines.length > MAX_LINES) {
        this._dropStart(this._lines.length - MAX_LINES);
      }
    }
    this._attached = atEnd || this.caughtUp;
    return lines.length;
  }

  /** Append until caught up (a fast writer may be several chunks ahead); returns the lines added. */
  async catchUp(maxReads = 8): Promise<number> {
    let added = 0;
    for (let n = 0; n < maxReads; n++) {
      const before = this._end;
      added += await this.append();
      if (this._end === before || this.caughtUp) {
        break;
      }
    }
    return added;
  }

  private _partialBytes(): number {
    return this._partial ? encoder.encode(this._partial).length : 0;
  }

  private _setSize(size: number | null): void {
    if (size !== null) {
      this._size = size;
    }
  }

  private _dropStart(count: number): void {
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      bytes += byteLength(this._lines[i]);
    }
    this._lines.splice(0, count);
    this._start += bytes;
    this._options.onDropStart?.(count);
  }

  private _dropEnd(count: number): void {
    const keep = this._lines.length - count;
    let bytes = 0;
    for (let i = keep; i < this._lines.length; i++) {
      bytes += byteLength(this._lines[i]);
    }
    this._lines.length = keep;
    this._end -= bytes;
    this._partial = '';
    this._attached = false;
    this._options.onDropEnd?.();
  }

  private _options: ILogWindowOptions;
  private _chunk: number;
  private _lines: string[] = [];
  private _partial = '';
  private _start = 0;
  private _end = 0;
  private _size = 0;
  private _attached = false;
  private _loaded = false;
}
