/** A task role's ports, typed as `label:count` pairs separated by commas or spaces. */

import * as React from 'react';

import type { RoleForm } from './jobform';
import { intValue } from './numbertext';

export function PortsInput(props: {
  id: string;
  describedBy?: string;
  ports: RoleForm['ports'];
  onChange: (ports: RoleForm['ports']) => void;
}): JSX.Element {
  // The text as typed: "http:1, " would not survive a round trip through ports.
  const [text, setText] = React.useState(
    props.ports.map(p => `${p.label}:${p.count}`).join(', ')
  );
  return (
    <input
      id={props.id}
      aria-describedby={props.describedBy}
      className="jp-mod-styled jp-PAI-input"
      placeholder="http:1, ssh:1"
      value={text}
      onChange={e => {
        setText(e.target.value);
        const ports = e.target.value
          .split(/[\s,]+/)
          .filter(Boolean)
          .map(pair => {
            const [label, count] = pair.split(':');
            return { label, count: count ? intValue(count, 1) : 1 };
          });
        props.onChange(ports);
      }}
    />
  );
}
