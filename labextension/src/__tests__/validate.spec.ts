import {
  JobValidator,
  locateErrors,
  pointerToPath,
  validateYaml
} from '../validate';
import { isOpenPAIv1, jobFormat } from '../detectjobformat';
import { example, jobSchema } from './fixtures';

const validator = new JobValidator(jobSchema());

const GOOD = `protocolVersion: 2
name: mnist
type: job
prerequisites:
  - {name: img, type: dockerimage, uri: pytorch/pytorch:2.3}
taskRoles:
  worker:
    instances: 2
    dockerImage: img
    resourcePerInstance: {cpu: 4, memoryMB: 8192, gpu: 1}
    commands: [python train.py]
`;

describe('validating YAML against the server schema', () => {
  it('accepts a valid protocol v2 job', () => {
    expect(validateYaml(GOOD, validator)).toEqual({
      job: expect.objectContaining({ name: 'mnist' }),
      errors: []
    });
  });

  it('accepts protocolVersion "2" and a one-line command, as the server does', () => {
    const text = GOOD.replace(
      'protocolVersion: 2',
      'protocolVersion: "2"'
    ).replace('commands: [python train.py]', 'commands: python train.py');
    expect(validateYaml(text, validator).errors).toEqual([]);
  });

  it('accepts the short form', () => {
    const text =
      'name: quick\nimage: python:3.11\ncommand: python x.py\ngpus: 1\n';
    expect(validateYaml(text, validator).errors).toEqual([]);
  });

  it('names the field and its line', () => {
    const text = GOOD.replace('instances: 2', 'instances: 0').replace(
      'name: mnist',
      'name: "my job"'
    );
    const { errors } = validateYaml(text, validator);
    expect(errors).toEqual(
      expect.arrayContaining([
        { path: 'name', message: 'use only letters, digits, - and _', line: 2 },
        {
          path: 'taskRoles.worker.instances',
          message: 'must be >= 1',
          line: 8
        }
      ])
    );
  });

  it('reports a missing field at its parent', () => {
    const text = GOOD.replace('    commands: [python train.py]\n', '');
    const { errors } = validateYaml(text, validator);
    expect(errors).toEqual([
      { path: 'taskRoles.worker.commands', message: 'is required', line: 8 }
    ]);
  });

  it('says which role name is wrong', () => {
    const text = GOOD.replace('  worker:', '  2worker:').replace(
      'memoryMB: 8192',
      'memoryMB: lots'
    );
    const { errors } = validateYaml(text, validator);
    expect(errors.map(e => e.path)).toEqual(
      expect.arrayContaining([
        'taskRoles',
        'taskRoles.2worker.resourcePerInstance.memoryMB'
      ])
    );
    expect(errors.find(e => e.path === 'taskRoles')?.message).toMatch(
      /2worker/
    );
  });

  it('reports YAML syntax errors with their line and no schema noise', () => {
    const { job, errors } = validateYaml('name: a\ntaskRoles: [\n', validator);
    expect(job).toBeNull();
    expect(errors).toHaveLength(1);
    expect(errors[0].message).toMatch(/^YAML: /);
    expect(errors[0].line).toBeGreaterThanOrEqual(2);
  });

  it('rejects a document that is not a mapping', () => {
    expect(validateYaml('- a\n- b\n', validator).errors[0].message).toMatch(
      /mapping/
    );
  });

  it('locates server errors in the text', () => {
    expect(
      locateErrors(GOOD, [
        {
          path: 'taskRoles.worker.resourcePerInstance.gpu',
          message: 'too many'
        },
        { path: 'nowhere.at.all', message: 'x' }
      ])
    ).toEqual([
      {
        path: 'taskRoles.worker.resourcePerInstance.gpu',
        message: 'too many',
        line: 10
      },
      { path: 'nowhere.at.all', message: 'x', line: 1 }
    ]);
  });

  it('turns JSON pointers into dotted paths', () => {
    expect(pointerToPath('/taskRoles/a~1b/commands/0')).toBe(
      'taskRoles.a/b.commands.0'
    );
    expect(pointerToPath('')).toBe('');
  });
});

describe('OpenPAI v1 JSON jobs pasted into the YAML editor', () => {
  const V1 = example('openpai-v1-ps-worker.json');

  it('are told apart by shape, as the server does', () => {
    expect(jobFormat(JSON.parse(V1))).toBe('v1');
    expect(isOpenPAIv1({ jobName: 'x' })).toBe(true);
    expect(isOpenPAIv1({ taskRoles: [] })).toBe(true);
    expect(isOpenPAIv1({ protocolVersion: 2, jobName: 'x' })).toBe(false);
    expect(jobFormat({ taskRoles: { w: {} } })).toBe('v2');
    expect(jobFormat({ image: 'i', command: 'c' })).toBe('short');
    expect(jobFormat([])).toBeNull();
  });

  it('validate against the v1 schema, so they can be submitted as they are', () => {
    expect(validateYaml(V1, validator).errors).toEqual([]);
  });

  it('name the v1 field that cannot be converted, with its line', () => {
    const job = JSON.parse(V1);
    job.authFile = 'hdfs://creds';
    job.taskRoles[1].portList[0].beginAt = 5000;
    job.taskRoles[0].unknown = 1;
    delete job.image;
    const text = JSON.stringify(job, null, 2);
    const { errors } = validateYaml(text, validator);
    const line = (needle: string) =>
      text.split('\n').findIndex(l => l.includes(needle)) + 1;
    expect(errors).toEqual(
      expect.arrayContaining([
        { path: 'image', message: 'is required', line: 1 },
        {
          path: 'authFile',
          message: 'HDFS credentials cannot be converted',
          line: line('"authFile"')
        },
        {
          path: 'taskRoles.1.portList.0.beginAt',
          message: 'only 0 (any port) can be converted',
          line: line('"beginAt"')
        },
        {
          path: 'taskRoles.0.unknown',
          message: 'is not a known field',
          line: line('"unknown"')
        }
      ])
    );
    expect(errors).toHaveLength(4);
  });
});
