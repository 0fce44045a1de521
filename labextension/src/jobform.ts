/**
 * The launch form's model and its two-way mapping to OpenPAI protocol v2.
 *
 * The form edits a few fields of a job; everything else in the spec it came
 * from (secrets, deployments, plugins, completion policies, unknown
 * sections) is kept, so cloning a job or switching between the form and YAML
 * never loses what the form does not show. The checks and the matching of
 * errors to fields are in `formchecks.ts`.
 */

import { parse as parseYaml, stringify as stringifyYaml } from 'yaml';

import { specGpuType, writeGpuTypes } from './gputypes';
import type { Image } from './restmodels';

/** The name the form gives the job's docker image prerequisite. */
export const IMAGE_PREREQUISITE = 'image';

export interface RoleForm {
  name: string;
  instances: number;
  cpu: number;
  memoryMB: number;
  gpu: number;
  /** Shell lines, one per line (protocol `commands[]`). */
  command: string;
  /** `label: count` pairs, e.g. `{http: 1}`. */
  ports: Array<{ label: string; count: number }>;
  taskRetryCount: number;
  /** The GPU type (`extras.hivedScheduler.taskRoles.<role>.skuType`); '' for any. */
  gpuType: string;
}

export interface MountForm {
  name: string;
  mountPath: string;
  readOnly: boolean;
}

export interface JobForm {
  name: string;
  virtualCluster: string;
  /** The image URI (a catalogue entry's or a custom one). */
  image: string;
  roles: RoleForm[];
  parameters: Array<{ key: string; value: string }>;
  storages: MountForm[];
  gang: boolean;
  jobRetryCount: number;
  description: string;
  /** The spec the form was made from: fields the form does not show. */
  base: Record<string, any>;
}

export function newRole(name = 'worker', gpu = 1): RoleForm {
  return {
    name,
    instances: 1,
    cpu: 4,
    memoryMB: 8192,
    gpu,
    command: '',
    ports: [],
    taskRetryCount: 0,
    gpuType: ''
  };
}

/** A job name that is valid and unlikely to be taken: `job-20240501-1432`. */
export function defaultJobName(now = new Date()): string {
  const pad = (n: number) => String(n).padStart(2, '0');
  return (
    `job-${now.getFullYear()}${pad(now.getMonth() + 1)}${pad(now.getDate())}` +
    `-${pad(now.getHours())}${pad(now.getMinutes())}${pad(now.getSeconds())}`
  );
}

export function newJobForm(
  defaults: { virtualCluster?: string; image?: string } = {}
): JobForm {
  return {
    name: defaultJobName(),
    virtualCluster: defaults.virtualCluster ?? '',
    image: defaults.image ?? '',
    roles: [newRole()],
    parameters: [],
    storages: [],
    gang: true,
    jobRetryCount: 0,
    description: '',
    base: {}
  };
}

/** A new role name not used yet: worker, worker_1, worker_2… */
export function uniqueRoleName(form: JobForm, stem = 'worker'): string {
  const taken = new Set(form.roles.map(r => r.name));
  if (!taken.has(stem)) {
    return stem;
  }
  for (let i = 1; ; i++) {
    if (!taken.has(`${stem}_${i}`)) {
      return `${stem}_${i}`;
    }
  }
}

function clone<T>(value: T): T {
  return value === undefined ? value : JSON.parse(JSON.stringify(value));
}

function num(value: any, fallback: number): number {
  const n = typeof value === 'string' ? Number(value) : value;
  return typeof n === 'number' && Number.isFinite(n) ? n : fallback;
}

function commandsOf(role: any): string {
  const commands = role?.commands;
  if (typeof commands === 'string') {
    return commands;
  }
  return Array.isArray(commands) ? commands.map(String).join('\n') : '';
}

/** The image URI a role runs, resolved through its dockerImage prerequisite. */
export function roleImage(spec: Record<string, any>, role: any): string {
  const ref = role?.dockerImage;
  const pre = Array.isArray(spec.prerequisites)
    ? spec.prerequisites.find(
        (p: any) => p && p.name === ref && p.type === 'dockerimage'
      )
    : undefined;
  return typeof pre?.uri === 'string' ? pre.uri : '';
}

/** Read a protocol v2 object (a job's spec, parsed YAML) into the form. */
export function specToForm(spec: Record<string, any>): JobForm {
  const base = clone(spec ?? {});
  const roles: RoleForm[] = Object.entries(base.taskRoles ?? {}).map(
    ([name, role]: [string, any]) => {
      const res = role?.resourcePerInstance ?? {};
      return {
        name,
        instances: num(role?.instances, 1),
        cpu: num(res.cpu, 1),
        memoryMB: num(res.memoryMB, 1024),
        gpu: num(res.gpu, 0),
        command: commandsOf(role),
        ports: Object.entries(res.ports ?? {}).map(([label, count]) => ({
          label,
          count: num(count, 1)
        })),
        taskRetryCount: num(role?.taskRetryCount, 0),
        gpuType: specGpuType(base, name)
      };
    }
  );
  const firstRole = Object.values(base.taskRoles ?? {})[0];
  return {
    name: typeof base.name === 'string' ? base.name : '',
    virtualCluster: base.defaults?.virtualCluster ?? '',
    image: roleImage(base, firstRole),
    roles: roles.length ? roles : [newRole()],
    parameters: Object.entries(base.parameters ?? {}).map(([key, value]) => ({
      key,
      value: typeof value === 'string' ? value : JSON.stringify(value)
    })),
    storages: (Array.isArray(base.extras?.storages)
      ? base.extras.storages
      : []
    ).map((s: any) => ({
      name: String(s?.name ?? ''),
      mountPath: s?.mountPath ?? '',
      readOnly: !!s?.readOnly
    })),
    gang: base.extras?.gangAllocation !== false,
    jobRetryCount: num(base.jobRetryCount, 0),
    description: typeof base.description === 'string' ? base.description : '',
    base
  };
}

