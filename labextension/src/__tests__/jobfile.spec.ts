import * as fs from 'fs';
import * as path from 'path';

import { PAIClient } from '../api';
import { PAIRequestError } from '../apirequest';
import {
  describeFieldErrors,
  displayPath,
  importErrorNotice,
  importJobFile,
  importNotice,
  JOB_FILE,
  JobFileError,
  type JobConverter
} from '../jobfile';
import type { ConvertResult } from '../restmodels';
import { formToSpec } from '../jobform';
import { FakeServer } from './fakeserver';
import { example, ROOT } from './fixtures';

/** A converter that must not be called (protocol-v2 files load locally). */
const noServer: JobConverter = () => {
  throw new Error('the server was asked');
};

/** An OpenPAI v1 job of the server's test corpus and what its converter makes of it. */
function v1Case(name: string): { text: string; converted: ConvertResult } {
  const unit = path.join(ROOT, 'tests', 'unit');
  const golden = JSON.parse(
    fs.readFileSync(path.join(unit, 'golden', 'v1', `${name}.json`), 'utf8')
  );
  return {
    text: fs.readFileSync(path.join(unit, 'specs_v1', `${name}.json`), 'utf8'),
    converted: {
      format: 'v1',
      job: golden.converted,
      warnings: [
        {
          path: '',
          message:
            'converted from an OpenPAI v1 job (jobName, a taskRoles list) to protocol v2'
        }
      ]
    }
  };
}

describe('opening a job file from the file browser', () => {
  it('offers YAML and JSON files only', () => {
    expect(JOB_FILE.test('jobs/train.yaml')).toBe(true);
    expect(JOB_FILE.test('train.YML')).toBe(true);
    expect(JOB_FILE.test('train.json')).toBe(true);
    expect(JOB_FILE.test('train.py')).toBe(false);
  });

  it('loads a protocol-v2 example into the form without asking the server', async () => {
    const { form, format, warnings } = await importJobFile(
      'examples/tensorflow-ps-worker.yaml',
      example('tensorflow-ps-worker.yaml'),
      noServer
    );
    expect(format).toBe('v2');
    expect(warnings).toEqual([]);
    expect(form.name).toBe('tf_ps_worker');
    expect(form.roles.map(r => r.name)).toEqual(['worker', 'ps']);
    expect(form.roles[0].instances).toBe(2);
  });

  it('reads JSON files as JSON', async () => {
    const text = JSON.stringify({
      protocolVersion: 2,
      name: 'from-json',
      type: 'job',
      taskRoles: { w: { instances: 3, commands: ['echo hi'] } }
    });
    const { form } = await importJobFile('job.json', text, noServer);
    expect(form.name).toBe('from-json');
    expect(form.roles[0].instances).toBe(3);
  });

  it('says why a file is not a job', async () => {
    await expect(importJobFile('notes.yaml', 'a: [', noServer)).rejects.toThrow(
      /notes.yaml is not valid YAML/
    );
    await expect(
      importJobFile('short.yaml', 'name: x\ncommand: echo', noServer)
    ).rejects.toThrow(/has no taskRoles/);
    await expect(importJobFile('list.json', '[1]', noServer)).rejects.toThrow(
      /list.json is not valid JSON: a job is a JSON object/
    );
  });
});

