/** Errors about a whole section of the launch form (a path with no one field). */

import * as React from 'react';

import type { FieldError } from './restmodels';

export function SectionErrors(props: {
  errors: Map<string, FieldError[]>;
  path: string;
}): JSX.Element {
  return (
    <>
      {(props.errors.get(props.path) ?? []).map((e, i) => (
        <div key={i} className="jp-PAI-field-errors" role="alert">
          {e.message}
        </div>
      ))}
    </>
  );
}