function parameterValue(text: string): any {
  // Numbers and booleans stay what they look like; everything else is text.
  if (/^-?\d+(\.\d+)?([eE][-+]?\d+)?$/.test(text)) {
    return Number(text);
  }
  if (text === 'true' || text === 'false') {
    return text === 'true';
  }
  return text;
}

/** Write the form as a protocol v2 object, over the spec it came from. */
export function formToSpec(form: JobForm): Record<string, any> {
  const spec: Record<string, any> = clone(form.base) ?? {};
  spec.protocolVersion = 2;
  spec.name = form.name;
  spec.type = spec.type ?? 'job';
  if (form.description) {
    spec.description = form.description;
  } else {
    delete spec.description;
  }

  // One dockerimage prerequisite for every role the form edits.
  const prerequisites: any[] = Array.isArray(spec.prerequisites)
    ? spec.prerequisites
    : [];
  const oldRoles = spec.taskRoles ?? {};
  const firstOld: any = Object.values(oldRoles)[0];
  let imageRef: string = firstOld?.dockerImage ?? IMAGE_PREREQUISITE;
  const existing = prerequisites.find(
    p => p && p.name === imageRef && p.type === 'dockerimage'
  );
  if (existing) {
    existing.uri = form.image;
  } else {
    if (prerequisites.some(p => p && p.name === imageRef)) {
      imageRef = `${IMAGE_PREREQUISITE}_${prerequisites.length}`;
    }
    prerequisites.unshift({
      name: imageRef,
      type: 'dockerimage',
      uri: form.image
    });
  }
  spec.prerequisites = prerequisites;

  const params: Record<string, any> = {};
  for (const { key, value } of form.parameters) {
    if (key.trim()) {
      params[key.trim()] = parameterValue(value);
    }
  }
  if (Object.keys(params).length) {
    spec.parameters = params;
  } else {
    delete spec.parameters;
  }

  spec.jobRetryCount = form.jobRetryCount;
  const taskRoles: Record<string, any> = {};
  for (const role of form.roles) {
    const old = clone(oldRoles[role.name]) ?? {};
    const ports: Record<string, number> = {};
    for (const p of role.ports) {
      if (p.label.trim()) {
        ports[p.label.trim()] = p.count;
      }
    }
    const resources: Record<string, any> = {
      ...(old.resourcePerInstance ?? {}),
      cpu: role.cpu,
      memoryMB: role.memoryMB,
      gpu: role.gpu
    };
    if (Object.keys(ports).length) {
      resources.ports = ports;
    } else {
      delete resources.ports;
    }
    taskRoles[role.name] = {
      ...old,
      instances: role.instances,
      dockerImage: old.dockerImage ?? imageRef,
      resourcePerInstance: resources,
      taskRetryCount: role.taskRetryCount,
      commands: role.command
        .split('\n')
        .map(line => line.replace(/\s+$/, ''))
        .filter(line => line.length > 0)
    };
  }
  spec.taskRoles = taskRoles;

  spec.defaults = { ...(spec.defaults ?? {}) };
  if (form.virtualCluster) {
    spec.defaults.virtualCluster = form.virtualCluster;
  } else {
    delete spec.defaults.virtualCluster;
  }
  if (!Object.keys(spec.defaults).length) {
    delete spec.defaults;
  }

  spec.extras = { ...(spec.extras ?? {}), gangAllocation: form.gang };
  const storages = form.storages
    .filter(s => s.name)
    .map(s => {
      const mount: Record<string, any> = { name: s.name };
      if (s.mountPath) {
        mount.mountPath = s.mountPath;
      }
      if (s.readOnly) {
        mount.readOnly = true;
      }
      return mount;
    });
  if (storages.length) {
    spec.extras.storages = storages;
  } else {
    delete spec.extras.storages;
  }
  writeGpuTypes(
    spec,
    form.roles.map(r => ({ role: r.name, gpuType: r.gpuType }))
  );
  return orderSpec(spec);
}

const TOP_ORDER = [
  'protocolVersion',
  'name',
  'type',
  'version',
  'contributor',
  'description',
  'prerequisites',
  'parameters',
  'secrets',
  'jobRetryCount',
  'taskRoles',
  'deployments',
  'defaults',
  'extras'
];

/** Keys in the order OpenPAI's examples use, so exported YAML reads well. */
function orderSpec(spec: Record<string, any>): Record<string, any> {
  const out: Record<string, any> = {};
  for (const key of TOP_ORDER) {
    if (key in spec) {
      out[key] = spec[key];
    }
  }
  for (const key of Object.keys(spec)) {
    if (!(key in out)) {
      out[key] = spec[key];
    }
  }
  return out;
}

export function specToYaml(spec: Record<string, any>): string {
  return stringifyYaml(spec, { lineWidth: 0 });
}

export function yamlToSpec(text: string): Record<string, any> {
  const value = parseYaml(text);
  if (!value || typeof value !== 'object' || Array.isArray(value)) {
    throw new Error(
      'a job is a YAML mapping (protocolVersion, name, taskRoles…)'
    );
  }
  return value;
}

/** GPUs the job asks for in all: instances × GPUs per instance, summed. */
export function totalGpus(form: JobForm): number {
  return form.roles.reduce((n, r) => n + r.instances * r.gpu, 0);
}

/** The catalogue entry an image URI belongs to, if any. */
export function catalogueEntry(
  images: Image[],
  uri: string
): Image | undefined {
  return images.find(i => i.uri === uri || i.name === uri);
}
