/**
 * A running task's declared ports, each openable in a JupyterLab tab through
 * the server's proxy (`jobs/{id}/tasks/{task}/ports/{port}/`): "Open
 * TensorBoard" for a port labelled `tensorboard` (OpenPAI's tensorboard
 * plugin, or declared by hand), the label and number for the others. The
 * proxy reaches the port on this machine or through a pod port-forward, so
 * the same link works on every backend.
 */

import { IFrame, MainAreaWidget } from '@jupyterlab/apputils';
import * as React from 'react';

import type { TaskStatus } from './restmodels';

/** The port label OpenPAI's tensorboard plugin gives its port. */
export const TENSORBOARD_PORT = 'tensorboard';

/** Labels the panel shows but that are not web pages. */
const NOT_WEB = new Set(['ssh']);

/** One port of a task, and where the proxy serves it. */
export interface ITaskPort {
  jobId: string;
  task: string;
  label: string;
  port: number;
  /** The proxy's URL of the port's root, ending in `/`. */
  url: string;
}

/** The proxy's path (below `pai/api`) of a task's port. */
export function taskPortPath(
  jobId: string,
  task: string,
  port: number
): string {
  return `jobs/${encodeURIComponent(jobId)}/tasks/${encodeURIComponent(task)}/ports/${port}/`;
}

/** The ports of a task that can be opened now: a running task's web ports. */
export function openablePorts(
  jobId: string,
  task: TaskStatus,
  url: (path: string) => string
): ITaskPort[] {
  if (task.state !== 'RUNNING') {
    return [];
  }
  const name = `${task.role}-${task.index}`;
  const out: ITaskPort[] = [];
  for (const [label, ports] of Object.entries(task.ports ?? {})) {
    if (NOT_WEB.has(label)) {
      continue;
    }
    for (const port of ports) {
      out.push({
        jobId,
        task: name,
        label,
        port,
        url: url(taskPortPath(jobId, name, port))
      });
    }
  }
  return out;
}

/** What a button says for a port. */
export function portCaption(p: ITaskPort): string {
  return p.label === TENSORBOARD_PORT
    ? 'Open TensorBoard'
    : `${p.label} ${p.port}`;
}

export interface ITaskPortsProps {
  jobId: string;
  task: TaskStatus;
  url: (path: string) => string;
  onOpen: (port: ITaskPort) => void;
}

/** The Ports cell of the tasks table. */
export function TaskPorts(props: ITaskPortsProps): JSX.Element {
  const { task } = props;
  const listed = Object.entries(task.ports ?? {})
    .map(([label, list]) => `${label}:${list.join(',')}`)
    .join(' ');
  const openable = openablePorts(props.jobId, task, props.url);
  return (
    <>
      <span className="jp-PAI-port-list">{listed || '—'}</span>
      {openable.map(p => (
        <button
          key={`${p.label}-${p.port}`}
          type="button"
          className="jp-mod-styled jp-PAI-link-button jp-PAI-port-open"
          data-label={p.label}
          data-port={p.port}
          title={`Open ${p.label} (port ${p.port}) of ${p.task} in a JupyterLab tab`}
          onClick={() => props.onOpen(p)}
        >
          {portCaption(p)}
        </button>
      ))}
    </>
  );
}

/** A DOM-safe widget id of a task port's tab. */
export function portWidgetId(p: ITaskPort): string {
  const raw = `${p.jobId}-${p.task}-${p.port}`;
  return `jupyter-pai-port-${raw.replace(/[^a-zA-Z0-9_-]/g, c => `_${c.charCodeAt(0).toString(16)}`)}`;
}

/**
 * A tab showing a task's port. The frame loads the port's proxy URL, which the
 * server answers with a signed link to the port; the app's pages run there in
 * an opaque origin (no `allow-same-origin`, here and in the server's CSP
 * sandbox), so they can neither read JupyterLab's cookies nor call the Jupyter
 * API as the user. No referrer: JupyterLab's URL may carry `?token=`.
 */
export function createPortTab(
  p: ITaskPort,
  jobName: string
): MainAreaWidget<IFrame> {
  const content = new IFrame({
    sandbox: [
      'allow-scripts',
      'allow-forms',
      'allow-popups',
      'allow-downloads',
      'allow-modals'
    ],
    referrerPolicy: 'no-referrer'
  });
  content.url = p.url;
  content.addClass('jp-PAI-port-frame');
  const widget = new MainAreaWidget({ content });
  widget.id = portWidgetId(p);
  widget.addClass('jp-PAI-port-tab');
  widget.title.label =
    p.label === TENSORBOARD_PORT
      ? `TensorBoard · ${jobName}`
      : `${p.label} · ${jobName} ${p.task}`;
  widget.title.caption = `${p.label} (port ${p.port}) of ${p.task}, job ${p.jobId}`;
  widget.title.closable = true;
  return widget;
}
