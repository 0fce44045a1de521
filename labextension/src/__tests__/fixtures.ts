import * as fs from 'fs';
import * as path from 'path';

/** The repository root (labextension/..). */
export const ROOT = path.resolve(__dirname, '..', '..', '..');

/** The job JSON Schema the server serves at GET pai/api/schema. */
export function jobSchema(): Record<string, any> {
  return JSON.parse(
    fs.readFileSync(path.join(ROOT, 'jupyter_pai/spec/job-schema.json'), 'utf8')
  );
}

/** An example job file of the repository, as text. */
export function example(name: string): string {
  return fs.readFileSync(path.join(ROOT, 'examples', name), 'utf8');
}