describe('OpenPAI v1 job files', () => {
  it('are converted by the server (POST convert, the text as written) and loaded', async () => {
    const { text, converted } = v1Case('ps-worker');
    const server = new FakeServer().json('POST', 'pai/api/convert', converted);
    const client = new PAIClient(server.settings);
    const imported = await importJobFile('old/tf.json', text, t =>
      client.convertJob(t)
    );

    expect(server.requests).toHaveLength(1);
    expect(server.requests[0].body).toBe(text);
    expect(server.requests[0].headers.get('Content-Type')).toBe('text/yaml');

    const { form } = imported;
    expect(imported.format).toBe('v1');
    expect(form.name).toBe('tf-distributed');
    expect(form.image).toBe('openpai/tensorflow:1.15-gpu');
    expect(form.virtualCluster).toBe('research');
    expect(form.jobRetryCount).toBe(2);
    expect(
      form.roles.map(r => [r.name, r.instances, r.cpu, r.memoryMB, r.gpu])
    ).toEqual([
      ['ps', 2, 2, 8192, 0],
      ['worker', 4, 4, 16384, 2]
    ]);
    expect(form.roles[1].command).toMatch(/--data_dir=\$PAI_DATA_DIR/);
    // jobEnvs stay variables only (the deployment's exports), not form parameters.
    expect(form.parameters).toEqual([]);
    // What the form does not show (the deployment exporting PAI_DATA_DIR and
    // jobEnvs, the data prerequisite, completion) goes back out unchanged.
    const spec = formToSpec(form);
    expect(spec.deployments).toEqual(converted.job.deployments);
    expect(spec.prerequisites).toEqual(converted.job.prerequisites);
    expect(spec.taskRoles.worker.completion).toEqual(
      converted.job.taskRoles.worker.completion
    );
  });

  it('keep their ports', async () => {
    const { text, converted } = v1Case('ports');
    const { form } = await importJobFile(
      'nb.json',
      text,
      async () => converted
    );
    expect(form.roles[0].ports).toEqual([
      { label: 'jupyter', count: 1 },
      { label: 'tb', count: 2 }
    ]);
  });

  it('are told apart from v2 by shape: jobName, or a taskRoles list', async () => {
    const asked: string[] = [];
    const convert: JobConverter = async t => {
      asked.push(t);
      return v1Case('single-task').converted;
    };
    await importJobFile(
      'a.json',
      '{"taskRoles": [{"name": "w", "command": "x"}]}',
      convert
    );
    await importJobFile('b.yaml', 'jobName: b\nimage: i\n', convert);
    await importJobFile(
      'c.yaml',
      'protocolVersion: 2\nname: c\ntaskRoles: {w: {commands: [x]}}\n',
      convert
    );
    expect(asked).toHaveLength(2);
  });

  it('that cannot be converted fail with the v1 fields named', async () => {
    const body = {
      message:
        'invalid job specification: authFile: cannot be converted: an HDFS file of registry credentials cannot be read here (and 1 more)',
      errors: [
        {
          path: 'authFile',
          message:
            'cannot be converted: an HDFS file of registry credentials cannot be read here'
        },
        {
          path: 'taskRoles.0.portList.0.beginAt',
          message: 'a fixed first port cannot be converted'
        }
      ]
    };
    const server = new FakeServer().json('POST', 'pai/api/convert', body, 400);
    const client = new PAIClient(server.settings);
    const error = await importJobFile(
      'gpu.json',
      '{"jobName": "g", "authFile": "hdfs://c", "taskRoles": []}',
      t => client.convertJob(t)
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(JobFileError);
    expect((error as JobFileError).errors).toEqual(body.errors);
    expect((error as JobFileError).message).toBe(
      'gpu.json cannot be converted from OpenPAI v1: ' +
        'authFile: cannot be converted: an HDFS file of registry credentials cannot be read here; ' +
        'taskRoles[0].portList[0].beginAt: a fixed first port cannot be converted'
    );
    // The notification names the fields; "Details" has what is wrong with each.
    expect(importErrorNotice(error as JobFileError)).toEqual({
      type: 'error',
      message:
        'gpu.json cannot be converted from OpenPAI v1: authFile, taskRoles[0].portList[0].beginAt',
      autoClose: false,
      details: body.errors,
      title: 'gpu.json cannot be converted from OpenPAI v1'
    });
  });

  it('pass on a server that cannot be reached as such', async () => {
    const convert: JobConverter = () =>
      Promise.reject(new PAIRequestError('connection refused', 0));
    const error = await importJobFile(
      'x.json',
      '{"jobName": "x"}',
      convert
    ).catch((e: unknown) => e);
    expect(error).toBeInstanceOf(PAIRequestError);
    expect((error as PAIRequestError).unreachable).toBe(true);
  });
});

describe('what the user is told after an import', () => {
  it('says a v1 job was converted, as news', async () => {
    const { text, converted } = v1Case('single-task');
    const imported = await importJobFile(
      'old.json',
      text,
      async () => converted
    );
    expect(importNotice('old.json', imported)).toEqual({
      type: 'info',
      message: 'Imported old.json: converted from OpenPAI v1 to protocol v2',
      autoClose: 8000,
      details: [],
      title: 'Warnings about old.json'
    });
  });

  it('adds any other warning, and then stays until read', async () => {
    const { text, converted } = v1Case('ps-worker');
    const imported = await importJobFile('tf.json', text, async () => ({
      ...converted,
      warnings: [
        ...converted.warnings,
        { path: 'codeDir', message: 'its files are not copied' }
      ]
    }));
    const notice = importNotice('tf.json', imported);
    expect(notice.type).toBe('warning');
    expect(notice.autoClose).toBe(false);
    // JupyterLab cuts notifications at 140 characters: the fields, then "Details".
    expect(notice.message).toBe(
      'Imported tf.json: converted from OpenPAI v1 to protocol v2, with warnings about codeDir'
    );
    expect(notice.details).toEqual([
      { path: 'codeDir', message: 'its files are not copied' }
    ]);
  });

  it('keeps a plain v2 import short', async () => {
    const imported = await importJobFile(
      'j.yaml',
      example('cpu-only.yaml'),
      noServer
    );
    expect(importNotice('j.yaml', imported)).toMatchObject({
      type: 'info',
      message: 'Imported j.yaml',
      autoClose: 3000,
      details: []
    });
  });

  it('writes list indexes as JSON does', () => {
    expect(displayPath('taskRoles.0.portList.12.label')).toBe(
      'taskRoles[0].portList[12].label'
    );
    expect(displayPath('taskRoles.worker.instances')).toBe(
      'taskRoles.worker.instances'
    );
    expect(
      describeFieldErrors([
        { path: '', message: 'job-wide' },
        { path: 'retryCount', message: 'give a count' }
      ])
    ).toBe('job-wide; retryCount: give a count');
  });
});
