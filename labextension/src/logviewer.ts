/**
 * A task's log, virtualised: only the rows on screen are in the DOM, and only
 * a window of the log (`LogWindow`: read by byte ranges, never whole) is in
 * memory, so a 200 MB log scrolls as smoothly as a small one. The window grows
 * as the user scrolls up or down, and follows new output while the task runs.
 */

import { Poll } from '@lumino/polling';
import { Widget } from '@lumino/widgets';

import type { PAIClient } from './api';
import { PAIRequestError, isAbortError } from './apirequest';
import { createLogRow } from './logrows';
import { createLogToolbar } from './logtoolbar';
import { LogWindow, type ILogBytes } from './logwindow';
import { describeError } from './panelstate';

/** Row height in px; the CSS gives `.jp-PAI-log-line` the same. */
export const LINE_HEIGHT = 18;
const OVERSCAN = 20;

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

export class LogViewer extends Widget {
  constructor(options: ILogViewerOptions) {
    super();
    this._options = options;
    this._log = new LogWindow({
      read: (offset, limit) => this._read(offset, limit),
      chunkBytes: options.chunkBytes ?? 512 * 1024,
      onDropStart: count => {
        this._match = this._match >= count ? this._match - count : -1;
        this._scroller.scrollTop = Math.max(
          0,
          this._scroller.scrollTop - count * LINE_HEIGHT
        );
      },
      onDropEnd: () => {
        this._following = false;
        if (this._match >= this._log.lines.length) {
          this._match = -1;
        }
      },
      onReload: () => this._render()
    });
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
    return this._log.lines;
  }

  /** Byte range of the log held in memory: [start, end). */
  get window(): { start: number; end: number; size: number } {
    return this._log.range;
  }

  /** Load the end of the log and start following it. */
  async start(): Promise<void> {
    await this.jumpToEnd();
    void this._poll.start();
  }

  /** Show the end of the log, reading it again if it is not in memory. */
  async jumpToEnd(): Promise<void> {
    this._following = true;
    if (!this._log.attached || !this._log.lines.length) {
      await this._loadTail();
    } else {
      await this._follow();
    }
    this._scrollToBottom();
    this._updateStatus();
  }

  async jumpToStart(): Promise<void> {
    this._following = false;
    if (this._log.hasEarlier) {
      await this._guard(() => this._log.loadHead());
    }
    this._scroller.scrollTop = 0;
    this._render();
    this._updateStatus();
  }

