/** The left side panel: header, then Launch, Jobs, Storage and Cluster. */

import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import type { Message } from '@lumino/messaging';
import * as React from 'react';

import { ClusterView } from './cluster';
import { paiIcon } from './icons';
import { JobsList } from './jobslist';
import { LaunchForm } from './launchform';
import type { JobDetail, JobSummary } from './models';
import { PAIModel, type PanelSection } from './model';
import { StorageBrowser } from './storage';
import { PANEL_ID } from './tokens';

const SECTIONS: Array<{ id: PanelSection; label: string }> = [
  { id: 'launch', label: 'Launch' },
  { id: 'jobs', label: 'Jobs' },
  { id: 'storage', label: 'Storage' },
  { id: 'cluster', label: 'Cluster' }
];

/** The backend and user line at the top of the panel. */
export function InfoHeader(props: { model: PAIModel }): JSX.Element {
  const { info, infoError } = props.model;
  let body: JSX.Element;
  if (infoError) {
    body = (
      <div className="jp-PAI-error" role="alert">
        {infoError}
      </div>
    );
  } else if (!info) {
    body = <div className="jp-PAI-muted">Connecting…</div>;
  } else {
    body = (
      <div className="jp-PAI-info">
        <span className="jp-PAI-info-user" title="user">
          {info.user}
        </span>
        <span className="jp-PAI-info-backend" title="backend">
          {info.backend}
          {info.flavor ? ` (${info.flavor})` : ''}
          {info.namespace ? ` · ${info.namespace}` : ''}
          {info.gpuSlots !== null && info.gpuSlots !== undefined
            ? ` · ${info.gpuSlots} GPU slot${info.gpuSlots === 1 ? '' : 's'}`
            : ''}
        </span>
      </div>
    );
  }
  return (
    <header className="jp-PAI-header">
      <h2 className="jp-PAI-title">PAI</h2>
      {body}
    </header>
  );
}

function Tabs(props: { model: PAIModel }): JSX.Element {
  const { model } = props;
  const refs = React.useRef<Array<HTMLButtonElement | null>>([]);
  const onKey = (event: React.KeyboardEvent, i: number) => {
    let next = -1;
    if (event.key === 'ArrowRight') {
      next = (i + 1) % SECTIONS.length;
    } else if (event.key === 'ArrowLeft') {
      next = (i + SECTIONS.length - 1) % SECTIONS.length;
    } else if (event.key === 'Home') {
      next = 0;
    } else if (event.key === 'End') {
      next = SECTIONS.length - 1;
    }
    if (next >= 0) {
      event.preventDefault();
      model.section = SECTIONS[next].id;
      refs.current[next]?.focus();
    }
  };
  const waiting = model.myJobs().filter(j => j.state === 'WAITING').length;
  const running = model.myJobs().filter(j => j.state === 'RUNNING').length;
  return (
    <div className="jp-PAI-tabs" role="tablist" aria-label="PAI">
      {SECTIONS.map((s, i) => {
        const selected = model.section === s.id;
        return (
          <button
            key={s.id}
            ref={el => (refs.current[i] = el)}
            type="button"
            role="tab"
            id={`jp-PAI-tab-${s.id}`}
            aria-selected={selected}
            aria-controls={`jp-PAI-section-${s.id}`}
            tabIndex={selected ? 0 : -1}
            className={`jp-PAI-tab ${selected ? 'jp-mod-current' : ''}`}
            onClick={() => (model.section = s.id)}
            onKeyDown={e => onKey(e, i)}
          >
            {s.label}
            {s.id === 'jobs' && running + waiting > 0 && (
              <span
                className="jp-PAI-badge"
                title={`${running} running, ${waiting} waiting`}
              >
                {running + waiting}
              </span>
            )}
          </button>
        );
      })}
    </div>
  );
}

export interface IPAIPanelOptions {
  model: PAIModel;
  openJob: (job: JobSummary | JobDetail) => void;
}

/** The left side panel. Every section stays mounted, so a half-filled form survives a look at the job list. */
export class PAIPanel extends ReactWidget {
  constructor(options: IPAIPanelOptions) {
    super();
    this.model = options.model;
    this._openJob = options.openJob;
    this.id = PANEL_ID;
    this.title.icon = paiIcon;
    this.title.caption = 'PAI';
    this.addClass('jp-PAI-panel');
  }

  readonly model: PAIModel;

  protected onAfterShow(msg: Message): void {
    super.onAfterShow(msg);
    this.model.panelVisible = true;
  }

  protected onAfterHide(msg: Message): void {
    super.onAfterHide(msg);
    this.model.panelVisible = false;
  }

  render(): JSX.Element {
    const section = (id: PanelSection, content: JSX.Element) => (
      <div
        role="tabpanel"
        id={`jp-PAI-section-${id}`}
        aria-labelledby={`jp-PAI-tab-${id}`}
        className="jp-PAI-section"
        hidden={this.model.section !== id}
      >
        {content}
      </div>
    );
    return (
      <UseSignal signal={this.model.changed}>
        {() => (
          <>
            <InfoHeader model={this.model} />
            <Tabs model={this.model} />
            {section(
              'launch',
              <LaunchForm
                model={this.model}
                onSubmitted={job => this._openJob(job)}
              />
            )}
            {section(
              'jobs',
              <JobsList model={this.model} onOpen={job => this._openJob(job)} />
            )}
            {section('storage', <StorageBrowser model={this.model} />)}
            {section(
              'cluster',
              <ClusterView
                model={this.model}
                onOpen={job => this._openJob(job)}
              />
            )}
          </>
        )}
      </UseSignal>
    );
  }

  private _openJob: (job: JobSummary | JobDetail) => void;
}
