/**
 * The launch form's YAML text and its problems: checked against the schema a
 * moment after each edit, or the server's errors about that very text.
 */

import * as React from 'react';

import { jobFormat } from './detectjobformat';
import type { FieldError, JobFormat } from './restmodels';
import {
  locateErrors,
  validateYaml,
  type JobValidator,
  type LocatedError
} from './validate';

export interface IYamlText {
  yaml: string;
  setYaml: (text: string) => void;
  errors: LocatedError[];
  setErrors: (errors: LocatedError[]) => void;
  /** The form the text is written in, once it parses as a job. */
  format: JobFormat | null;
  /** Show `text` with the server's errors about it at their lines. */
  showServerErrors: (text: string, errors: FieldError[]) => void;
}

/** `active`: the YAML editor is shown (the text is checked only then). */
export function useYamlText(
  validator: JobValidator | null,
  active: boolean
): IYamlText {
  const [yaml, setYaml] = React.useState('');
  const [errors, setErrors] = React.useState<LocatedError[]>([]);
  const [format, setFormat] = React.useState<JobFormat | null>(null);
  // The server's errors about this exact text (a v1 file it cannot convert):
  // kept until the text is edited, not replaced by the schema's.
  const serverErrorsFor = React.useRef<string | null>(null);

  // Validate the YAML as it is typed (debounced).
  React.useEffect(() => {
    if (!active) {
      return;
    }
    const timer = setTimeout(() => {
      const result = validateYaml(yaml, validator);
      setFormat(jobFormat(result.job));
      if (serverErrorsFor.current === yaml) {
        return;
      }
      serverErrorsFor.current = null;
      setErrors(result.errors);
    }, 150);
    return () => clearTimeout(timer);
  }, [yaml, active, validator]);

  const showServerErrors = (text: string, fieldErrors: FieldError[]) => {
    serverErrorsFor.current = text;
    setYaml(text);
    setErrors(locateErrors(text, fieldErrors));
  };

  return { yaml, setYaml, errors, setErrors, format, showServerErrors };
}
