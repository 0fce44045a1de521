/**
 * Buttons for a task's earlier attempts (retries, and attempts a scheduler
 * preempted), each showing that attempt's log instead of the current one's.
 */

import * as React from 'react';

import type { TaskStatus } from './restmodels';

export interface IAttemptLinksProps {
  task: TaskStatus;
  /** The earlier attempt shown now for this task, if one is. */
  shown: number | undefined;
  onShow: (attempt: number) => void;
}

export function AttemptLinks(props: IAttemptLinksProps): JSX.Element | null {
  const { task, shown, onShow } = props;
  if (!task.retries) {
    return null;
  }
  const earlier = Array.from({ length: task.retries }, (_, i) => i);
  return (
    <span className="jp-PAI-attempts">
      {earlier.map(attempt => (
        <button
          key={attempt}
          type="button"
          className="jp-mod-styled jp-PAI-link-button"
          aria-pressed={shown === attempt}
          title={`Log of attempt ${attempt} of ${task.role}-${task.index}`}
          aria-label={`Log of attempt ${attempt} of ${task.role}-${task.index}`}
          onClick={() => onShow(attempt)}
        >
          {`#${attempt}`}
        </button>
      ))}
    </span>
  );
}
