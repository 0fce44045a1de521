/**
 * The job list: OpenPAI's columns, filters by state, virtual cluster and
 * text, and the stop and clone actions.
 */

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import { copyIcon, stopIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import { DataTable, type IColumn } from './datatable';
import { formatTime, jobDuration, stateClass } from './displayformat';
import {
  JOB_STATES,
  isTerminal,
  matchesFilter,
  type JobState,
  type JobSummary
} from './restmodels';
import { describeError, PAIModel } from './panelstate';
import { ShowMoreJobs } from './showmorejobs';
import { specToForm } from './jobform';

export interface IJobsListProps {
  model: PAIModel;
  onOpen: (job: JobSummary) => void;
}

/** Ask, then stop a job; the list shows STOPPING at once. */
export async function stopJob(model: PAIModel, job: JobSummary): Promise<void> {
  const answer = await showDialog({
    title: `Stop ${job.name}?`,
    body: `All ${job.totalTaskNumber} task${job.totalTaskNumber === 1 ? '' : 's'} of the job stop; it stays listed as STOPPED.`,
    buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Stop job' })]
  });
  if (!answer.button.accept) {
    return;
  }
  try {
    const stopped = await model.client.stopJob(job.id);
    model.updateJob(stopped ?? { ...job, state: 'STOPPING' });
    void model.refreshNow();
  } catch (error) {
    Notification.error(`Could not stop ${job.name}: ${describeError(error)}`, {
      autoClose: false
    });
  }
}

/** Open the launch form filled from a job's spec, with a fresh name. */
export async function cloneJob(
  model: PAIModel,
  job: JobSummary
): Promise<void> {
  try {
    const detail = await model.client.job(job.id);
    const form = specToForm(detail.spec);
    form.name = nextName(detail.name, model.jobs);
    if (!form.virtualCluster) {
      form.virtualCluster = detail.virtualCluster;
    }
    model.requestForm(form);
  } catch (error) {
    Notification.error(`Could not clone ${job.name}: ${describeError(error)}`, {
      autoClose: false
    });
  }
}

/** `train` → `train-2`, `train-2` → `train-3`, skipping names in use. */
export function nextName(name: string, jobs: { name: string }[]): string {
  const taken = new Set(jobs.map(j => j.name));
  // A short numeric suffix is a counter; a long one (a date, a timestamp) is part of the name.
  const match = /^(.*?)-(\d{1,3})$/.exec(name);
  const stem = match ? match[1] : name;
  let n = match ? Number(match[2]) + 1 : 2;
  while (taken.has(`${stem}-${n}`)) {
    n++;
  }
  return `${stem}-${n}`;
}

type StateFilter = 'all' | 'active' | JobState;

const COLUMNS: IColumn[] = [
  { label: 'Name' },
  { label: 'State' },
  { label: 'VC' },
  { label: 'GPUs', numeric: true },
  { label: 'Tasks', numeric: true },
  { label: 'Submitted' },
  { label: 'Duration' },
  { label: 'Retries', numeric: true },
  { label: <span className="jp-PAI-sr-only">Actions</span> }
];

export function JobsList(props: IJobsListProps): JSX.Element {
  const { model } = props;
  const [state, setState] = React.useState<StateFilter>('all');
  const [vc, setVc] = React.useState('');
  const [text, setText] = React.useState('');
  const [mine, setMine] = React.useState(true);

  const user = model.info?.user;
  const jobs = model.jobs.filter(job => {
    if (mine && user && job.user !== user) {
      return false;
    }
    if (state === 'active' && isTerminal(job.state)) {
      return false;
    }
    return matchesFilter(
      {
        vc: vc || null,
        state: state === 'all' || state === 'active' ? null : [state],
        keyword: text || null
      },
      job
    );
  });
  jobs.sort((a, b) => b.submissionTime.localeCompare(a.submissionTime));
  const vcNames = Array.from(
    new Set([
      ...model.virtualClusters.map(v => v.name),
      ...model.jobs.map(j => j.virtualCluster)
    ])
  ).sort();

  let body: JSX.Element;
  if (model.error && !model.loaded) {
    body = (
      <div className="jp-PAI-error" role="alert">
        {model.error}
      </div>
    );
  } else if (!model.loaded) {
    body = <div className="jp-PAI-empty">Loading jobs…</div>;
  } else if (model.jobs.length === 0) {
    body = (
      <div className="jp-PAI-empty">
        <p>No jobs yet.</p>
        <button
          type="button"
          className="jp-mod-styled jp-mod-accept"
          onClick={() => model.requestForm(null)}
        >
          Launch a job
        </button>
      </div>
    );
  } else if (jobs.length === 0) {
    body = <div className="jp-PAI-empty">No job matches these filters.</div>;
  } else {
    body = (
      <DataTable className="jp-PAI-jobs-table" columns={COLUMNS}>
        {jobs.map(job => (
          <tr
            key={job.id}
            className="jp-PAI-job-row"
            data-job-id={job.id}
            title={job.waitingReason ?? undefined}
          >
            <td className="jp-PAI-col-name">
              <button
                type="button"
                className="jp-PAI-link-button jp-PAI-job-name"
                onClick={() => props.onOpen(job)}
                title={`Open ${job.name}${user && job.user !== user ? ` (${job.user})` : ''}`}
              >
                {job.name}
              </button>
              {job.user !== user && (
                <span className="jp-PAI-muted"> · {job.user}</span>
              )}
            </td>
            <td className="jp-PAI-col-state">
              <span className={stateClass(job.state)}>{job.state}</span>
              {job.kind === 'kernel' && (
                <span
                  className="jp-PAI-badge jp-PAI-kernel-badge"
                  title="A remote kernel's job: stopping it ends the kernel"
                >
                  kernel
                </span>
              )}
            </td>
            <td className="jp-PAI-col-meta" data-label="VC">
              {job.virtualCluster}
            </td>
            <td className="jp-PAI-num jp-PAI-col-meta" data-label="GPUs">
              {job.totalGpuNumber}
            </td>
            <td className="jp-PAI-num jp-PAI-col-meta" data-label="tasks">
              {job.totalTaskNumber}
            </td>
            <td className="jp-PAI-col-meta" data-label="submitted">
              {formatTime(job.submissionTime)}
            </td>
            <td className="jp-PAI-col-meta" data-label="for">
              {jobDuration(job)}
            </td>
            <td className="jp-PAI-num jp-PAI-col-meta" data-label="retries">
              {job.retries}
            </td>
            <td className="jp-PAI-actions">
              {!isTerminal(job.state) && job.state !== 'STOPPING' && (
                <button
                  type="button"
                  className="jp-mod-styled jp-PAI-icon-button"
                  title={`Stop ${job.name}`}
                  aria-label={`Stop ${job.name}`}
                  onClick={() => void stopJob(model, job)}
                >
                  <stopIcon.react tag="span" className="jp-PAI-icon" />
                </button>
              )}
              <button
                type="button"
                className="jp-mod-styled jp-PAI-icon-button"
                title={`Clone ${job.name} into the launch form`}
                aria-label={`Clone ${job.name}`}
                onClick={() => void cloneJob(model, job)}
              >
                <copyIcon.react tag="span" className="jp-PAI-icon" />
              </button>
            </td>
          </tr>
        ))}
      </DataTable>
    );
  }

  return (
    <div className="jp-PAI-jobs">
      <div className="jp-PAI-filters" role="search">
        <input
          type="search"
          aria-label="Filter jobs by name"
          className="jp-mod-styled jp-PAI-input jp-PAI-grow"
          placeholder="Filter by name…"
          value={text}
          onChange={e => setText(e.target.value)}
        />
        <select
          aria-label="Filter by state"
          className="jp-mod-styled jp-PAI-input"
          value={state}
          onChange={e => setState(e.target.value as StateFilter)}
        >
          <option value="all">All states</option>
          <option value="active">Waiting or running</option>
          {JOB_STATES.map(s => (
            <option key={s} value={s}>
              {s}
            </option>
          ))}
        </select>
        <select
          aria-label="Filter by virtual cluster"
          className="jp-mod-styled jp-PAI-input"
          value={vc}
          onChange={e => setVc(e.target.value)}
        >
          <option value="">All VCs</option>
          {vcNames.map(v => (
            <option key={v} value={v}>
              {v}
            </option>
          ))}
        </select>
        <label className="jp-PAI-check" title="Only my jobs">
          <input
            type="checkbox"
            checked={mine}
            onChange={e => setMine(e.target.checked)}
          />
          Mine
        </label>
      </div>
      {model.error && model.loaded && (
        <div className="jp-PAI-error" role="alert">
          {model.error} — showing the jobs from{' '}
          {model.lastRefresh?.toLocaleTimeString() ?? 'before'}.
        </div>
      )}
      {body}
      <ShowMoreJobs model={model} />
    </div>
  );
}
