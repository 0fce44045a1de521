/**
 * The launch form: virtual cluster, image, task roles, parameters, storages,
 * gang; or the same job as protocol v2 YAML, validated as it is typed.
 */

import * as React from 'react';

import { JobFormFields } from './jobformfields';
import { LaunchToolbar } from './launchtoolbar';
import type { PAIModel } from './panelstate';
import type { JobDetail } from './restmodels';
import { useLaunchForm } from './uselaunchform';
import { YamlEditor } from './yamleditor';

export interface ILaunchFormProps {
  model: PAIModel;
  /** Called with the created job (to open its detail). */
  onSubmitted?: (job: JobDetail) => void;
}

export function LaunchForm(props: ILaunchFormProps): JSX.Element {
  const { model } = props;
  const state = useLaunchForm(model, props.onSubmitted);
  const { message, unmatched } = state;

  return (
    <form className="jp-PAI-launch" onSubmit={state.submit} noValidate>
      <LaunchToolbar
        mode={state.mode}
        onMode={state.switchMode}
        onImport={file => void state.importFile(file)}
        onExport={state.exportFile}
        onNew={() => model.requestForm(null)}
      />

      {message && (
        <div className="jp-PAI-error" role="alert">
          {message}
          {unmatched.length > 0 && (
            <ul>
              {unmatched.map((e, i) => (
                <li key={i}>
                  {e.path ? <code>{e.path}</code> : null}
                  {e.path ? ': ' : ''}
                  {e.message}
                </li>
              ))}
            </ul>
          )}
        </div>
      )}

      {state.mode === 'yaml' ? (
        <YamlEditor
          yaml={state.yaml}
          errors={state.yamlErrors}
          format={state.yamlFormat}
          validated={!!state.validator}
          onChange={state.setYaml}
        />
      ) : (
        // A new key when another job is loaded: its fields start afresh.
        <JobFormFields key={state.formKey} model={model} state={state} />
      )}

      <div className="jp-PAI-submit-row">
        <button
          type="submit"
          className="jp-mod-styled jp-mod-accept jp-PAI-submit"
          disabled={state.submitting}
        >
          {state.submitting ? 'Submitting…' : 'Submit job'}
        </button>
      </div>
    </form>
  );
}
