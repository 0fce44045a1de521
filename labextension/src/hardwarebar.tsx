/** A bar of the hardware view, coloured as OpenPAI's hardware page colours it. */

import * as React from 'react';

/** How full a resource is, for its colour: OpenPAI's green, yellow, red. */
export function fullness(used: number, total: number): 'low' | 'mid' | 'high' {
  const ratio = total > 0 ? used / total : 0;
  return ratio >= 0.8 ? 'high' : ratio >= 0.5 ? 'mid' : 'low';
}

/** One resource of a node: a bar coloured by how full it is, and its figures. */
export function HardwareBar(props: {
  label: string;
  used: number;
  total: number;
  text: string;
}): JSX.Element {
  const { used, total } = props;
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  return (
    <div className="jp-PAI-hw-row" data-resource={props.label}>
      <span className="jp-PAI-hw-label">{props.label}</span>
      <span className="jp-PAI-hw-bar">
        <span
          className={`jp-PAI-hw-fill jp-PAI-hw-${fullness(used, total)}`}
          style={{ width: `${pct}%` }}
        />
      </span>
      <span className="jp-PAI-hw-text">{props.text}</span>
    </div>
  );
}
