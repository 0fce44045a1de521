/** The status bar item: the user's running and waiting jobs. */

import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import * as React from 'react';

import { paiIcon } from './icons';
import { PAIModel } from './panelstate';

export function statusText(model: PAIModel): { text: string; title: string } {
  if (model.error && !model.loaded) {
    return { text: 'PAI: unreachable', title: model.error };
  }
  const mine = model.myJobs();
  const running = mine.filter(j => j.state === 'RUNNING').length;
  const waiting = mine.filter(j => j.state === 'WAITING').length;
  const title =
    `${running} running, ${waiting} waiting job${waiting === 1 ? '' : 's'}` +
    (model.error ? ` — ${model.error}` : '') +
    ' (click to show the PAI panel)';
  return { text: `${running} running · ${waiting} waiting`, title };
}

export class PAIStatusItem extends ReactWidget {
  constructor(
    private _model: PAIModel,
    private _onClick: () => void
  ) {
    super();
    this.addClass('jp-PAI-status');
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this._model.changed}>
        {() => {
          const { text, title } = statusText(this._model);
          return (
            <button
              type="button"
              className="jp-PAI-status-button"
              title={title}
              onClick={this._onClick}
            >
              <paiIcon.react tag="span" className="jp-PAI-status-icon" />
              <span>{text}</span>
            </button>
          );
        }}
      </UseSignal>
    );
  }
}
