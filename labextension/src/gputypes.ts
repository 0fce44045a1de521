/**
 * A task role's GPU type: OpenPAI's `extras.hivedScheduler.taskRoles.<role>.skuType`,
 * read from and written into a protocol v2 spec, and the choices a virtual
 * cluster offers for it. Untyped clusters list no types: the form then shows
 * nothing about types.
 */

import type { GpuTypeUsage, VirtualCluster } from './restmodels';

/**
 * The server's name for GPUs on nodes that carry no type label: counted in the
 * cluster view, never chosen by name.
 */
export const UNKNOWN_GPU_TYPE = 'unknown';

/** The protocol path of a role's GPU type (server errors there land at its select). */
export function skuTypePath(role: string): string {
  return `extras.hivedScheduler.taskRoles.${role}.skuType`;
}

function isMapping(value: unknown): value is Record<string, any> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

/** The role's GPU type in `spec`, or '' for any type. */
export function specGpuType(spec: Record<string, any>, role: string): string {
  const sku = spec?.extras?.hivedScheduler?.taskRoles?.[role]?.skuType;
  return typeof sku === 'string' ? sku : '';
}

/** Drop `parent[key]` where this edit left it an empty mapping it was not before. */
function pruneEmptied(
  parent: Record<string, any>,
  key: string,
  wasEmpty: boolean
): void {
  const value = parent[key];
  if (isMapping(value) && !Object.keys(value).length && !wasEmpty) {
    delete parent[key];
  }
}

function emptyMapping(value: unknown): boolean {
  return isMapping(value) && !Object.keys(value).length;
}

/**
 * Write the roles' GPU types into `spec` (changed in place): a type sets its
 * role's `skuType`, '' removes it, and so does a role no longer in the job.
 * Mappings the removal empties go too, so a job that had no types comes back
 * as it was; every other field under `extras.hivedScheduler` stays.
 */
export function writeGpuTypes(
  spec: Record<string, any>,
  types: Array<{ role: string; gpuType: string }>
): void {
  const wanted = new Map(types.map(t => [t.role, t.gpuType]));
  const extras = isMapping(spec.extras) ? spec.extras : undefined;
  const hived = isMapping(extras?.hivedScheduler)
    ? extras!.hivedScheduler
    : undefined;
  const roles = isMapping(hived?.taskRoles) ? hived!.taskRoles : undefined;
  const adding = [...wanted.values()].some(t => t);
  if (!roles && !adding) {
    return;
  }
  const was = {
    extras: emptyMapping(extras),
    hived: emptyMapping(hived),
    roles: emptyMapping(roles)
  };
  const ext: Record<string, any> = extras ?? (spec.extras = {});
  const sched: Record<string, any> = hived ?? (ext.hivedScheduler = {});
  const byRole: Record<string, any> = roles ?? (sched.taskRoles = {});
  for (const name of Object.keys(byRole)) {
    if (!wanted.get(name) && isMapping(byRole[name])) {
      const wasEmpty = emptyMapping(byRole[name]);
      delete byRole[name].skuType;
      pruneEmptied(byRole, name, wasEmpty);
    }
  }
  for (const [name, gpuType] of wanted) {
    if (gpuType) {
      byRole[name] = {
        ...(isMapping(byRole[name]) ? byRole[name] : {}),
        skuType: gpuType
      };
    }
  }
  pruneEmptied(sched, 'taskRoles', was.roles);
  pruneEmptied(ext, 'hivedScheduler', was.hived);
  pruneEmptied(spec, 'extras', was.extras);
}

/** The VC's GPU types; none where its GPUs are untyped. */
export function vcGpuTypes(vc: VirtualCluster | undefined): GpuTypeUsage[] {
  const types = Array.isArray(vc?.gpuTypes) ? vc!.gpuTypes : [];
  // Only unlabelled GPUs: as untyped as none at all.
  return types.some(t => t.name !== UNKNOWN_GPU_TYPE) ? types : [];
}

/** The types a role may name: the VC's, less the unlabelled GPUs. */
export function choosableGpuTypes(
  vc: VirtualCluster | undefined
): GpuTypeUsage[] {
  return vcGpuTypes(vc).filter(t => t.name !== UNKNOWN_GPU_TYPE);
}

/** A role shows a GPU type select where its VC has types or it has one already. */
export function showsGpuType(
  vc: VirtualCluster | undefined,
  gpuType: string
): boolean {
  return choosableGpuTypes(vc).length > 0 || !!gpuType;
}

export interface GpuTypeOption {
  /** The skuType written; '' for any type. */
  value: string;
  label: string;
  /** A type the VC does not list (kept from the job as it was). */
  unlisted?: boolean;
}

/** "A100-40GB — 12 of 16 free". */
export function gpuTypeLabel(t: GpuTypeUsage): string {
  return `${t.name} — ${t.free} of ${t.capacity} free`;
}

/** The select's options: any type, the VC's types, and the role's own if unlisted. */
export function gpuTypeOptions(
  vc: VirtualCluster | undefined,
  current: string
): GpuTypeOption[] {
  const types = choosableGpuTypes(vc);
  const options: GpuTypeOption[] = [
    { value: '', label: 'Any type' },
    ...types.map(t => ({ value: t.name, label: gpuTypeLabel(t) }))
  ];
  if (current && !types.some(t => t.name === current)) {
    options.push({
      value: current,
      label: `${current} (not in this VC)`,
      unlisted: true
    });
  }
  return options;
}

/** The paths of the GPU type selects shown, so errors there land at them. */
export function gpuTypeFieldPaths(
  roles: Array<{ name: string; gpuType: string }>,
  vc: VirtualCluster | undefined
): string[] {
  return roles
    .filter(r => showsGpuType(vc, r.gpuType))
    .map(r => skuTypePath(r.name));
}
