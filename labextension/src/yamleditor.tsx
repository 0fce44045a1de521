/** The job as YAML text, with its problems listed underneath, each linked to its line. */

import * as React from 'react';

import { displayPath } from './jobfile';
import type { JobFormat } from './restmodels';
import type { LocatedError } from './validate';

export interface IYamlEditorProps {
  yaml: string;
  errors: LocatedError[];
  /** The form the text is written in, when it is a valid job. */
  format: JobFormat | null;
  /** Whether the text is checked against the schema (else only parsed). */
  validated: boolean;
  onChange: (text: string) => void;
}

/** Select a line of the text area and scroll it into view. */
function goToLine(area: HTMLTextAreaElement | null, line: number | undefined) {
  if (!area || !line) {
    return;
  }
  const lines = area.value.split('\n');
  const start = lines.slice(0, line - 1).reduce((n, l) => n + l.length + 1, 0);
  area.focus();
  area.setSelectionRange(start, start + (lines[line - 1]?.length ?? 0));
  const lineHeight = area.scrollHeight / Math.max(lines.length, 1);
  area.scrollTop = Math.max(0, (line - 3) * lineHeight);
}

function validText(props: IYamlEditorProps): string {
  if (!props.validated) {
    return 'YAML is well formed.';
  }
  switch (props.format) {
    case 'v1':
      return 'Valid OpenPAI v1 job: converted to protocol v2 when submitted.';
    case 'short':
      return 'Valid short-form job.';
    default:
      return 'Valid protocol v2 job.';
  }
}

export function YamlEditor(props: IYamlEditorProps): JSX.Element {
  const area = React.useRef<HTMLTextAreaElement>(null);
  const { errors } = props;
  return (
    <div className="jp-PAI-yaml">
      <label htmlFor="jp-PAI-yaml-text" className="jp-PAI-sr-only">
        Job as protocol v2 YAML
      </label>
      <textarea
        id="jp-PAI-yaml-text"
        ref={area}
        className="jp-mod-styled jp-PAI-input jp-PAI-code jp-PAI-yaml-text"
        spellCheck={false}
        value={props.yaml}
        aria-invalid={errors.length > 0}
        aria-describedby="jp-PAI-yaml-errors"
        onChange={e => props.onChange(e.target.value)}
      />
      <div id="jp-PAI-yaml-errors" aria-live="polite">
        {errors.length === 0 ? (
          <div className="jp-PAI-ok">{validText(props)}</div>
        ) : (
          <ul className="jp-PAI-field-errors jp-PAI-yaml-errors">
            {errors.map((e, i) => (
              <li key={i}>
                <button
                  type="button"
                  className="jp-PAI-link-button"
                  onClick={() => goToLine(area.current, e.line)}
                  disabled={!e.line}
                >
                  {e.line ? `line ${e.line}` : 'job'}
                </button>{' '}
                {e.path ? <code>{displayPath(e.path)}</code> : null}
                {e.path ? ': ' : ''}
                {e.message}
              </li>
            ))}
          </ul>
        )}
      </div>
    </div>
  );
}
