import { assignErrors, checkForm, formFieldPaths } from '../formchecks';
import {
  formToSpec,
  newJobForm,
  specToForm,
  specToYaml,
  totalGpus,
  uniqueRoleName,
  yamlToSpec
} from '../jobform';
import type { VirtualCluster } from '../restmodels';
import { JobValidator } from '../validate';
import { example, jobSchema } from './fixtures';

const TF = `
protocolVersion: 2
name: tf_ps_worker
type: job
prerequisites:
  - {type: dockerimage, name: tf_img, uri: 'openpai/standard:python_3.6-tensorflow_1.15.0-gpu'}
parameters: {model: resnet20}
secrets: {token: s3cret}
taskRoles:
  worker:
    instances: 2
    dockerImage: tf_img
    resourcePerInstance: {cpu: 4, memoryMB: 16384, gpu: 2}
    commands:
      - python train.py --model=<% $parameters.model %>
  ps:
    instances: 1
    completion: {minSucceededInstances: -1}
    dockerImage: tf_img
    resourcePerInstance: {cpu: 2, memoryMB: 8192, gpu: 0, ports: {grpc: 1}}
    commands: python ps.py
defaults: {virtualCluster: research}
extras:
  gangAllocation: true
  storages: [{name: team, mountPath: /mnt/team}]
  com.microsoft.pai.runtimeplugin: [{plugin: ssh}]
`;

const VC: VirtualCluster = {
  name: 'research',
  capacity: { gpu: 8, cpu: 64, memoryMB: 1 << 18 },
  used: { gpu: 6, cpu: 0, memoryMB: 0 },
  free: { gpu: 2, cpu: 64, memoryMB: 1 << 18 },
  runningJobs: 1,
  queuedJobs: 0,
  queued: { gpu: 0, cpu: 0, memoryMB: 0 }
};

