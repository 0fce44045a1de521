/**
 * Which form a job document is written in, told by its shape as the server
 * tells them apart (`jupyter_pai/spec/v1.py` `is_v1`, `shortform.py`), so the
 * panel picks the same schema branch and the same import path.
 */

import type { JobFormat } from './restmodels';

function isMapping(value: unknown): value is Record<string, unknown> {
  return !!value && typeof value === 'object' && !Array.isArray(value);
}

/**
 * An OpenPAI v1 job names itself `jobName` or lists its task roles;
 * protocol v2 has neither and says `protocolVersion`.
 */
export function isOpenPAIv1(doc: unknown): boolean {
  if (!isMapping(doc) || 'protocolVersion' in doc) {
    return false;
  }
  return 'jobName' in doc || Array.isArray(doc.taskRoles);
}

/** The form of a parsed job document, or null when it is not a mapping. */
export function jobFormat(doc: unknown): JobFormat | null {
  if (!isMapping(doc)) {
    return null;
  }
  if (isOpenPAIv1(doc)) {
    return 'v1';
  }
  if ('protocolVersion' in doc || 'taskRoles' in doc) {
    return 'v2';
  }
  return 'short';
}