  /** Read the part before the window (scrolling up). */
  async loadEarlier(): Promise<number> {
    if (!this._log.hasEarlier || this._loading) {
      return 0;
    }
    let added = 0;
    await this._guard(async () => {
      added = await this._log.prepend();
      // The rows on screen stay where they were.
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
      added = await this._log.append();
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
    const lines = this._log.lines;
    const total = lines.length;
    const from =
      this._match >= 0
        ? this._match + direction
        : direction === 1
          ? this._firstVisible()
          : this._firstVisible() + this._visibleCount();
    for (let k = 0; k < total; k++) {
      const i = (((from + direction * k) % total) + total) % total;
      if (lines[i].toLowerCase().includes(needle)) {
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
    for (let n = 0; n < maxChunks && this._log.hasEarlier; n++) {
      const added = await this.loadEarlier();
      for (let i = added - 1; i >= 0; i--) {
        if (this._log.lines[i].toLowerCase().includes(needle)) {
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

  private _read(offset: number, limit: number): Promise<ILogBytes> {
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

  /** Read the last chunk of the log: the window becomes the end of the log. */
  private async _loadTail(): Promise<void> {
    await this._guard(() => this._log.loadTail());
    this._render();
  }

  /** One follow step: read new output while the window holds the log's end. */
  private async _follow(): Promise<void> {
    if (this.isDisposed || !this.isVisible || this._loading) {
      return;
    }
    if (!this._log.loaded) {
      // The log could not be read yet (the task has not started): try again.
      await this._loadTail();
      this._updateStatus();
      return;
    }
    if (!this._log.attached) {
      return;
    }
    let added = 0;
    await this._guard(async () => {
      added = await this._log.catchUp();
    });
    if (added || this._log.partial) {
      this._render();
      if (this._following) {
        this._scrollToBottom();
      }
    }
    this._updateStatus();
    if (!this._isLive() && this._log.caughtUp) {
      // The task has ended and everything it wrote is shown.
      this._poll.stop().catch(() => undefined);
      this._updateStatus();
    }
  }

  // -- view ------------------------------------------------------------------

  private _build(): void {
    const { client, jobId, jobName, role, index, attempt } = this._options;
    const which = attempt === undefined ? '' : `-attempt${attempt}`;
    const toolbar = createLogToolbar({
      task: `${role}-${index}`,
      downloadUrl: client.downloadUrl(
        client.logsEndpoint(jobId, { role, index, attempt })
      ),
      downloadName: `${jobName}-${role}-${index}${which}.log`,
      onFind: (query, direction) => this.find(query, direction),
      onQuery: query => {
        this._match = -1;
        this.find(query, 1);
      },
      onClear: () => {
        this.find('');
        this._scroller.focus();
      },
      onFindEarlier: query => void this.findEarlier(query),
      onStart: () => void this.jumpToStart(),
      onEnd: () => void this.jumpToEnd()
    });
    this._search = toolbar.search;
    this._searchStatus = toolbar.searchStatus;
    this._earlierButton = toolbar.earlierButton;

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

    this.node.append(toolbar.node, this._error, this._scroller, this._status);
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
      this._following = atBottom && this._log.attached;
    }
    this._programmatic = false;
    if (!this._frame) {
      this._frame = requestAnimationFrame(() => {
        this._frame = 0;
        this._render();
        this._updateStatus();
      });
    }
    if (this._loading || !this._log.loaded) {
      return;
    }
    if (s.scrollTop < OVERSCAN * LINE_HEIGHT && this._log.hasEarlier) {
      void this.loadEarlier();
    } else if (
      !this._log.attached &&
      s.scrollTop + s.clientHeight > s.scrollHeight - OVERSCAN * LINE_HEIGHT
    ) {
      void this.loadLater();
    }
  }

  private _totalRows(): number {
    return this._log.lines.length + (this._log.partial ? 1 : 0);
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
    if (!this._log.loaded) {
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
    const { lines, partial } = this._log;
    for (let i = first; i < last; i++) {
      const text = i < lines.length ? lines[i] : partial;
      fragment.appendChild(createLogRow(text, needle, i === this._match));
    }
    this._rows.style.transform = `translateY(${first * LINE_HEIGHT}px)`;
    this._rows.replaceChildren(fragment);
  }

  private _updateStatus(): void {
    if (!this._log.loaded) {
      this._status.textContent = this._loading
        ? 'Reading the log…'
        : this._waiting
          ? 'No log yet — it appears when the task starts writing.'
          : '';
      return;
    }
    const live = this._isLive();
    const parts = [this._log.describe()];
    if (this._log.attached && live) {
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
    const count = this._log.countMatching(q.toLowerCase());
    const where = this._log.hasEarlier ? ' in view' : '';
    this._searchStatus.textContent =
      count === 0
        ? `no match${where}`
        : `${count.toLocaleString()} line${count === 1 ? '' : 's'}${where}`;
    this._earlierButton.hidden = !this._log.hasEarlier;
  }

  private _setError(message: string | null): void {
    this._error.hidden = !message;
    this._error.textContent = message
      ? `Could not read the log: ${message}`
      : '';
  }

  private _options: ILogViewerOptions;
  private _log: LogWindow;
  private _poll: Poll;
  private _abort = new AbortController();
  private _following = true;
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
