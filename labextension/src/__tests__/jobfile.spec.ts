import { JOB_FILE, jobFileToForm } from '../jobfile';
import { example } from './fixtures';

describe('opening a job file from the file browser', () => {
  it('offers YAML and JSON files only', () => {
    expect(JOB_FILE.test('jobs/train.yaml')).toBe(true);
    expect(JOB_FILE.test('train.YML')).toBe(true);
    expect(JOB_FILE.test('train.json')).toBe(true);
    expect(JOB_FILE.test('train.py')).toBe(false);
  });

  it('loads a protocol-v2 example into the form', () => {
    const form = jobFileToForm(
      'examples/tensorflow-ps-worker.yaml',
      example('tensorflow-ps-worker.yaml')
    );
    expect(form.name).toBe('tf_ps_worker');
    expect(form.roles.map(r => r.name)).toEqual(['worker', 'ps']);
    expect(form.roles[0].instances).toBe(2);
  });

  it('reads JSON files as JSON', () => {
    const text = JSON.stringify({
      protocolVersion: 2,
      name: 'from-json',
      type: 'job',
      taskRoles: { w: { instances: 3, commands: ['echo hi'] } }
    });
    const form = jobFileToForm('job.json', text);
    expect(form.name).toBe('from-json');
    expect(form.roles[0].instances).toBe(3);
  });

  it('says why a file is not a job', () => {
    expect(() => jobFileToForm('notes.yaml', 'a: [')).toThrow(
      /notes.yaml is not valid YAML/
    );
    expect(() => jobFileToForm('short.yaml', 'name: x\ncommand: echo')).toThrow(
      /has no taskRoles/
    );
  });
});
