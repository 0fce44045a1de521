/**
 * A job's main-area tab: summary, why it waits, its tasks, its events, and
 * the log of one task at a time, followed live.
 */

import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import { Panel, SplitPanel, Widget } from '@lumino/widgets';
import * as React from 'react';

import { formatTime, jobDuration, parseTime, stateClass } from './format';
import { paiIcon } from './icons';
import { cloneJob, stopJob } from './jobslist';
import { AttemptLinks } from './attemptlinks';
import { LogViewer } from './logviewer';
import {
  isTerminal,
  type JobDetail,
  type JobEvent,
  type TaskStatus
} from './models';
import { describeError, PAIModel } from './model';
import { TaskPorts, type ITaskPort } from './taskports';
import { UtilisationChart, UtilisationHistory } from './utilisationchart';

/** A DOM-safe widget id for a job id. */
export function jobWidgetId(id: string): string {
  return `jupyter-pai-job-${id.replace(/[^a-zA-Z0-9_-]/g, c => `_${c.charCodeAt(0).toString(16)}`)}`;
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

function Summary(props: { model: JobDetailModel }): JSX.Element {
  const { model } = props;
  const job = model.job;
  if (!job) {
    return model.error ? (
      <div className="jp-PAI-error" role="alert">
        {model.error}
      </div>
    ) : (
      <div className="jp-PAI-empty">Loading job {model.jobId}…</div>
    );
  }
  const selected = model.selected;
  return (
    <div className="jp-PAI-detail">
      <div className="jp-PAI-detail-head">
        <h2>{job.name}</h2>
        <span className={stateClass(job.state)}>{job.state}</span>
        {job.subState && <span className="jp-PAI-muted">{job.subState}</span>}
        <span className="jp-PAI-spacer" />
        {!isTerminal(job.state) && job.state !== 'STOPPING' && (
          <button
            type="button"
            className="jp-mod-styled jp-mod-warn"
            onClick={() =>
              void stopJob(model.pai, job).then(() => model.refreshNow())
            }
          >
            Stop
          </button>
        )}
        <button
          type="button"
          className="jp-mod-styled"
          onClick={() => void cloneJob(model.pai, job)}
        >
          Clone
        </button>
        <button
          type="button"
          className="jp-mod-styled"
          onClick={() => void model.refreshNow()}
        >
          Refresh
        </button>
      </div>
      {model.error && (
        <div className="jp-PAI-error" role="alert">
          {model.error}
        </div>
      )}
      {job.state === 'WAITING' && (
        <div className="jp-PAI-waiting" role="status">
          <strong>Waiting: </strong>
          {job.waitingReason ||
            'the scheduler has not said why yet (see the events below).'}
        </div>
      )}
      <dl className="jp-PAI-summary">
        <dt>Id</dt>
        <dd>
          <code>{job.id}</code>
        </dd>
        <dt>User</dt>
        <dd>{job.user}</dd>
        <dt>Virtual cluster</dt>
        <dd>{job.virtualCluster}</dd>
        <dt>GPUs</dt>
        <dd>{job.totalGpuNumber}</dd>
        <dt>Tasks</dt>
        <dd>
          {job.totalTaskNumber} in {job.totalTaskRoleNumber} role
          {job.totalTaskRoleNumber === 1 ? '' : 's'}
        </dd>
        <dt>Submitted</dt>
        <dd>{formatTime(job.submissionTime)}</dd>
        <dt>Started</dt>
        <dd>{formatTime(job.launchedTime) || '—'}</dd>
        <dt>Finished</dt>
        <dd>{formatTime(job.completedTime) || '—'}</dd>
        <dt>Duration</dt>
        <dd>{jobDuration(job)}</dd>
        <dt>Retries</dt>
        <dd>{job.retries}</dd>
        {job.exitCode !== null && job.exitCode !== undefined && (
          <>
            <dt>Exit code</dt>
            <dd>{job.exitCode}</dd>
          </>
        )}
      </dl>

      <h3>Tasks</h3>
      {job.tasks.length === 0 ? (
        <div className="jp-PAI-empty">No tasks yet.</div>
      ) : (
        <div className="jp-PAI-table-wrap">
          <table className="jp-PAI-table jp-PAI-tasks-table">
            <thead>
              <tr>
                <th scope="col">Task</th>
                <th scope="col">State</th>
                <th scope="col">Node</th>
                <th scope="col">IP</th>
                <th scope="col">Ports</th>
                <th scope="col">GPUs</th>
                <th scope="col">GPU use</th>
                <th scope="col" className="jp-PAI-num">
                  Exit code
                </th>
                <th scope="col" className="jp-PAI-num">
                  Retries
                </th>
                <th scope="col">Log</th>
              </tr>
            </thead>
            <tbody>
              {job.tasks.map(t => {
                const isSelected =
                  selected?.role === t.role && selected?.index === t.index;
                return (
                  <tr
                    key={`${t.role}-${t.index}`}
                    className={isSelected ? 'jp-mod-selected' : ''}
                    data-task={`${t.role}-${t.index}`}
                  >
                    <td>
                      {t.role}-{t.index}
                    </td>
                    <td>
                      <span className={stateClass(t.state)}>{t.state}</span>
                    </td>
                    <td>{t.node ?? '—'}</td>
                    <td>{t.ip ?? '—'}</td>
                    <td className="jp-PAI-ports">
                      <TaskPorts
                        jobId={job.id}
                        task={t}
                        url={path => model.pai.client.url(path)}
                        onOpen={p => model.openPort?.(p, job.name)}
                      />
                    </td>
                    <td className="jp-PAI-gpus">{gpuCell(t)}</td>
                    <td>
                      {t.gpuNumber > 0 ? (
                        <UtilisationChart
                          task={`${t.role}-${t.index}`}
                          history={model.utilisation}
                        />
                      ) : (
                        '—'
                      )}
                    </td>
                    <td
                      className="jp-PAI-num"
                      title={t.exitReason ?? undefined}
                    >
                      {t.exitCode ?? '—'}
                      {t.exitReason ? ` (${t.exitReason})` : ''}
                    </td>
                    <td className="jp-PAI-num">{t.retries}</td>
                    <td>
                      <button
                        type="button"
                        className="jp-mod-styled jp-PAI-link-button"
                        aria-pressed={
                          isSelected && selected?.attempt === undefined
                        }
                        onClick={() =>
                          (model.selected = { role: t.role, index: t.index })
                        }
                      >
                        {isSelected && selected?.attempt === undefined
                          ? 'Shown'
                          : 'Show log'}
                      </button>
                      <AttemptLinks
                        task={t}
                        shown={isSelected ? selected?.attempt : undefined}
                        onShow={attempt =>
                          (model.selected = {
                            role: t.role,
                            index: t.index,
                            attempt
                          })
                        }
                      />
                    </td>
                  </tr>
                );
              })}
            </tbody>
          </table>
        </div>
      )}

      <h3>Events</h3>
      {model.events.length === 0 ? (
        <div className="jp-PAI-empty">No events.</div>
      ) : (
        <ol className="jp-PAI-events">
          {model.events.map((e, i) => (
            <li
              key={i}
              className={e.type === 'Warning' ? 'jp-PAI-event-warning' : ''}
            >
              <time dateTime={e.time} title={parseTime(e.time)?.toString()}>
                {formatTime(e.time)}
              </time>{' '}
              <span className="jp-PAI-muted">{e.source}</span>{' '}
              <strong>{e.reason}</strong> {e.message}
            </li>
          ))}
        </ol>
      )}
    </div>
  );
}

class SummaryWidget extends ReactWidget {
  constructor(private _model: JobDetailModel) {
    super();
    this.addClass('jp-PAI-detail-summary');
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this._model.changed}>
        {() => <Summary model={this._model} />}
      </UseSignal>
    );
  }
}

