import { ReactWidget, UseSignal } from '@jupyterlab/apputils';
import * as React from 'react';

import { paiIcon } from './icons';
import { PAIModel } from './model';
import { PANEL_ID } from './tokens';

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

/** The left side panel. */
export class PAIPanel extends ReactWidget {
  constructor(readonly model: PAIModel) {
    super();
    this.id = PANEL_ID;
    this.title.icon = paiIcon;
    this.title.caption = 'PAI';
    this.addClass('jp-PAI-panel');
  }

  render(): JSX.Element {
    return (
      <UseSignal signal={this.model.changed}>
        {() => <InfoHeader model={this.model} />}
      </UseSignal>
    );
  }
}
