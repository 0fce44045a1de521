/**
 * The client's models against the server's own description of its API:
 * `jupyter_pai/server/openapi.yaml` (components generated from the pydantic
 * models) and `jupyter_pai/spec/job-schema.json`.
 */
import * as fs from 'fs';
import * as path from 'path';
import { parse } from 'yaml';

import {
  JOB_FORMATS,
  JOB_STATES,
  NOTEBOOK_TRUST_HEADER,
  TASK_STATES
} from '../restmodels';
import { MODEL_FIELDS } from './modelfields';

const ROOT = path.resolve(__dirname, '..', '..', '..');
const openapi = parse(
  fs.readFileSync(path.join(ROOT, 'jupyter_pai/server/openapi.yaml'), 'utf8')
);
const components: Record<string, any> = openapi.components.schemas;

describe('models mirror the server one to one', () => {
  for (const [name, fields] of Object.entries(MODEL_FIELDS)) {
    it(`${name} has the server's fields`, () => {
      expect(components[name]).toBeDefined();
      expect(Object.keys(fields).sort()).toEqual(
        Object.keys(components[name].properties).sort()
      );
    });
  }

  it('has every model the server describes', () => {
    const described = Object.keys(components).filter(
      n => components[n].properties
    );
    expect(described.sort()).toEqual(Object.keys(MODEL_FIELDS).sort());
  });

  it('has the server job and task states', () => {
    expect([...JOB_STATES].sort()).toEqual(
      [...components.JobState.enum].sort()
    );
    expect([...TASK_STATES].sort()).toEqual(
      [...components.TaskState.enum].sort()
    );
  });

  it('has the job formats POST convert names', () => {
    expect([...JOB_FORMATS].sort()).toEqual(
      [...components.ConvertResult.properties.format.enum].sort()
    );
  });

  it('reads notebooks with the parameter and header the server names', () => {
    const storage = openapi.paths['/storage/{name}/{path}'];
    const query = (verb: string) =>
      storage[verb].parameters.map((p: any) => p.name);
    expect(query('get')).toContain('notebook');
    expect(query('put')).toContain('notebook');
    expect(Object.keys(storage.get.responses['200'].headers)).toContain(
      NOTEBOOK_TRUST_HEADER
    );
  });

  it('calls every API path the server serves', () => {
    const paths = Object.keys(openapi.paths).map((p: string) =>
      p.replace(/^\/pai\/api\//, '').replace(/^\//, '')
    );
    for (const endpoint of [
      'info',
      'images',
      'schema',
      'convert',
      'virtual-clusters',
      'jobs',
      'job-changes',
      'jobs/{job_id}',
      'jobs/{job_id}/logs',
      'jobs/{job_id}/events',
      'jobs/{job_id}/utilisation',
      'abnormal-jobs',
      'nodes',
      'notebook-jobs',
      'storage',
      'storage/{name}/{path}'
    ]) {
      expect(paths).toContain(endpoint);
    }
  });
});
