/** A job tab's data: the job, its events and GPU use, refreshed while the tab is visible. */

import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';

import { describeError, PAIModel } from './panelstate';
import {
  isTerminal,
  type JobDetail,
  type JobEvent,
  type TaskStatus
} from './restmodels';
import type { ITaskPort } from './taskports';
import { UtilisationHistory } from './utilisationhistory';

/** A task whose log to show; `attempt`: an earlier one, else the current. */
export interface LogSelection {
  role: string;
  index: number;
  attempt?: number;
}

/** What the tab knows about its job, refreshed while the tab is visible. */
export class JobDetailModel {
  constructor(
    readonly pai: PAIModel,
    readonly jobId: string
  ) {
    this._poll = new Poll({
      auto: false,
      factory: () => this.refresh(),
      frequency: {
        interval: Math.max(1, pai.settings.refreshInterval) * 1000,
        backoff: true,
        max: 60000
      },
      name: `jupyter-pai:job:${jobId}`,
      standby: () => (this.visible ? 'when-hidden' : true)
    });
  }

  visible = true;

  /** GPU use of each task, sampled at each refresh while the job runs. */
  readonly utilisation = new UtilisationHistory();

  /** Opens a task's port in a tab (set by whoever adds the job's tab). */
  openPort: ((port: ITaskPort, jobName: string) => void) | null = null;

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get job(): JobDetail | null {
    return this._job;
  }

  get events(): JobEvent[] {
    return this._events;
  }

  get error(): string | null {
    return this._error;
  }

  /** The task whose log is shown (and which earlier attempt, if not the current). */
  get selected(): LogSelection | null {
    return this._selected;
  }

  set selected(value: LogSelection | null) {
    this._selected = value;
    this._changed.emit();
  }

  start(): void {
    void this._poll.start();
  }

  refreshNow(): Promise<void> {
    return this._poll.refresh();
  }

  async refresh(): Promise<void> {
    try {
      const [job, events] = await Promise.all([
        this.pai.client.job(this.jobId),
        this.pai.client.events(this.jobId).catch(() => this._events)
      ]);
      this._job = job;
      this._events = events;
      this._error = null;
      if (job.state === 'RUNNING' && job.totalGpuNumber > 0) {
        // GPU use while it runs; a failure to read it is not the job's error.
        await this.pai.client
          .utilisation(this.jobId)
          .then(u => this.utilisation.add(u))
          .catch(() => undefined);
      }
      if (!this._selected && job.tasks.length) {
        const first =
          job.tasks.find(t => t.state === 'RUNNING' || t.state === 'FAILED') ??
          job.tasks[0];
        this._selected = { role: first.role, index: first.index };
      }
      this._changed.emit();
      if (isTerminal(job.state)) {
        // Final: no more changes to read.
        void this._poll.stop();
      }
    } catch (error) {
      this._error = describeError(error);
      this._changed.emit();
      throw error;
    }
  }

  taskState(role: string, index: number): TaskStatus | undefined {
    return this._job?.tasks.find(t => t.role === role && t.index === index);
  }

  dispose(): void {
    this._poll.dispose();
    Signal.clearData(this);
  }

  private _poll: Poll;
  private _job: JobDetail | null = null;
  private _events: JobEvent[] = [];
  private _error: string | null = null;
  private _selected: LogSelection | null = null;
  private _changed = new Signal<this, void>(this);
}
