/**
 * The launch form's fields: name, virtual cluster, image, task roles,
 * parameters, storages and scheduling.
 */

import * as React from 'react';

import { Field } from './field';
import { ImageField } from './imagefield';
import { InputField } from './inputfield';
import { totalGpus } from './jobform';
import { KeyValueRows } from './keyvaluerows';
import { NumberField } from './numberfield';
import { countValue } from './numbertext';
import type { PAIModel } from './panelstate';
import type { VirtualCluster } from './restmodels';
import { RoleEditor } from './roleeditor';
import { SectionErrors } from './sectionerrors';
import { StorageMounts } from './storagemounts';
import type { ILaunchForm } from './uselaunchform';

function vcLabel(vc: VirtualCluster): string {
  const queued = vc.queuedJobs ? `, ${vc.queuedJobs} waiting` : '';
  // OpenPAI's VC sharing: a borrower's capacity counts other VCs' idle GPUs; a
  // lender's own job takes lent GPUs back by preempting the borrower.
  const borrows = vc.mayBorrow
    ? ` (${vc.guaranteedGpus ?? 0} guaranteed, more borrowed while idle)`
    : '';
  const lent = vc.lentGpus
    ? `, ${vc.lentGpus} lent out (taken back for your job)`
    : '';
  return `${vc.name} — ${vc.free.gpu} of ${vc.capacity.gpu} GPUs free${borrows}${lent}${queued}`;
}

export function JobFormFields(props: {
  model: PAIModel;
  state: ILaunchForm;
}): JSX.Element {
  const { model, state } = props;
  const { form, vc, byField, update } = state;
  const vcs = model.virtualClusters;
  const gpus = totalGpus(form);
  const waitHint =
    vc && form.gang && gpus > vc.free.gpu && gpus <= vc.capacity.gpu
      ? `Needs ${gpus} GPU${gpus === 1 ? '' : 's'} at once; ${vc.free.gpu} free now — the job will wait in ${vc.name}'s queue.`
      : null;

  return (
    <div className="jp-PAI-form-fields">
      <InputField
        label="Job name"
        path="name"
        errors={byField}
        input={{
          value: form.name,
          onChange: e => update({ name: e.target.value })
        }}
      />

      <Field
        label="Virtual cluster"
        path="defaults.virtualCluster"
        errors={byField}
        hint={
          vc
            ? `${vc.used.gpu} used, ${vc.free.gpu} free of ${vc.capacity.gpu} GPUs; ${vc.runningJobs} running, ${vc.queuedJobs} waiting`
            : vcs.length
              ? null
              : (model.error ?? 'Loading virtual clusters…')
        }
      >
        {(id, d) => (
          <select
            id={id}
            aria-describedby={d}
            className="jp-mod-styled jp-PAI-input"
            value={form.virtualCluster}
            onChange={e => update({ virtualCluster: e.target.value })}
          >
            {!vc && (
              <option value={form.virtualCluster}>
                {form.virtualCluster || '(default)'}
              </option>
            )}
            {vcs.map(v => (
              <option key={v.name} value={v.name}>
                {vcLabel(v)}
              </option>
            ))}
          </select>
        )}
      </Field>

      <ImageField
        image={form.image}
        images={model.images}
        catalogue={model.imageChoices}
        custom={state.customImage}
        errors={byField}
        onPick={state.pickImage}
        onType={image => update({ image })}
      />

      <div className="jp-PAI-section-title">
        Task roles
        <span className="jp-PAI-muted">
          {' '}
          · {gpus} GPU{gpus === 1 ? '' : 's'} in all
        </span>
      </div>
      <SectionErrors errors={byField} path="taskRoles" />
      {form.roles.map((role, i) => (
        <RoleEditor
          key={i}
          role={role}
          index={i}
          vc={vc}
          errors={byField}
          canRemove={form.roles.length > 1}
          onChange={next =>
            update({ roles: form.roles.map((r, j) => (j === i ? next : r)) })
          }
          onRemove={() =>
            update({ roles: form.roles.filter((_, j) => j !== i) })
          }
        />
      ))}
      <button
        type="button"
        className="jp-mod-styled jp-PAI-link-button"
        onClick={state.addRole}
      >
        + Add task role
      </button>
      {waitHint && <div className="jp-PAI-warning">{waitHint}</div>}

      <div className="jp-PAI-section-title">Parameters</div>
      <div className="jp-PAI-hint">
        Used in commands as <code>{'<% $parameters.name %>'}</code>.
      </div>
      <SectionErrors errors={byField} path="parameters" />
      <KeyValueRows
        rows={form.parameters}
        onChange={parameters => update({ parameters })}
        keyCell={{
          label: (_, i) => `parameter ${i + 1} name`,
          text: p => p.key,
          set: (p, key) => ({ ...p, key }),
          placeholder: () => 'name'
        }}
        valueCell={{
          label: (_, i) => `parameter ${i + 1} value`,
          text: p => p.value,
          set: (p, value) => ({ ...p, value }),
          placeholder: () => 'value',
          grow: true
        }}
        removeLabel={p => `Remove parameter ${p.key}`}
        add={{ label: '+ Add parameter', row: () => ({ key: '', value: '' }) }}
      />

      <div className="jp-PAI-section-title">Storages</div>
      <SectionErrors errors={byField} path="extras.storages" />
      <StorageMounts
        mounts={form.storages}
        storages={model.storages}
        errors={byField}
        onChange={storages => update({ storages })}
      />

      <div className="jp-PAI-section-title">Scheduling</div>
      <div className="jp-PAI-field" data-path="extras.gangAllocation">
        <label className="jp-PAI-check jp-PAI-wrap">
          <input
            type="checkbox"
            checked={form.gang}
            onChange={e => update({ gang: e.target.checked })}
          />{' '}
          Gang scheduling: start all instances together or none
        </label>
        <SectionErrors errors={byField} path="extras.gangAllocation" />
      </div>
      <NumberField
        label="Job retries"
        path="jobRetryCount"
        errors={byField}
        value={form.jobRetryCount}
        min={0}
        parse={text => countValue(text)}
        onChange={jobRetryCount => update({ jobRetryCount })}
      />
    </div>
  );
}
