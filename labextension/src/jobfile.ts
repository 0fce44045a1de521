import { specToForm, yamlToSpec, type JobForm } from './spec';

/** File names the launch form can open: OpenPAI job files are YAML or JSON. */
export const JOB_FILE = /\.(ya?ml|json)$/i;

/**
 * A job file's text as a launch form, or an error saying why it is not one
 * (the form edits protocol-v2 jobs; a short-form file can still be submitted as is).
 */
export function jobFileToForm(path: string, text: string): JobForm {
  let spec: unknown;
  try {
    spec = /\.json$/i.test(path) ? JSON.parse(text) : yamlToSpec(text);
  } catch (error) {
    throw new Error(
      `${path} is not valid ${/\.json$/i.test(path) ? 'JSON' : 'YAML'}: ${(error as Error).message}`
    );
  }
  if (!spec || typeof spec !== 'object' || !('taskRoles' in spec)) {
    throw new Error(
      `${path} has no taskRoles: the form opens OpenPAI protocol-v2 jobs`
    );
  }
  return specToForm(spec as Record<string, any>);
}
