/**
 * Below the job list: how many of the server's jobs are read, and a button
 * that reads the next page of older ones.
 */
import * as React from 'react';

import type { PAIModel } from './panelstate';

export interface IShowMoreJobsProps {
  model: PAIModel;
}

export function ShowMoreJobs(props: IShowMoreJobsProps): JSX.Element | null {
  const { model } = props;
  const [busy, setBusy] = React.useState(false);
  const shown = model.jobs.length;
  const total = model.jobsTotal;
  if (!model.loaded || total === 0) {
    return null;
  }
  const more = async (): Promise<void> => {
    setBusy(true);
    try {
      await model.showMoreJobs();
    } catch {
      // The poll shows what failed.
    } finally {
      setBusy(false);
    }
  };
  return (
    <div className="jp-PAI-more" aria-live="polite">
      <span className="jp-PAI-more-count">
        {shown < total
          ? `The newest ${shown.toLocaleString()} of ${total.toLocaleString()} jobs`
          : `${total.toLocaleString()} job${total === 1 ? '' : 's'}`}
      </span>
      {shown < total && (
        <button
          type="button"
          className="jp-mod-styled"
          disabled={busy}
          onClick={() => void more()}
        >
          {busy ? 'Reading…' : 'Show more'}
        </button>
      )}
    </div>
  );
}
