/**
 * Abnormal jobs (OpenPAI's rule, judged by the server: running too long, or
 * GPUs idle over the last hour): listed in the cluster view with the reasons
 * and Stop for the user's own, and a notification once when one of the user's
 * own jobs becomes abnormal, panel open or not.
 */

import { Notification, UseSignal } from '@jupyterlab/apputils';
import { Poll } from '@lumino/polling';
import { ISignal, Signal } from '@lumino/signaling';
import * as React from 'react';

import { jobDuration } from './displayformat';
import { stopJob } from './jobslist';
import type { AbnormalJob, JobSummary } from './restmodels';
import { describeError, PAIModel } from './panelstate';

/** The words of a notification about one of the user's jobs. */
export function abnormalMessage(a: AbnormalJob): string {
  return `Your job ${a.job.name} looks abnormal: ${a.reasons.join('; ')}.`;
}

/** Which of `items` to notify about: the user's own, not notified before. */
export function toNotify(
  items: AbnormalJob[],
  notified: Set<string>
): AbnormalJob[] {
  return items.filter(a => a.mayStop && !notified.has(a.job.id));
}

/** The server's abnormal jobs, polled once a minute; one watcher per model. */
export class AbnormalJobsWatcher {
  static for(model: PAIModel): AbnormalJobsWatcher {
    let watcher = WATCHERS.get(model);
    if (!watcher) {
      watcher = new AbnormalJobsWatcher(model);
      WATCHERS.set(model, watcher);
    }
    return watcher;
  }

  private constructor(readonly model: PAIModel) {
    this._poll = new Poll({
      factory: () => this.refresh(),
      frequency: { interval: 60 * 1000, backoff: true, max: 5 * 60 * 1000 },
      name: 'jupyter-pai:abnormal-jobs',
      standby: 'when-hidden'
    });
  }

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get items(): AbnormalJob[] {
    return this._items;
  }

  get error(): string | null {
    return this._error;
  }

  async refresh(): Promise<void> {
    try {
      this._items = await this.model.client.abnormalJobs();
      this._error = null;
    } catch (error) {
      this._error = describeError(error);
    }
    for (const a of toNotify(this._items, this._notified)) {
      this._notified.add(a.job.id);
      Notification.warning(abnormalMessage(a), {
        autoClose: false,
        actions: [
          {
            label: 'Stop job',
            caption: `Stop ${a.job.name}`,
            callback: () => void this.stop(a.job)
          }
        ]
      });
    }
    this._changed.emit();
  }

  async stop(job: JobSummary): Promise<void> {
    await stopJob(this.model, job);
    await this.refresh();
  }

  dispose(): void {
    this._poll.dispose();
  }

  private _poll: Poll;
  private _items: AbnormalJob[] = [];
  private _error: string | null = null;
  private _notified = new Set<string>();
  private _changed = new Signal<this, void>(this);
}

const WATCHERS = new WeakMap<PAIModel, AbnormalJobsWatcher>();

/** The cluster view's list: each job with why, and Stop where the user may. */
export function AbnormalJobsList(props: {
  model: PAIModel;
  onOpen?: (job: JobSummary) => void;
}): JSX.Element {
  const watcher = AbnormalJobsWatcher.for(props.model);
  React.useEffect(() => {
    void watcher.refresh();
  }, [watcher]);
  return (
    <UseSignal signal={watcher.changed}>
      {() => (
        <div className="jp-PAI-abnormal-section">
          <div className="jp-PAI-section-title">Abnormal jobs</div>
          {watcher.error && (
            <div className="jp-PAI-error" role="alert">
              {watcher.error}
            </div>
          )}
          {watcher.items.length === 0 ? (
            <div className="jp-PAI-hint">
              No abnormal job: none has run too long or left its GPUs idle.
            </div>
          ) : (
            <ul className="jp-PAI-abnormal">
              {watcher.items.map(a => (
                <li key={a.job.id} data-job={a.job.id}>
                  <button
                    type="button"
                    className="jp-PAI-link-button"
                    onClick={() => props.onOpen?.(a.job)}
                  >
                    {a.job.name}
                  </button>{' '}
                  <span className="jp-PAI-muted">
                    {a.job.user} · {a.job.virtualCluster} ·{' '}
                    {a.job.totalGpuNumber} GPUs · {jobDuration(a.job)}
                  </span>
                  <ul className="jp-PAI-abnormal-reasons">
                    {a.reasons.map(r => (
                      <li key={r}>{r}</li>
                    ))}
                  </ul>
                  {a.mayStop && (
                    <button
                      type="button"
                      className="jp-mod-styled jp-mod-warn jp-PAI-abnormal-stop"
                      onClick={() => void watcher.stop(a.job)}
                    >
                      Stop
                    </button>
                  )}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}
    </UseSignal>
  );
}
