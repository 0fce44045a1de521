/**
 * What the launch form checks before asking the server, and where each error
 * (the form's own, the schema's or the server's) is shown: on the field with
 * the same protocol path, or above the form.
 */

import { totalGpus, type JobForm } from './jobform';
import type { FieldError, VirtualCluster } from './restmodels';

export const NAME_PATTERN = /^[a-zA-Z0-9_-]+$/;
export const ROLE_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*$/;
export const PORT_LABEL_PATTERN = /^[a-zA-Z_][a-zA-Z0-9_]*$/;

/**
 * Checks the form can make before asking the server: the same rules as the
 * schema, phrased for the field they concern. Paths are protocol paths.
 */
export function checkForm(
  form: JobForm,
  vc: VirtualCluster | undefined
): FieldError[] {
  const errors: FieldError[] = [];
  if (!form.name) {
    errors.push({ path: 'name', message: 'a job needs a name' });
  } else if (!NAME_PATTERN.test(form.name)) {
    errors.push({
      path: 'name',
      message: 'use only letters, digits, - and _'
    });
  } else if (form.name.length > 255) {
    errors.push({ path: 'name', message: 'at most 255 characters' });
  }
  if (!form.image.trim()) {
    errors.push({
      path: 'prerequisites',
      message: 'pick an image from the catalogue or enter an image URI'
    });
  }
  if (!form.roles.length) {
    errors.push({ path: 'taskRoles', message: 'a job needs a task role' });
  }
  const seen = new Set<string>();
  for (const role of form.roles) {
    const at = `taskRoles.${role.name}`;
    if (!ROLE_PATTERN.test(role.name)) {
      errors.push({
        path: at,
        message:
          'a role name starts with a letter or _ and holds letters, digits, _'
      });
    } else if (seen.has(role.name)) {
      errors.push({ path: at, message: `two roles are named ${role.name}` });
    }
    seen.add(role.name);
    if (!(role.instances >= 1) || !Number.isInteger(role.instances)) {
      errors.push({ path: `${at}.instances`, message: 'at least 1 instance' });
    }
    if (!(role.gpu >= 0) || !Number.isInteger(role.gpu)) {
      errors.push({
        path: `${at}.resourcePerInstance.gpu`,
        message: 'a whole number of GPUs, 0 or more'
      });
    } else if (vc && role.gpu > vc.capacity.gpu) {
      errors.push({
        path: `${at}.resourcePerInstance.gpu`,
        message: `virtual cluster ${vc.name} has ${vc.capacity.gpu} GPUs in all`
      });
    }
    if (!(role.cpu >= 0)) {
      errors.push({
        path: `${at}.resourcePerInstance.cpu`,
        message: 'CPUs cannot be negative'
      });
    }
    if (!(role.memoryMB >= 0) || !Number.isInteger(role.memoryMB)) {
      errors.push({
        path: `${at}.resourcePerInstance.memoryMB`,
        message: 'a whole number of MB, 0 or more'
      });
    }
    if (!role.command.trim()) {
      errors.push({
        path: `${at}.commands`,
        message: 'the command the task runs'
      });
    }
    role.ports.forEach(p => {
      if (p.label && !PORT_LABEL_PATTERN.test(p.label)) {
        errors.push({
          path: `${at}.resourcePerInstance.ports`,
          message: `port label ${p.label} must start with a letter or _`
        });
      }
    });
  }
  if (vc && totalGpus(form) > vc.capacity.gpu && form.gang) {
    errors.push({
      path: 'defaults.virtualCluster',
      message: `the job needs ${totalGpus(form)} GPUs at once; ${vc.name} has ${vc.capacity.gpu}`
    });
  }
  form.storages.forEach((s, i) => {
    if (s.mountPath && !s.mountPath.startsWith('/')) {
      errors.push({
        path: `extras.storages.${i}.mountPath`,
        message: 'an absolute path such as /mnt/data'
      });
    }
  });
  return errors;
}

/** Field paths the form shows, for matching server errors to fields. */
export function formFieldPaths(form: JobForm): string[] {
  const paths = [
    'name',
    'defaults.virtualCluster',
    'defaults',
    'prerequisites',
    'jobRetryCount',
    'parameters',
    'extras.gangAllocation',
    'extras.storages',
    'taskRoles'
  ];
  form.storages.forEach((_, i) => {
    paths.push(
      `extras.storages.${i}`,
      `extras.storages.${i}.name`,
      `extras.storages.${i}.mountPath`
    );
  });
  for (const role of form.roles) {
    const at = `taskRoles.${role.name}`;
    paths.push(
      at,
      `${at}.instances`,
      `${at}.resourcePerInstance.cpu`,
      `${at}.resourcePerInstance.memoryMB`,
      `${at}.resourcePerInstance.gpu`,
      `${at}.resourcePerInstance.ports`,
      `${at}.commands`,
      `${at}.taskRetryCount`,
      `${at}.dockerImage`
    );
  }
  return paths;
}

/**
 * Match field errors to the form's fields: each error goes to the field with
 * the longest path that is the error's path or a prefix of it (segment-wise);
 * the rest are the form's own. `taskRoles.worker.commands.0` lands on
 * `taskRoles.worker.commands`.
 */
export function assignErrors(
  errors: FieldError[],
  fields: Iterable<string>
): { byField: Map<string, FieldError[]>; unmatched: FieldError[] } {
  const known = [...fields].sort((a, b) => b.length - a.length);
  const byField = new Map<string, FieldError[]>();
  const unmatched: FieldError[] = [];
  for (const error of errors) {
    const path = normalisePath(error.path);
    const field = known.find(f => path === f || path.startsWith(`${f}.`));
    if (field === undefined) {
      unmatched.push(error);
    } else {
      byField.set(field, [...(byField.get(field) ?? []), error]);
    }
  }
  return { byField, unmatched };
}

/** `/taskRoles/w/x` or `taskRoles[w].x` or `taskRoles → w` to `taskRoles.w.x`. */
export function normalisePath(path: string): string {
  return (path ?? '')
    .replace(/^\//, '')
    .replace(/\//g, '.')
    .replace(/\[(\w+)\]/g, '.$1')
    .replace(/^\./, '');
}
