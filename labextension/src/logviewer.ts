/**
 * A task's log, virtualised: only the rows on screen are in the DOM, and only
 * a window of the log (read by byte ranges, never whole) is in memory, so a
 * 200 MB log scrolls as smoothly as a small one. The window grows as the
 * user scrolls up or down, and follows new output while the task runs.
 */

import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import { PAIClient, PAIRequestError, isAbortError } from './api';
import { formatBytes } from './format';
import { describeError } from './model';

/** Row height in px; the CSS gives `.jp-PAI-log-line` the same. */
export const LINE_HEIGHT = 18;
/** Lines kept in memory at most; older (or newer) ones are dropped and re-read on demand. */
export const MAX_LINES = 250_000;
const OVERSCAN = 20;
const NEWLINE = 0x0a;

export interface ILogViewerOptions {
  client: PAIClient;
  jobId: string;
  jobName: string;
  role: string;
  index: number;
  /** An earlier attempt of the task (ended: never followed); absent: the current one. */
  attempt?: number;
  /** Bytes read at a time. */
  chunkBytes?: number;
  /** Whether the task may still write (polling stops once it may not). */
  isLive?: () => boolean;
  /** Milliseconds between reads of new output. */
  followInterval?: number;
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

export class LogViewer extends Widget {
  constructor(options: ILogViewerOptions) {
    super();
    this._options = options;
    this._chunk = options.chunkBytes ?? 512 * 1024;
    this.addClass('jp-PAI-log');
    this.node.tabIndex = -1;
    this._build();
    this._poll = new Poll({
      auto: false,
      factory: () => this._follow(),
      frequency: {
        interval: options.followInterval ?? 1000,
        backoff: true,
        max: 10000
      },
      name: `jupyter-pai:log:${options.jobId}:${options.role}-${options.index}:${options.attempt ?? 'current'}`,
      standby: () => (this.isVisible ? 'when-hidden' : true)
    });
  }

  get role(): string {
    return this._options.role;
  }

  get index(): number {
    return this._options.index;
  }

  /** The earlier attempt shown, or undefined for the current one. */
  get attempt(): number | undefined {
    return this._options.attempt;
  }

  /** An earlier attempt has ended: it is read, never followed. */
  private _isLive(): boolean {
    return (
      this._options.attempt === undefined && (this._options.isLive?.() ?? true)
    );
  }

  /** The lines in memory (for tests and search). */
  get lines(): readonly string[] {
    return this._lines;
  }

  /** Byte range of the log held in memory: [start, end). */
  get window(): { start: number; end: number; size: number } {
    return { start: this._start, end: this._end, size: this._size };
  }

  /** Load the end of the log and start following it. */
  async start(): Promise<void> {
    await this.jumpToEnd();
    void this._poll.start();
  }

  /** Show the end of the log, reading it again if it is not in memory. */
  async jumpToEnd(): Promise<void> {
    this._following = true;
    if (!this._attached || !this._lines.length) {
      await this._loadTail();
    } else {
      await this._follow();
    }
    this._scrollToBottom();
    this._updateStatus();
  }

  async jumpToStart(): Promise<void> {
    this._following = false;
    if (this._start > 0) {
      await this._guard(async () => {
        const { bytes, size } = await this._read(0, this._chunk);
        this._setSize(size);
        const cut = bytes.lastIndexOf(NEWLINE) + 1;
        const complete = cut > 0 ? bytes.subarray(0, cut) : bytes;
        this._lines = toLines(complete);
        this._start = 0;
        this._end = cut > 0 ? cut : bytes.length;
        this._partial = '';
        this._attached = this._end >= this._size;
      });
    }
    this._scroller.scrollTop = 0;
    this._render();
    this._updateStatus();
  }

  /** Read the part before the window (scrolling up). */
  async loadEarlier(): Promise<number> {
    if (this._start <= 0 || this._loading) {
      return 0;
    }
    let added = 0;
    await this._guard(async () => {
      const offset = Math.max(0, this._start - this._chunk);
      const { bytes, size } = await this._read(offset, this._start - offset);
      this._setSize(size);
      let skip = 0;
      if (offset > 0) {
        const nl = bytes.indexOf(NEWLINE);
        // A line longer than a chunk: keep its end as one line.
        skip = nl >= 0 ? nl + 1 : 0;
      }
      const lines = toLines(bytes.subarray(skip));
      added = lines.length;
      this._lines = lines.concat(this._lines);
      this._start = offset + skip;
      if (this._lines.length > MAX_LINES) {
        this._dropEnd(this._lines.length - MAX_LINES);
      }
      this._scroller.scrollTop += added * LINE_HEIGHT;
    });
    this._render();
    this._updateStatus();
    return added;
  }

