/** A task role's GPU type: any type, or one of its virtual cluster's types. */

import * as React from 'react';

import { Field } from './field';
import { gpuTypeOptions, skuTypePath } from './gputypes';
import type { FieldError, VirtualCluster } from './restmodels';

export function GpuTypeSelect(props: {
  role: string;
  /** The role's type; '' for any type. */
  value: string;
  vc: VirtualCluster | undefined;
  errors: Map<string, FieldError[]>;
  onChange: (gpuType: string) => void;
}): JSX.Element {
  const options = gpuTypeOptions(props.vc, props.value);
  return (
    <Field
      label="GPU type"
      path={skuTypePath(props.role)}
      errors={props.errors}
      className="jp-PAI-gputype"
    >
      {(id, d) => (
        <select
          id={id}
          aria-describedby={d}
          className="jp-mod-styled jp-PAI-input"
          value={props.value}
          onChange={e => props.onChange(e.target.value)}
        >
          {options.map(o => (
            <option
              key={o.value}
              value={o.value}
              className={o.unlisted ? 'jp-PAI-gputype-unlisted' : undefined}
            >
              {o.label}
            </option>
          ))}
        </select>
      )}
    </Field>
  );
}
