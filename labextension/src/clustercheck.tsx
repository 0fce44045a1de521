/**
 * The permission self-check in the cluster view (`GET check`, what `jupyter pai
 * check` prints): each permission the user lacks on the cluster, in words, and
 * whether the API server, the scheduler, HiveD and Prometheus answer. Nothing
 * is shown on the local backend, which has nothing to check on a cluster.
 */

import * as React from 'react';
import { ServerConnection } from '@jupyterlab/services';

import { requestAPI } from './apirequest';
import { describeError } from './panelstate';

/** A permission the flavor uses that the user does not hold. */
export interface MissingPermission {
  group: string;
  resource: string;
  verb: string;
  namespace?: string | null;
  why: string;
  message: string;
}

/** Whether one thing the backend relies on answers. */
export interface Reachability {
  name: string;
  ok: boolean;
  detail: string;
}

/** `GET check`: the server's `SelfCheck`. */
export interface SelfCheck {
  backend: string;
  flavor?: string | null;
  namespace?: string | null;
  user: string;
  ok: boolean;
  checked?: number;
  missing?: MissingPermission[];
  reachability?: Reachability[];
  note?: string;
}

/** One line of the check as shown: a problem or a confirmation. */
export interface CheckLine {
  ok: boolean;
  text: string;
}

/** Ask the server for the check (it asks the API server afresh). */
export function loadCheck(
  settings?: ServerConnection.ISettings
): Promise<SelfCheck> {
  return requestAPI<SelfCheck>('check', {}, settings);
}

/**
 * The missing permissions, one line per resource (a lost RoleBinding takes
 * dozens of verbs at once), after one line saying whom to ask for what.
 */
export function missingLines(missing: MissingPermission[]): CheckLine[] {
  if (!missing.length) {
    return [];
  }
  const byResource = new Map<
    string,
    { what: string; where: string; verbs: string[]; whys: string[] }
  >();
  const roles: string[] = [];
  for (const m of missing) {
    const what = m.group ? `${m.group}/${m.resource}` : m.resource;
    const where = m.namespace ? `in namespace ${m.namespace}` : 'cluster-wide';
    const role = m.namespace
      ? `jupyter-pai-user in namespace ${m.namespace}`
      : 'jupyter-pai-cluster-reader';
    if (!roles.includes(role)) {
      roles.push(role);
    }
    const key = `${what} ${where}`;
    const entry = byResource.get(key) ?? { what, where, verbs: [], whys: [] };
    entry.verbs.push(m.verb);
    if (!entry.whys.includes(m.why)) {
      entry.whys.push(m.why);
    }
    byResource.set(key, entry);
  }
  const count =
    missing.length === 1 ? '1 permission' : `${missing.length} permissions`;
  return [
    {
      ok: false,
      text: `${count} missing: ask your admin to bind ${roles.join(' and ')}.`
    },
    ...[...byResource.values()].map(e => ({
      ok: false,
      text: `cannot ${e.verbs.join(', ')} ${e.what} ${e.where}: without it you cannot ${e.whys.join('; ')}`
    }))
  ];
}

/** The check as lines, problems first; none where there is nothing to check. */
export function checkLines(report: SelfCheck): CheckLine[] {
  const reached = report.reachability ?? [];
  const missing = report.missing ?? [];
  if (!reached.length && !report.checked) {
    return [];
  }
  const lines: CheckLine[] = [
    ...missingLines(missing),
    ...reached
      .filter(r => !r.ok)
      .map(r => ({ ok: false, text: `${r.name}: ${r.detail}` }))
  ];
  if (report.checked && !missing.length) {
    lines.push({
      ok: true,
      text: `All ${report.checked} permissions the ${report.flavor} flavour needs are held.`
    });
  }
  lines.push(
    ...reached
      .filter(r => r.ok)
      .map(r => ({ ok: true, text: `${r.name}: ${r.detail}` }))
  );
  return lines;
}

export function ClusterCheck(props: {
  /** Whether the cluster section is on screen (it loads only then). */
  shown: boolean;
  settings?: ServerConnection.ISettings;
}): JSX.Element | null {
  const { shown, settings } = props;
  const [report, setReport] = React.useState<SelfCheck | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  React.useEffect(() => {
    if (!shown) {
      return;
    }
    let live = true;
    loadCheck(settings).then(
      r => live && (setReport(r), setError(null)),
      e => live && setError(describeError(e))
    );
    return () => {
      live = false;
    };
  }, [shown, settings]);
  if (error) {
    return (
      <div className="jp-PAI-permissions jp-PAI-error" role="alert">
        Permission check failed: {error}
      </div>
    );
  }
  const lines = report ? checkLines(report) : [];
  if (!report || !lines.length) {
    return null;
  }
  const problems = lines.filter(l => !l.ok);
  return (
    <div className="jp-PAI-permissions" data-ok={String(report.ok)}>
      <div className="jp-PAI-section-title">Permissions</div>
      {problems.length > 0 && (
        <div className="jp-PAI-error" role="alert">
          <ul>
            {problems.map(l => (
              <li key={l.text}>{l.text}</li>
            ))}
          </ul>
        </div>
      )}
      {lines
        .filter(l => l.ok)
        .map(l => (
          <div key={l.text} className="jp-PAI-hint">
            ✓ {l.text}
          </div>
        ))}
    </div>
  );
}
