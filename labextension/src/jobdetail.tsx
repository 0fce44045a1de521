/**
 * A job's main-area tab: summary, why it waits, its tasks, its events, and
 * the log of one task at a time, followed live.
 */

import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import { Panel, SplitPanel, Widget } from '@lumino/widgets';
import * as React from 'react';

import { paiIcon } from './icons';
import { JobDetailModel } from './jobdetailmodel';
import { JobDetailSummary } from './jobdetailsummary';
import { LogViewer } from './logviewer';
import type { PAIModel } from './panelstate';
import { isTerminal } from './restmodels';
import type { ITaskPort } from './taskports';

/** A DOM-safe widget id for a job id. */
export function jobWidgetId(id: string): string {
  return `jupyter-pai-job-${id.replace(/[^a-zA-Z0-9_-]/g, c => `_${c.charCodeAt(0).toString(16)}`)}`;
}

class SummaryWidget extends ReactWidget {
  constructor(private _model: JobDetailModel) {
    super();
    this.addClass('jp-PAI-detail-summary');
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this._model.changed}>
        {() => <JobDetailSummary model={this._model} />}
      </UseSignal>
    );
  }
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
