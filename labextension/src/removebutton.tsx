/** The × button that removes a row or a task role from the launch form. */

import { closeIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

export function RemoveButton(props: {
  /** Its accessible name: "Remove parameter lr". */
  label: string;
  /** Also show the label as a tooltip. */
  titled?: boolean;
  onClick: () => void;
}): JSX.Element {
  return (
    <button
      type="button"
      className="jp-mod-styled jp-PAI-icon-button"
      title={props.titled ? props.label : undefined}
      aria-label={props.label}
      onClick={props.onClick}
    >
      <closeIcon.react tag="span" className="jp-PAI-icon" />
    </button>
  );
}
