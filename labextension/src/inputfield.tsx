/** A labelled input of the launch form: text by default. */

import * as React from 'react';

import { Field, type IFieldProps } from './field';

export interface IInputFieldProps extends Omit<IFieldProps, 'children'> {
  /** The input's attributes; its class is `jp-mod-styled jp-PAI-input` unless given. */
  input: React.InputHTMLAttributes<HTMLInputElement>;
}

export function InputField(props: IInputFieldProps): JSX.Element {
  const { input, ...field } = props;
  return (
    <Field {...field}>
      {(id, d) => (
        <input
          {...input}
          id={id}
          aria-describedby={d}
          className={input.className ?? 'jp-mod-styled jp-PAI-input'}
        />
      )}
    </Field>
  );
}
