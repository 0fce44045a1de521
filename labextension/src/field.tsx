/** A labelled field of the launch form, with its errors underneath. */

import * as React from 'react';

import type { FieldError } from './restmodels';

let fieldCounter = 0;

/** An id unique in the page, kept for the component's life. */
function useFieldId(prefix: string): string {
  const ref = React.useRef<string>();
  if (!ref.current) {
    ref.current = `jp-PAI-${prefix}-${++fieldCounter}`;
  }
  return ref.current;
}

export interface IFieldProps {
  label: string;
  /** The protocol path of the field: its errors are those at this path. */
  path: string;
  errors: Map<string, FieldError[]>;
  hint?: React.ReactNode;
  /** The control, given its id and the id of the errors that describe it. */
  children: (id: string, describedBy: string | undefined) => React.ReactNode;
  className?: string;
}

/** A labelled field with its errors underneath (aria-describedby). */
export function Field(props: IFieldProps): JSX.Element {
  const id = useFieldId('field');
  const errors = props.errors.get(props.path) ?? [];
  const errorId = errors.length ? `${id}-errors` : undefined;
  return (
    <div
      className={`jp-PAI-field ${props.className ?? ''} ${errors.length ? 'jp-mod-invalid' : ''}`}
      data-path={props.path}
    >
      <label htmlFor={id}>{props.label}</label>
      {props.children(id, errorId)}
      {props.hint && <div className="jp-PAI-hint">{props.hint}</div>}
      {errors.length > 0 && (
        <ul className="jp-PAI-field-errors" id={errorId} role="alert">
          {errors.map((e, i) => (
            <li key={i}>{e.message}</li>
          ))}
        </ul>
      )}
    </div>
  );
}