/** A task whose log to show; `attempt`: an earlier one, else the current. */
export interface LogSelection {
  role: string;
  index: number;
  attempt?: number;
}

/** The tab's content: summary and tasks above, the selected task's log below. */
export class JobDetailPanel extends SplitPanel {
  constructor(
    pai: PAIModel,
    jobId: string,
    jobName?: string,
    openPort?: (port: ITaskPort, jobName: string) => void
  ) {
    super({ orientation: 'vertical', spacing: 2 });
    this.model = new JobDetailModel(pai, jobId);
    this.model.openPort = openPort ?? null;
    this.id = jobWidgetId(jobId);
    this.addClass('jp-PAI-detail-panel');
    this.title.label = jobName ?? jobId;
    this.title.caption = `PAI job ${jobId}`;
    this.title.icon = paiIcon;
    this.title.closable = true;

    this._summary = new SummaryWidget(this.model);
    this._logArea = new Panel();
    this._logArea.addClass('jp-PAI-log-area');
    this._logTitle = new Widget();
    this._logTitle.addClass('jp-PAI-log-title');
    this._logArea.addWidget(this._logTitle);
    this.addWidget(this._summary);
    this.addWidget(this._logArea);
    this.setRelativeSizes([1, 1]);

    this.model.changed.connect(this._onChanged, this);
    this.model.start();
  }

  readonly model: JobDetailModel;

  get logViewer(): LogViewer | null {
    return this._viewer;
  }

  dispose(): void {
    if (this.isDisposed) {
      return;
    }
    this.model.dispose();
    super.dispose();
  }

  protected onAfterShow(): void {
    this.model.visible = true;
    void this.model.refreshNow();
  }

  protected onAfterHide(): void {
    this.model.visible = false;
  }

  private _onChanged(): void {
    const job = this.model.job;
    if (job) {
      this.title.label = job.name;
      this.title.className = `jp-PAI-tab-${job.state.toLowerCase()}`;
    }
    const sel = this.model.selected;
    const current = this._viewer;
    if (
      sel &&
      (!current ||
        current.role !== sel.role ||
        current.index !== sel.index ||
        current.attempt !== sel.attempt)
    ) {
      current?.dispose();
      const viewer = new LogViewer({
        client: this.model.pai.client,
        jobId: this.model.jobId,
        jobName: job?.name ?? this.model.jobId,
        role: sel.role,
        index: sel.index,
        attempt: sel.attempt,
        chunkBytes: this.model.pai.settings.logChunkKiB * 1024,
        isLive: () => {
          const task = this.model.taskState(sel.role, sel.index);
          const j = this.model.job;
          return (
            !(j && isTerminal(j.state)) && !(task && isTerminal(task.state))
          );
        }
      });
      this._viewer = viewer;
      this._logTitle.node.textContent =
        sel.attempt === undefined
          ? `Log of ${sel.role}-${sel.index}`
          : `Log of ${sel.role}-${sel.index}, attempt ${sel.attempt} (ended)`;
      this._logArea.addWidget(viewer);
      void viewer.start();
    }
  }

  private _summary: SummaryWidget;
  private _logArea: Panel;
  private _logTitle: Widget;
  private _viewer: LogViewer | null = null;
}

/** "2 (0,1)" where device ids are known, "2" where only the count is. */
function gpuCell(t: TaskStatus): string {
  if (!t.gpuNumber) {
    return '—';
  }
  return t.gpus.length
    ? `${t.gpuNumber} (${t.gpus.join(',')})`
    : `${t.gpuNumber}`;
}
