/** Progress bars of the storage browser's uploads: one per file and one overall. */

import * as React from 'react';

import { formatBytes } from './displayformat';
import { fraction, overallProgress, type IUploadItem } from './uploadplan';

function Bar(props: { value: number; label: string }): JSX.Element {
  return (
    <progress
      className="jp-PAI-upload-bar"
      max={1}
      value={props.value}
      aria-label={props.label}
    />
  );
}

export function UploadProgress(props: {
  items: IUploadItem[];
  running: boolean;
  onCancel: () => void;
  onClose: () => void;
}): JSX.Element | null {
  const { items, running } = props;
  if (!items.length) {
    return null;
  }
  const all = overallProgress(items);
  return (
    <section className="jp-PAI-uploads" aria-label="Uploads">
      <div className="jp-PAI-filters">
        <span className="jp-PAI-upload-summary">
          {running ? 'Uploading' : 'Uploaded'} {all.finished} of {all.count}{' '}
          files, {formatBytes(all.sent)} of {formatBytes(all.total)}
        </span>
        <span className="jp-PAI-spacer" />
        {running ? (
          <button
            type="button"
            className="jp-mod-styled jp-PAI-link-button"
            onClick={props.onCancel}
          >
            Cancel
          </button>
        ) : (
          <button
            type="button"
            className="jp-mod-styled jp-PAI-link-button"
            onClick={props.onClose}
          >
            Close
          </button>
        )}
      </div>
      <Bar value={all.fraction} label="All uploads" />
      <ul className="jp-PAI-upload-list">
        {items.map(item => (
          <li
            key={item.id}
            className={`jp-PAI-upload jp-PAI-upload-${item.status}`}
            data-path={item.path}
          >
            <span className="jp-PAI-upload-name" title={item.path}>
              {item.path}
            </span>
            <Bar
              value={fraction(item.sent, item.total, item.status === 'done')}
              label={`Upload of ${item.path}`}
            />
            <span className="jp-PAI-muted jp-PAI-upload-state">
              {item.status === 'failed' ? item.error : item.status}
            </span>
          </li>
        ))}
      </ul>
    </section>
  );
}