describe('the launch form model', () => {
  it('reads an OpenPAI job into the form', () => {
    const form = specToForm(yamlToSpec(TF));
    expect(form.name).toBe('tf_ps_worker');
    expect(form.virtualCluster).toBe('research');
    expect(form.image).toBe(
      'openpai/standard:python_3.6-tensorflow_1.15.0-gpu'
    );
    expect(form.roles.map(r => [r.name, r.instances, r.gpu])).toEqual([
      ['worker', 2, 2],
      ['ps', 1, 0]
    ]);
    expect(form.roles[1].command).toBe('python ps.py');
    expect(form.roles[1].ports).toEqual([{ label: 'grpc', count: 1 }]);
    expect(form.parameters).toEqual([{ key: 'model', value: 'resnet20' }]);
    expect(form.storages).toEqual([
      { name: 'team', mountPath: '/mnt/team', readOnly: false }
    ]);
    expect(form.gang).toBe(true);
    expect(totalGpus(form)).toBe(4);
  });

  it('keeps what the form does not show when writing the spec back', () => {
    const form = specToForm(yamlToSpec(TF));
    form.roles[0].gpu = 1;
    form.gang = false;
    const spec = formToSpec(form);
    expect(spec.secrets).toEqual({ token: 's3cret' });
    expect(spec.taskRoles.ps.completion).toEqual({ minSucceededInstances: -1 });
    expect(spec.extras['com.microsoft.pai.runtimeplugin']).toEqual([
      { plugin: 'ssh' }
    ]);
    expect(spec.taskRoles.worker.resourcePerInstance.gpu).toBe(1);
    expect(spec.taskRoles.worker.dockerImage).toBe('tf_img');
    expect(spec.prerequisites).toHaveLength(1);
    expect(spec.extras.gangAllocation).toBe(false);
    expect(spec.taskRoles.ps.commands).toEqual(['python ps.py']);
    expect(Object.keys(spec).slice(0, 3)).toEqual([
      'protocolVersion',
      'name',
      'type'
    ]);
  });

  it('round-trips through YAML', () => {
    const form = specToForm(yamlToSpec(TF));
    const again = specToForm(yamlToSpec(specToYaml(formToSpec(form))));
    expect({ ...again, base: null }).toEqual({ ...form, base: null });
  });

  it('makes a new job that the server schema accepts', () => {
    const form = newJobForm({ virtualCluster: 'research', image: 'pytorch:2' });
    form.roles[0].command = 'python train.py\n\n  torchrun x.py  ';
    form.parameters = [{ key: 'lr', value: '0.01' }];
    const spec = formToSpec(form);
    expect(spec.taskRoles.worker.commands).toEqual([
      'python train.py',
      '  torchrun x.py'
    ]);
    expect(spec.parameters).toEqual({ lr: 0.01 });
    expect(spec.prerequisites).toEqual([
      { name: 'image', type: 'dockerimage', uri: 'pytorch:2' }
    ]);
    expect(new JobValidator(jobSchema()).validate(spec)).toEqual([]);
  });

  it('reads the example job files', () => {
    for (const name of [
      'tensorflow-ps-worker.yaml',
      'pytorch-ddp-torchrun.yaml',
      'cpu-only.yaml'
    ]) {
      const spec = yamlToSpec(example(name));
      const form = specToForm(spec);
      expect(form.roles.length).toBeGreaterThan(0);
      expect(new JobValidator(jobSchema()).validate(formToSpec(form))).toEqual(
        []
      );
    }
  });

  it('checks fields before asking the server', () => {
    const form = newJobForm({ virtualCluster: 'research', image: '' });
    form.name = 'bad name';
    form.roles[0].gpu = 9;
    form.roles.push({ ...form.roles[0], name: '2nd', gpu: 1, command: 'x' });
    form.storages = [{ name: 'team', mountPath: 'relative', readOnly: false }];
    const paths = checkForm(form, VC).map(e => e.path);
    expect(paths).toEqual(
      expect.arrayContaining([
        'name',
        'prerequisites',
        'taskRoles.worker.resourcePerInstance.gpu',
        'taskRoles.worker.commands',
        'taskRoles.2nd',
        'defaults.virtualCluster',
        'extras.storages.0.mountPath'
      ])
    );
  });

  it('names new roles uniquely', () => {
    const form = newJobForm();
    expect(uniqueRoleName(form)).toBe('worker_1');
    expect(uniqueRoleName(form, 'ps')).toBe('ps');
  });
});

describe('matching server errors to form fields', () => {
  it('puts each error on the most specific field', () => {
    const form = specToForm(yamlToSpec(TF));
    const { byField, unmatched } = assignErrors(
      [
        { path: 'name', message: 'is already used' },
        { path: 'taskRoles.worker.commands.0', message: 'empty command' },
        {
          path: 'taskRoles.worker.completion.minFailedInstances',
          message: 'x'
        },
        { path: '/taskRoles/ps/resourcePerInstance/gpu', message: 'too many' },
        { path: 'extras.storages.0.name', message: "no storage 'team'" },
        { path: 'prerequisites.0.uri', message: 'needs a uri' },
        { path: 'secrets.token', message: 'odd' },
        { path: '', message: 'general' }
      ],
      formFieldPaths(form)
    );
    expect(byField.get('name')?.[0].message).toBe('is already used');
    expect(byField.get('taskRoles.worker.commands')?.[0].message).toBe(
      'empty command'
    );
    // No field for completion: the role's own field takes it.
    expect(byField.get('taskRoles.worker')?.[0].message).toBe('x');
    expect(
      byField.get('taskRoles.ps.resourcePerInstance.gpu')?.[0].message
    ).toBe('too many');
    expect(byField.get('extras.storages.0.name')).toHaveLength(1);
    expect(byField.get('prerequisites')).toHaveLength(1);
    expect(unmatched.map(e => e.message)).toEqual(['odd', 'general']);
  });
});
