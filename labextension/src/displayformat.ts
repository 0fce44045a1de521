/** Small formatting helpers shared by the views. */

import type { DateTime } from './restmodels';

export function parseTime(value: DateTime | null | undefined): Date | null {
  if (!value) {
    return null;
  }
  const date = new Date(value);
  return Number.isNaN(date.getTime()) ? null : date;
}

/** `1h 02m`, `3m 05s`, `42s`, `2d 4h`. */
export function formatDuration(ms: number): string {
  if (!Number.isFinite(ms) || ms < 0) {
    return '';
  }
  const s = Math.floor(ms / 1000);
  const d = Math.floor(s / 86400);
  const h = Math.floor((s % 86400) / 3600);
  const m = Math.floor((s % 3600) / 60);
  const sec = s % 60;
  const pad = (n: number) => String(n).padStart(2, '0');
  if (d > 0) {
    return `${d}d ${h}h`;
  }
  if (h > 0) {
    return `${h}h ${pad(m)}m`;
  }
  if (m > 0) {
    return `${m}m ${pad(sec)}s`;
  }
  return `${sec}s`;
}

/** How long a job has run (or waited, when it has not started). */
export function jobDuration(
  job: {
    submissionTime: DateTime;
    launchedTime?: DateTime | null;
    completedTime?: DateTime | null;
  },
  now = Date.now()
): string {
  const start = parseTime(job.launchedTime) ?? parseTime(job.submissionTime);
  if (!start) {
    return '';
  }
  const end = parseTime(job.completedTime)?.getTime() ?? now;
  return formatDuration(end - start.getTime());
}

/** `14:02` today, `May 3 14:02` otherwise. */
export function formatTime(value: DateTime | null | undefined): string {
  const date = parseTime(value);
  if (!date) {
    return '';
  }
  const now = new Date();
  const time = date.toLocaleTimeString(undefined, {
    hour: '2-digit',
    minute: '2-digit'
  });
  if (date.toDateString() === now.toDateString()) {
    return time;
  }
  return `${date.toLocaleDateString(undefined, { month: 'short', day: 'numeric' })} ${time}`;
}

export function formatBytes(n: number | null | undefined): string {
  if (n === null || n === undefined || !Number.isFinite(n)) {
    return '';
  }
  const units = ['B', 'KiB', 'MiB', 'GiB', 'TiB'];
  let value = n;
  let unit = 0;
  while (value >= 1024 && unit < units.length - 1) {
    value /= 1024;
    unit++;
  }
  return `${unit === 0 ? value : value.toFixed(value < 10 ? 1 : 0)} ${units[unit]}`;
}

/** A CSS class for a job or task state: `jp-PAI-state-running`. */
export function stateClass(state: string): string {
  return `jp-PAI-state jp-PAI-state-${state.toLowerCase()}`;
}
