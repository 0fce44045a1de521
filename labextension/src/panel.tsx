/** The left side panel: header, then Launch, Jobs, Storage and Cluster. */

import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import type { Message } from '@lumino/messaging';
import * as React from 'react';

import { ClusterView } from './cluster';
import { paiIcon } from './icons';
import { InfoHeader } from './infoheader';
import { JobsList } from './jobslist';
import { LaunchForm } from './launchform';
import { PanelTabs } from './paneltabs';
import { PAIModel, type PanelSection } from './panelstate';
import type { JobDetail, JobSummary } from './restmodels';
import { StorageBrowser } from './storage';
import { PANEL_ID } from './tokens';

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
            <PanelTabs model={this.model} />
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
