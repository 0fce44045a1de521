/** A labelled number input of the launch form. */

import * as React from 'react';

import { InputField } from './inputfield';
import { intValue } from './numbertext';
import type { FieldError } from './restmodels';

export interface INumberFieldProps {
  label: string;
  path: string;
  errors: Map<string, FieldError[]>;
  value: number;
  onChange: (value: number) => void;
  min?: number;
  max?: number;
  step?: number | 'any';
  /** Turns the input's text into the form's value (whole numbers by default). */
  parse?: (text: string) => number;
}

export function NumberField(props: INumberFieldProps): JSX.Element {
  const parse = props.parse ?? ((text: string) => intValue(text, 0));
  return (
    <InputField
      label={props.label}
      path={props.path}
      errors={props.errors}
      input={{
        type: 'number',
        min: props.min,
        max: props.max,
        step: props.step,
        className: 'jp-mod-styled jp-PAI-input jp-PAI-number',
        value: props.value,
        onChange: e => props.onChange(parse(e.target.value))
      }}
    />
  );
}
