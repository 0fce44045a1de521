/**
 * A role's GPU type through the form: form → YAML → form keeps it, "Any type"
 * removes it and only what it added, the rest of `extras` stays, and the
 * select's choices name each type's free GPUs.
 */
import { assignErrors } from '../formchecks';
import {
  gpuTypeFieldPaths,
  gpuTypeOptions,
  skuTypePath,
  specGpuType,
  writeGpuTypes
} from '../gputypes';
import {
  formToSpec,
  newJobForm,
  specToForm,
  specToYaml,
  yamlToSpec,
  type JobForm
} from '../jobform';
import {
  TYPED_VC as TYPED,
  UNKNOWN,
  UNTYPED_VC as UNTYPED
} from './gputypefixtures';

const WITH_EXTRAS = `
protocolVersion: 2
name: typed
type: job
prerequisites:
  - {type: dockerimage, name: image, uri: 'python:3.11'}
taskRoles:
  trainer:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 4, memoryMB: 8192, gpu: 2}
    commands: [python train.py]
  ps:
    instances: 1
    dockerImage: image
    resourcePerInstance: {cpu: 2, memoryMB: 4096, gpu: 0}
    commands: [python ps.py]
extras:
  gangAllocation: true
  com.microsoft.pai.runtimeplugin: [{plugin: ssh}]
  hivedScheduler:
    jobPriorityClass: prod
    taskRoles:
      trainer: {skuType: H100-80GB, affinityGroupName: pair}
`;

/** The form, its YAML, and the form read back from that YAML. */
function roundTrip(form: JobForm): { yaml: string; back: JobForm } {
  const yaml = specToYaml(formToSpec(form));
  return { yaml, back: specToForm(yamlToSpec(yaml)) };
}

describe('GPU type in the job', () => {
  it('writes the chosen type as the role skuType and reads it back', () => {
    const form = newJobForm({ virtualCluster: 'default', image: 'python:3' });
    form.roles[0].gpuType = 'A100-40GB';
    const { yaml, back } = roundTrip(form);
    expect(yamlToSpec(yaml).extras.hivedScheduler).toEqual({
      taskRoles: { worker: { skuType: 'A100-40GB' } }
    });
    expect(back.roles[0].gpuType).toBe('A100-40GB');
    expect(formToSpec(back)).toEqual(formToSpec(form));
  });

  it('writes nothing about types for "Any type"', () => {
    const form = newJobForm({ virtualCluster: 'default', image: 'python:3' });
    const spec = formToSpec(form);
    expect(spec.extras).toEqual({ gangAllocation: true });
    expect(specToYaml(spec)).not.toContain('hivedScheduler');
    expect(roundTrip(form).back.roles[0].gpuType).toBe('');
  });

  it('opens a job with a skuType chosen, and keeps the rest of extras', () => {
    const form = specToForm(yamlToSpec(WITH_EXTRAS));
    expect(form.roles.map(r => [r.name, r.gpuType])).toEqual([
      ['trainer', 'H100-80GB'],
      ['ps', '']
    ]);
    form.roles[0].gpuType = 'A100-40GB';
    const { yaml, back } = roundTrip(form);
    const extras = yamlToSpec(yaml).extras;
    expect(extras['com.microsoft.pai.runtimeplugin']).toEqual([
      { plugin: 'ssh' }
    ]);
    expect(extras.hivedScheduler).toEqual({
      jobPriorityClass: 'prod',
      taskRoles: {
        trainer: { skuType: 'A100-40GB', affinityGroupName: 'pair' }
      }
    });
    expect(back.roles[0].gpuType).toBe('A100-40GB');
  });

  it('"Any type" removes only the skuType where the job had more', () => {
    const form = specToForm(yamlToSpec(WITH_EXTRAS));
    form.roles[0].gpuType = '';
    const extras = yamlToSpec(roundTrip(form).yaml).extras;
    expect(extras.hivedScheduler).toEqual({
      jobPriorityClass: 'prod',
      taskRoles: { trainer: { affinityGroupName: 'pair' } }
    });
    expect(extras.gangAllocation).toBe(true);
    expect(extras['com.microsoft.pai.runtimeplugin']).toBeDefined();
  });

  it('"Any type" removes the hivedScheduler section it emptied', () => {
    const form = newJobForm({ virtualCluster: 'default', image: 'python:3' });
    form.roles[0].gpuType = 'H100-80GB';
    const typed = specToForm(formToSpec(form));
    typed.roles[0].gpuType = '';
    const spec = formToSpec(typed);
    expect(spec.extras).toEqual({ gangAllocation: true });
    expect(spec.extras.hivedScheduler).toBeUndefined();
  });

  it('moves the type with a renamed role and drops a removed role`s', () => {
    const form = specToForm(yamlToSpec(WITH_EXTRAS));
    form.roles[0].name = 'learner';
    form.roles[1].gpuType = 'A100-40GB';
    let spec = formToSpec(form);
    expect(spec.extras.hivedScheduler.taskRoles).toEqual({
      trainer: { affinityGroupName: 'pair' },
      learner: { skuType: 'H100-80GB' },
      ps: { skuType: 'A100-40GB' }
    });
    const fewer = specToForm(spec);
    fewer.roles = fewer.roles.filter(r => r.name !== 'ps');
    spec = formToSpec(fewer);
    expect(specGpuType(spec, 'ps')).toBe('');
    expect(spec.extras.hivedScheduler.taskRoles.ps).toBeUndefined();
  });

  it('leaves a spec without types as it was', () => {
    const spec: Record<string, any> = { taskRoles: { w: {} } };
    writeGpuTypes(spec, [{ role: 'w', gpuType: '' }]);
    expect(spec).toEqual({ taskRoles: { w: {} } });
    const empty: Record<string, any> = { extras: { hivedScheduler: {} } };
    writeGpuTypes(empty, [{ role: 'w', gpuType: '' }]);
    expect(empty).toEqual({ extras: { hivedScheduler: {} } });
  });
});

