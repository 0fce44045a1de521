/** The launch form's toolbar: form or YAML, and Import, Export, New. */

import * as React from 'react';

import type { EditorMode } from './uselaunchform';

export interface ILaunchToolbarProps {
  mode: EditorMode;
  onMode: (mode: EditorMode) => void;
  onImport: (file: File) => void;
  onExport: () => void;
  onNew: () => void;
}

const MODES: Array<{ mode: EditorMode; label: string }> = [
  { mode: 'form', label: 'Form' },
  { mode: 'yaml', label: 'Edit as YAML' }
];

export function LaunchToolbar(props: ILaunchToolbarProps): JSX.Element {
  const fileInput = React.useRef<HTMLInputElement>(null);
  return (
    <div className="jp-PAI-toolbar" role="toolbar" aria-label="Launch form">
      <div className="jp-PAI-segmented" role="group" aria-label="Editor">
        {MODES.map(({ mode, label }) => (
          <button
            key={mode}
            type="button"
            className={`jp-mod-styled ${props.mode === mode ? 'jp-mod-active' : ''}`}
            aria-pressed={props.mode === mode}
            onClick={() => props.onMode(mode)}
          >
            {label}
          </button>
        ))}
      </div>
      <span className="jp-PAI-spacer" />
      <button
        type="button"
        className="jp-mod-styled jp-PAI-link-button"
        onClick={() => fileInput.current?.click()}
        title="Import an OpenPAI job file (YAML or JSON)"
      >
        Import
      </button>
      <button
        type="button"
        className="jp-mod-styled jp-PAI-link-button"
        onClick={props.onExport}
        title="Download the job as protocol v2 YAML"
      >
        Export
      </button>
      <button
        type="button"
        className="jp-mod-styled jp-PAI-link-button"
        onClick={props.onNew}
        title="Start over with a new job"
      >
        New
      </button>
      <input
        ref={fileInput}
        type="file"
        accept=".yaml,.yml,.json,application/yaml,application/json,text/yaml"
        hidden
        onChange={e => {
          const file = e.target.files?.[0];
          if (file) {
            props.onImport(file);
          }
          e.target.value = '';
        }}
      />
    </div>
  );
}
