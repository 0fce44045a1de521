/** The top of a job's tab: state and actions, why it waits, its summary, tasks and events. */

import * as React from 'react';

import { formatTime, jobDuration, stateClass } from './displayformat';
import type { JobDetailModel } from './jobdetailmodel';
import { JobEvents } from './jobevents';
import { cloneJob, stopJob } from './jobslist';
import { isTerminal } from './restmodels';
import { TaskTable } from './tasktable';

export function JobDetailSummary(props: {
  model: JobDetailModel;
}): JSX.Element {
  const { model } = props;
  const job = model.job;
  if (!job) {
    return model.error ? (
      <div className="jp-PAI-error" role="alert">
        {model.error}
      </div>
    ) : (
      <div className="jp-PAI-empty">Loading job {model.jobId}…</div>
    );
  }
  return (
    <div className="jp-PAI-detail">
      <div className="jp-PAI-detail-head">
        <h2>{job.name}</h2>
        <span className={stateClass(job.state)}>{job.state}</span>
        {job.subState && <span className="jp-PAI-muted">{job.subState}</span>}
        <span className="jp-PAI-spacer" />
        {!isTerminal(job.state) && job.state !== 'STOPPING' && (
          <button
            type="button"
            className="jp-mod-styled jp-mod-warn"
            onClick={() =>
              void stopJob(model.pai, job).then(() => model.refreshNow())
            }
          >
            Stop
          </button>
        )}
        <button
          type="button"
          className="jp-mod-styled"
          onClick={() => void cloneJob(model.pai, job)}
        >
          Clone
        </button>
        <button
          type="button"
          className="jp-mod-styled"
          onClick={() => void model.refreshNow()}
        >
          Refresh
        </button>
      </div>
      {model.error && (
        <div className="jp-PAI-error" role="alert">
          {model.error}
        </div>
      )}
      {job.state === 'WAITING' && (
        <div className="jp-PAI-waiting" role="status">
          <strong>Waiting: </strong>
          {job.waitingReason ||
            'the scheduler has not said why yet (see the events below).'}
        </div>
      )}
      <dl className="jp-PAI-summary">
        <dt>Id</dt>
        <dd>
          <code>{job.id}</code>
        </dd>
        <dt>User</dt>
        <dd>{job.user}</dd>
        <dt>Virtual cluster</dt>
        <dd>{job.virtualCluster}</dd>
        <dt>GPUs</dt>
        <dd>{job.totalGpuNumber}</dd>
        <dt>Tasks</dt>
        <dd>
          {job.totalTaskNumber} in {job.totalTaskRoleNumber} role
          {job.totalTaskRoleNumber === 1 ? '' : 's'}
        </dd>
        <dt>Submitted</dt>
        <dd>{formatTime(job.submissionTime)}</dd>
        <dt>Started</dt>
        <dd>{formatTime(job.launchedTime) || '—'}</dd>
        <dt>Finished</dt>
        <dd>{formatTime(job.completedTime) || '—'}</dd>
        <dt>Duration</dt>
        <dd>{jobDuration(job)}</dd>
        <dt>Retries</dt>
        <dd>{job.retries}</dd>
        {job.exitCode !== null && job.exitCode !== undefined && (
          <>
            <dt>Exit code</dt>
            <dd>{job.exitCode}</dd>
          </>
        )}
      </dl>

      <h3>Tasks</h3>
      {job.tasks.length === 0 ? (
        <div className="jp-PAI-empty">No tasks yet.</div>
      ) : (
        <TaskTable model={model} job={job} />
      )}

      <h3>Events</h3>
      <JobEvents events={model.events} />
    </div>
  );
}
