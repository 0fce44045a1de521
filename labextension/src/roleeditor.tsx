/** One task role of the launch form: name, instances, resources, GPU type, command, ports. */

import * as React from 'react';

import { Field } from './field';
import { GpuTypeSelect } from './gputypeselect';
import { showsGpuType } from './gputypes';
import { InputField } from './inputfield';
import type { RoleForm } from './jobform';
import { NumberField } from './numberfield';
import { countValue, floatValue, intValue } from './numbertext';
import { PortsInput } from './portsinput';
import { RemoveButton } from './removebutton';
import type { FieldError, VirtualCluster } from './restmodels';

export interface IRoleEditorProps {
  role: RoleForm;
  index: number;
  canRemove: boolean;
  /** The job's virtual cluster: GPUs per instance stay within its capacity. */
  vc: VirtualCluster | undefined;
  errors: Map<string, FieldError[]>;
  onChange: (role: RoleForm) => void;
  onRemove: () => void;
}

/** A number field of a role: the role's `field`, at `path` below the role in the protocol. */
interface IRoleNumber {
  field: 'instances' | 'gpu' | 'cpu' | 'memoryMB' | 'taskRetryCount';
  label: string;
  path: string;
  min: number;
  step?: number | 'any';
  /** At most as many as the virtual cluster's GPUs. */
  upToVcGpus?: boolean;
  /** The field's value from the input's text, at most `max` where given. */
  parse: (text: string, max?: number) => number;
}

const RESOURCES: IRoleNumber[] = [
  {
    field: 'instances',
    label: 'Instances',
    path: 'instances',
    min: 1,
    parse: text => intValue(text, 1)
  },
  {
    field: 'gpu',
    label: 'GPUs / instance',
    path: 'resourcePerInstance.gpu',
    min: 0,
    upToVcGpus: true,
    parse: (text, max) => countValue(text, max)
  },
  {
    field: 'cpu',
    label: 'CPUs',
    path: 'resourcePerInstance.cpu',
    min: 0,
    step: 'any',
    parse: text => floatValue(text, 0)
  },
  {
    field: 'memoryMB',
    label: 'Memory (MB)',
    path: 'resourcePerInstance.memoryMB',
    min: 0,
    step: 1024,
    parse: text => intValue(text, 0)
  }
];

const RETRIES: IRoleNumber = {
  field: 'taskRetryCount',
  label: 'Task retries',
  path: 'taskRetryCount',
  min: 0,
  parse: text => countValue(text)
};

export function RoleEditor(props: IRoleEditorProps): JSX.Element {
  const { role, vc, errors } = props;
  const at = `taskRoles.${role.name}`;
  const set = (patch: Partial<RoleForm>) =>
    props.onChange({ ...role, ...patch });
  const maxGpu = vc ? vc.capacity.gpu : undefined;
  const numberField = (f: IRoleNumber) => {
    const max = f.upToVcGpus ? maxGpu : undefined;
    return (
      <NumberField
        key={f.field}
        label={f.label}
        path={`${at}.${f.path}`}
        errors={errors}
        value={role[f.field]}
        min={f.min}
        max={max}
        step={f.step}
        parse={text => f.parse(text, max)}
        onChange={value => set({ [f.field]: value })}
      />
    );
  };
  return (
    <fieldset className="jp-PAI-role" aria-label={`task role ${role.name}`}>
      <legend>Task role {props.index + 1}</legend>
      <div className="jp-PAI-row">
        <InputField
          label="Role name"
          path={at}
          errors={errors}
          className="jp-PAI-grow"
          input={{
            value: role.name,
            onChange: e => set({ name: e.target.value })
          }}
        />
        {props.canRemove && (
          <RemoveButton
            label={`Remove role ${role.name}`}
            titled
            onClick={props.onRemove}
          />
        )}
      </div>
      <div className="jp-PAI-row">{RESOURCES.map(numberField)}</div>
      {showsGpuType(vc, role.gpuType) && (
        <GpuTypeSelect
          role={role.name}
          value={role.gpuType}
          vc={vc}
          errors={errors}
          onChange={gpuType => set({ gpuType })}
        />
      )}
      <Field
        label="Command (one shell line per line)"
        path={`${at}.commands`}
        errors={errors}
      >
        {(id, d) => (
          <textarea
            id={id}
            aria-describedby={d}
            className="jp-mod-styled jp-PAI-input jp-PAI-code"
            rows={3}
            spellCheck={false}
            placeholder="torchrun --nproc_per_node=$PAI_RESOURCE_GPU train.py"
            value={role.command}
            onChange={e => set({ command: e.target.value })}
          />
        )}
      </Field>
      <div className="jp-PAI-row">
        <Field
          label="Ports"
          path={`${at}.resourcePerInstance.ports`}
          errors={errors}
          className="jp-PAI-grow"
        >
          {(id, d) => (
            <PortsInput
              id={id}
              describedBy={d}
              ports={role.ports}
              onChange={ports => set({ ports })}
            />
          )}
        </Field>
        {numberField(RETRIES)}
      </div>
    </fieldset>
  );
}
