/** A job's events (the scheduler's, the tasks'); warnings stand out. */

import * as React from 'react';

import { formatTime, parseTime } from './displayformat';
import type { JobEvent } from './restmodels';

export function JobEvents(props: { events: JobEvent[] }): JSX.Element {
  if (props.events.length === 0) {
    return <div className="jp-PAI-empty">No events.</div>;
  }
  return (
    <ol className="jp-PAI-events">
      {props.events.map((e, i) => (
        <li
          key={i}
          className={e.type === 'Warning' ? 'jp-PAI-event-warning' : ''}
        >
          <time dateTime={e.time} title={parseTime(e.time)?.toString()}>
            {formatTime(e.time)}
          </time>{' '}
          <span className="jp-PAI-muted">{e.source}</span>{' '}
          <strong>{e.reason}</strong> {e.message}
        </li>
      ))}
    </ol>
  );
}
