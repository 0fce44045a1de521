/**
 * "Open TensorBoard" beside a task that holds a port labelled `tensorboard`
 * (OpenPAI's tensorboard runtime plugin, or a port declared by hand).
 */

import * as React from 'react';

import type { TaskStatus } from './models';

/** The port label OpenPAI's tensorboard plugin gives its port. */
export const TENSORBOARD_PORT = 'tensorboard';

/** Where a task's TensorBoard can be opened from the browser, if anywhere. */
export type TensorBoardTarget =
  | { kind: 'link'; port: number; href: string }
  | { kind: 'unreachable'; port: number };

/**
 * A running task's TensorBoard. On the local backend the task runs on the
 * Jupyter server's machine, so it is at the host name the browser reached
 * JupyterLab by. A Kubernetes pod's port is not reachable from the browser
 * until the server proxies it, so only the port is told. Nothing while the
 * backend is not known yet, or once the task (and its TensorBoard) ended.
 */
export function tensorboardTarget(
  task: TaskStatus,
  backend: string | null | undefined,
  hostname: string
): TensorBoardTarget | null {
  const port = task.ports?.[TENSORBOARD_PORT]?.[0];
  if (port === undefined || task.state !== 'RUNNING' || !backend) {
    return null;
  }
  if (backend === 'local') {
    return { kind: 'link', port, href: `http://${hostname}:${port}/` };
  }
  return { kind: 'unreachable', port };
}

export interface ITensorBoardLinkProps {
  task: TaskStatus;
  /** `Info.backend`: `local` or `kubernetes`. */
  backend: string | null | undefined;
  /** The host name JupyterLab was reached by (default: the page's). */
  hostname?: string;
}

export function TensorBoardLink(
  props: ITensorBoardLinkProps
): JSX.Element | null {
  const { task } = props;
  const target = tensorboardTarget(
    task,
    props.backend,
    props.hostname ?? window.location.hostname
  );
  if (!target) {
    return null;
  }
  if (target.kind === 'link') {
    return (
      <a
        className="jp-PAI-tensorboard-link"
        href={target.href}
        target="_blank"
        rel="noopener"
        title={`TensorBoard of ${task.role}-${task.index}, port ${target.port}`}
      >
        Open TensorBoard
      </a>
    );
  }
  return (
    <span
      className="jp-PAI-tensorboard-note jp-PAI-muted"
      title="The browser cannot reach a pod's port yet; a proxy through the Jupyter server is planned."
    >
      TensorBoard on pod port {target.port}: not reachable from the browser yet
    </span>
  );
}