  /** Read the part after the window (scrolling down, or following). */
  async loadLater(): Promise<number> {
    if (this._loading) {
      return 0;
    }
    let added = 0;
    await this._guard(async () => {
      added = await this._append();
    });
    this._render();
    this._updateStatus();
    return added;
  }

  /** Search the loaded lines; `direction` 1 = next, -1 = previous. Returns whether found. */
  find(query: string, direction: 1 | -1 = 1): boolean {
    this._query = query;
    if (!query) {
      this._match = -1;
      this._render();
      this._updateSearchStatus();
      return false;
    }
    const needle = query.toLowerCase();
    const total = this._lines.length;
    const from =
      this._match >= 0
        ? this._match + direction
        : direction === 1
          ? this._firstVisible()
          : this._firstVisible() + this._visibleCount();
    for (let k = 0; k < total; k++) {
      const i = (((from + direction * k) % total) + total) % total;
      if (this._lines[i].toLowerCase().includes(needle)) {
        this._match = i;
        this._following = false;
        this._scrollToLine(i);
        this._updateSearchStatus();
        return true;
      }
    }
    this._match = -1;
    this._render();
    this._updateSearchStatus();
    return false;
  }

  /** Read earlier parts until the query is found there (at most `maxChunks` reads). */
  async findEarlier(query: string, maxChunks = 16): Promise<boolean> {
    const needle = query.toLowerCase();
    for (let n = 0; n < maxChunks && this._start > 0; n++) {
      const added = await this.loadEarlier();
      for (let i = added - 1; i >= 0; i--) {
        if (this._lines[i].toLowerCase().includes(needle)) {
          this._query = query;
          this._match = i;
          this._following = false;
          this._scrollToLine(i);
          this._updateSearchStatus();
          return true;
        }
      }
    }
    this._updateSearchStatus();
    return false;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this._abort.abort();
    this._poll.dispose();
    super.dispose();
  }

  protected onAfterShow(): void {
    this._render();
    void this._poll.refresh();
  }

  protected onResize(): void {
    this._render();
  }

  protected onActivateRequest(): void {
    this._scroller.focus();
  }

  // -- reading ---------------------------------------------------------------

  private _read(
    offset: number,
    limit: number
  ): Promise<{ bytes: Uint8Array; size: number | null }> {
    const { client, jobId, role, index, attempt } = this._options;
    return client.logBytes(
      jobId,
      { role, index, offset, limit, attempt },
      this._abort.signal
    );
  }

  private async _guard(fn: () => Promise<void>): Promise<void> {
    this._loading = true;
    this._waiting = false;
    this._setError(null);
    try {
      await fn();
    } catch (error) {
      if (isAbortError(error) || this.isDisposed) {
        return;
      }
      const live = this._isLive();
      if (live && error instanceof PAIRequestError && error.status === 404) {
        // No log yet: the task has not started writing. Not an error while it may.
        this._waiting = true;
        return;
      }
      this._setError(describeError(error));
    } finally {
      this._loading = false;
    }
  }

  private _setSize(size: number | null): void {
    if (size !== null) {
      this._size = size;
    }
  }

  /** Read the last chunk of the log: the window becomes the end of the log. */
  private async _loadTail(): Promise<void> {
    await this._guard(async () => {
      const probe = await this._read(0, 0);
      const size = probe.size ?? 0;
      const offset = Math.max(0, size - this._chunk);
      const { bytes, size: now } = await this._read(offset, size - offset);
      this._size = Math.max(now ?? size, size);
      let skip = 0;
      if (offset > 0) {
        const nl = bytes.indexOf(NEWLINE);
        skip = nl >= 0 ? nl + 1 : 0;
      }
      const body = bytes.subarray(skip);
      const cut = body.lastIndexOf(NEWLINE) + 1;
      this._lines = toLines(body.subarray(0, cut));
      this._partial = decoder.decode(body.subarray(cut));
      this._start = offset + skip;
      this._end = offset + skip + cut;
      this._attached = true;
      this._loaded = true;
    });
    this._render();
  }