describe('GPU type choices', () => {
  it('offers any type, then each type with its free GPUs', () => {
    expect(gpuTypeOptions(TYPED, '')).toEqual([
      { value: '', label: 'Any type' },
      { value: 'A100-40GB', label: 'A100-40GB — 12 of 16 free' },
      { value: 'H100-80GB', label: 'H100-80GB — 16 of 16 free' }
    ]);
  });

  it('never offers the unlabelled GPUs, and no select where they are all', () => {
    const mixed = { ...TYPED, gpuTypes: [...TYPED.gpuTypes!, UNKNOWN] };
    expect(gpuTypeOptions(mixed, '').map(o => o.value)).toEqual([
      '',
      'A100-40GB',
      'H100-80GB'
    ]);
    const unlabelled = { ...TYPED, gpuTypes: [UNKNOWN] };
    expect(gpuTypeFieldPaths([{ name: 'w', gpuType: '' }], unlabelled)).toEqual(
      []
    );
  });

  it('shows a type the VC does not list as such', () => {
    const options = gpuTypeOptions(UNTYPED, 'H100-80GB');
    expect(options.map(o => o.label)).toEqual([
      'Any type',
      'H100-80GB (not in this VC)'
    ]);
    expect(gpuTypeOptions(TYPED, 'T4-SHARED').pop()).toEqual({
      value: 'T4-SHARED',
      label: 'T4-SHARED (not in this VC)',
      unlisted: true
    });
  });

  it('puts a server error at the skuType on the role`s select', () => {
    const roles = [
      { name: 'trainer', gpuType: 'A100-40GB' },
      { name: 'ps', gpuType: '' }
    ];
    const error = {
      path: 'extras.hivedScheduler.taskRoles.trainer.skuType',
      message: 'no such GPU type'
    };
    const { byField, unmatched } = assignErrors(
      [error],
      gpuTypeFieldPaths(roles, TYPED)
    );
    expect(unmatched).toEqual([]);
    expect(byField.get(skuTypePath('trainer'))).toEqual([error]);
    // No select on an untyped VC for a role without a type: nothing to land on.
    expect(gpuTypeFieldPaths(roles, UNTYPED)).toEqual([skuTypePath('trainer')]);
    expect(gpuTypeFieldPaths([{ name: 'ps', gpuType: '' }], undefined)).toEqual(
      []
    );
  });
});
