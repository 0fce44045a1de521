/** The backend and user line at the top of the side panel. */

import * as React from 'react';

import type { PAIModel } from './panelstate';

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