  /** Append what follows the window's end; returns the lines added. */
  private async _append(): Promise<number> {
    const { bytes, size } = await this._read(this._end, this._chunk);
    this._setSize(size);
    if (size !== null && size < this._end) {
      // The log is shorter than what we hold: the task restarted into a new file.
      this._attached = false;
      await this._loadTail();
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
    this._attached = atEnd || this._end + this._partialBytes() >= this._size;
    return lines.length;
  }

  private _partialBytes(): number {
    return this._partial ? encoder.encode(this._partial).length : 0;
  }

  /** One follow step: read new output while the window holds the log's end. */
  private async _follow(): Promise<void> {
    if (this.isDisposed || !this.isVisible || this._loading) {
      return;
    }
    if (!this._loaded) {
      // The log could not be read yet (the task has not started): try again.
      await this._loadTail();
      this._updateStatus();
      return;
    }
    if (!this._attached) {
      return;
    }
    let added = 0;
    await this._guard(async () => {
      // Read until caught up (a fast writer may be several chunks ahead).
      for (let n = 0; n < 8; n++) {
        const before = this._end;
        added += await this._append();
        if (
          this._end === before ||
          this._end + this._partialBytes() >= this._size
        ) {
          break;
        }
      }
    });
    if (added || this._partial) {
      this._render();
      if (this._following) {
        this._scrollToBottom();
      }
    }
    this._updateStatus();
    const live = this._isLive();
    if (!live && this._end + this._partialBytes() >= this._size) {
      // The task has ended and everything it wrote is shown.
      this._poll.stop().catch(() => undefined);
      this._updateStatus();
    }
  }

  private _dropStart(count: number): void {
    let bytes = 0;
    for (let i = 0; i < count; i++) {
      bytes += byteLength(this._lines[i]);
    }
    this._lines.splice(0, count);
    this._start += bytes;
    this._match = this._match >= count ? this._match - count : -1;
    this._scroller.scrollTop = Math.max(
      0,
      this._scroller.scrollTop - count * LINE_HEIGHT
    );
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
    this._following = false;
    if (this._match >= keep) {
      this._match = -1;
    }
  }

  // -- view ------------------------------------------------------------------

  private _build(): void {
    const toolbar = document.createElement('div');
    toolbar.className = 'jp-PAI-log-toolbar';
    toolbar.setAttribute('role', 'toolbar');
    toolbar.setAttribute(
      'aria-label',
      `Log of ${this._options.role}-${this._options.index}`
    );

    const search = document.createElement('input');
    search.type = 'search';
    search.className = 'jp-mod-styled jp-PAI-input jp-PAI-log-search';
    search.placeholder = 'Search log…';
    search.setAttribute('aria-label', 'Search the log');
    search.addEventListener('keydown', event => {
      if (event.key === 'Enter') {
        event.preventDefault();
        this.find(search.value, event.shiftKey ? -1 : 1);
      } else if (event.key === 'Escape') {
        search.value = '';
        this.find('');
        this._scroller.focus();
      }
    });
    let timer = 0;
    search.addEventListener('input', () => {
      window.clearTimeout(timer);
      timer = window.setTimeout(() => {
        this._match = -1;
        this.find(search.value, 1);
      }, 200);
    });
    this._search = search;

    const button = (
      label: string,
      title: string,
      onClick: () => void,
      cls = ''
    ) => {
      const b = document.createElement('button');
      b.type = 'button';
      b.className = `jp-mod-styled jp-PAI-log-button ${cls}`;
      b.textContent = label;
      b.title = title;
      b.setAttribute('aria-label', title);
      b.addEventListener('click', onClick);
      return b;
    };

    this._searchStatus = document.createElement('span');
    this._searchStatus.className = 'jp-PAI-muted jp-PAI-log-search-status';
    this._searchStatus.setAttribute('aria-live', 'polite');

    this._earlierButton = button(
      'Search earlier',
      'Read earlier parts of the log until the text is found',
      () => void this.findEarlier(this._search.value)
    );
    this._earlierButton.hidden = true;

    const download = document.createElement('a');
    download.className = 'jp-mod-styled jp-PAI-log-button';
    download.textContent = 'Download';
    download.title = 'Download the whole log';
    const { client, jobId, jobName, role, index, attempt } = this._options;
    download.href = client.downloadUrl(
      client.logsEndpoint(jobId, { role, index, attempt })
    );
    const which = attempt === undefined ? '' : `-attempt${attempt}`;
    download.download = `${jobName}-${role}-${index}${which}.log`;

    toolbar.append(
      search,
      button('↑', 'Previous match (Shift+Enter)', () =>
        this.find(this._search.value, -1)
      ),
      button('↓', 'Next match (Enter)', () => this.find(this._search.value, 1)),
      this._searchStatus,
      this._earlierButton,
      spacer(),
      button('⤒ Start', 'Jump to the start of the log (Home)', () => {
        void this.jumpToStart();
      }),
      button('⤓ End', 'Jump to the end and follow new output (End)', () => {
        void this.jumpToEnd();
      }),
      download
    );

    this._status = document.createElement('div');
    this._status.className = 'jp-PAI-log-status jp-PAI-muted';
    this._status.setAttribute('aria-live', 'polite');

    this._error = document.createElement('div');
    this._error.className = 'jp-PAI-error';
    this._error.setAttribute('role', 'alert');
    this._error.hidden = true;

    this._scroller = document.createElement('div');
    this._scroller.className = 'jp-PAI-log-scroller';
    this._scroller.tabIndex = 0;
    this._scroller.setAttribute('role', 'log');
    this._scroller.setAttribute(
      'aria-label',
      `Log of task ${role}-${index}; Home and End jump, Ctrl+F searches`
    );
    this._sizer = document.createElement('div');
    this._sizer.className = 'jp-PAI-log-sizer';
    this._rows = document.createElement('div');
    this._rows.className = 'jp-PAI-log-rows';
    this._sizer.appendChild(this._rows);
    this._scroller.appendChild(this._sizer);

    this._scroller.addEventListener('scroll', () => this._onScroll());
    this.node.addEventListener('keydown', event => this._onKey(event));

    this.node.append(toolbar, this._error, this._scroller, this._status);
  }

  private _onKey(event: KeyboardEvent): void {
    if ((event.ctrlKey || event.metaKey) && event.key === 'f') {
      event.preventDefault();
      event.stopPropagation();
      this._search.focus();
      this._search.select();
      return;
    }
    if (event.target !== this._scroller) {
      return;
    }
    if (event.key === 'End') {
      event.preventDefault();
      void this.jumpToEnd();
    } else if (event.key === 'Home') {
      event.preventDefault();
      void this.jumpToStart();
    }
  }

  private _onScroll(): void {
    const s = this._scroller;
    const atBottom =
      s.scrollTop + s.clientHeight >= s.scrollHeight - LINE_HEIGHT;
    if (!this._programmatic) {
      this._following = atBottom && this._attached;
    }
    this._programmatic = false;
    if (!this._frame) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this._render();
        this._updateStatus();
      });
    }
    if (this._loading || !this._loaded) {
      return;
    }
    if (s.scrollTop < OVERSCAN * LINE_HEIGHT && this._start > 0) {
      void this.loadEarlier();
    } else if (
      !this._attached &&
      s.scrollTop + s.clientHeight > s.scrollHeight - OVERSCAN * LINE_HEIGHT
    ) {
      void this.loadLater();
    }
  }

  private _totalRows(): number {
    return this._lines.length + (this._partial ? 1 : 0);
  }

  private _firstVisible(): number {
    return Math.floor(this._scroller.scrollTop / LINE_HEIGHT);
  }

  private _visibleCount(): number {
    return Math.ceil((this._scroller.clientHeight || 600) / LINE_HEIGHT);
  }

  private _scrollToBottom(): void {
    this._programmatic = true;
    this._sizer.style.height = `${this._totalRows() * LINE_HEIGHT}px`;
    this._scroller.scrollTop = this._scroller.scrollHeight;
    this._render();
  }

  private _scrollToLine(i: number): void {
    const top = i * LINE_HEIGHT;
    const s = this._scroller;
    if (top < s.scrollTop || top > s.scrollTop + s.clientHeight - LINE_HEIGHT) {
      this._programmatic = true;
      s.scrollTop = Math.max(0, top - s.clientHeight / 3);
    }
    this._render();
  }

  /** Put the visible rows (and a few around them) in the DOM; nothing else. */
  private _render(): void {
    const total = this._totalRows();
    this._sizer.style.height = `${total * LINE_HEIGHT}px`;
    if (!this._loaded) {
      this._rows.textContent = '';
      return;
    }
    if (total === 0) {
      this._rows.style.transform = 'translateY(0)';
      this._rows.innerHTML = '';
      const empty = document.createElement('div');
      empty.className = 'jp-PAI-empty';
      empty.textContent = this._isLive()
        ? 'No output yet — new lines appear here as the task writes them.'
        : 'This task wrote no output.';
      this._rows.appendChild(empty);
      return;
    }
    const first = Math.max(0, this._firstVisible() - OVERSCAN);
    const last = Math.min(
      total,
      this._firstVisible() + this._visibleCount() + OVERSCAN
    );
    const needle = this._query.toLowerCase();
    const fragment = document.createDocumentFragment();
    for (let i = first; i < last; i++) {
      const text = i < this._lines.length ? this._lines[i] : this._partial;
      const row = document.createElement('div');
      row.className = 'jp-PAI-log-line';
      if (i === this._match) {
        row.classList.add('jp-mod-current');
      }
      if (needle && text.toLowerCase().includes(needle)) {
        highlight(row, text, needle);
      } else {
        row.textContent = text || '\u200b';
      }
      fragment.appendChild(row);
    }
    this._rows.style.transform = `translateY(${first * LINE_HEIGHT}px)`;
    this._rows.replaceChildren(fragment);
  }

  private _updateStatus(): void {
    if (!this._loaded) {
      this._status.textContent = this._loading
        ? 'Reading the log…'
        : this._waiting
          ? 'No log yet — it appears when the task starts writing.'
          : '';
      return;
    }
    const live = this._isLive();
    const whole = this._start === 0 && this._attached;
    const parts = [
      whole
        ? `${this._lines.length.toLocaleString()} lines, ${formatBytes(this._size)}`
        : `bytes ${formatBytes(this._start)}–${formatBytes(this._end)} of ${formatBytes(this._size)} (${this._lines.length.toLocaleString()} lines in view; scroll for more)`
    ];
    if (this._attached && live) {
      parts.push(this._following ? 'following' : 'paused — End to follow');
    } else if (!live) {
      parts.push('task ended');
    }
    this._status.textContent = parts.join(' · ');
  }

  private _updateSearchStatus(): void {
    const q = this._query;
    if (!q) {
      this._searchStatus.textContent = '';
      this._earlierButton.hidden = true;
      return;
    }
    const needle = q.toLowerCase();
    let count = 0;
    for (const line of this._lines) {
      if (line.toLowerCase().includes(needle)) {
        count++;
      }
    }
    const where = this._start > 0 ? ' in view' : '';
    this._searchStatus.textContent =
      count === 0
        ? `no match${where}`
        : `${count.toLocaleString()} line${count === 1 ? '' : 's'}${where}`;
    this._earlierButton.hidden = this._start <= 0;
  }

  private _setError(message: string | null): void {
    this._error.hidden = !message;
    this._error.textContent = message
      ? `Could not read the log: ${message}`
      : '';
  }

  private _options: ILogViewerOptions;
  private _chunk: number;
  private _poll: Poll;
  private _abort = new AbortController();
  private _lines: string[] = [];
  private _partial = '';
  private _start = 0;
  private _end = 0;
  private _size = 0;
  private _attached = false;
  private _following = true;
  private _loaded = false;
  private _loading = false;
  private _waiting = false;
  private _programmatic = false;
  private _frame = 0;
  private _query = '';
  private _match = -1;
  private _search!: HTMLInputElement;
  private _searchStatus!: HTMLSpanElement;
  private _earlierButton!: HTMLButtonElement;
  private _status!: HTMLDivElement;
  private _error!: HTMLDivElement;
  private _scroller!: HTMLDivElement;
  private _sizer!: HTMLDivElement;
  private _rows!: HTMLDivElement;
}

function spacer(): HTMLElement {
  const s = document.createElement('span');
  s.className = 'jp-PAI-spacer';
  return s;
}

/** Fill a row with text, every occurrence of `needle` in a <mark>. */
function highlight(row: HTMLElement, text: string, needle: string): void {
  const lower = text.toLowerCase();
  let at = 0;
  for (;;) {
    const i = lower.indexOf(needle, at);
    if (i < 0) {
      break;
    }
    if (i > at) {
      row.appendChild(document.createTextNode(text.slice(at, i)));
    }
    const mark = document.createElement('mark');
    mark.textContent = text.slice(i, i + needle.length);
    row.appendChild(mark);
    at = i + needle.length;
  }
  if (at < text.length) {
    row.appendChild(document.createTextNode(text.slice(at)));
  }
}
