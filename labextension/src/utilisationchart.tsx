/**
 * A small GPU-use chart per task in the job detail: the samples the tab has
 * read while the job runs (GET jobs/{id}/utilisation at each refresh), GPU %
 * as a line over 0–100 and the latest GPU % and memory as text. A task whose
 * GPUs nothing measures shows a dash with the server's note, not a flat 0.
 */

import * as React from 'react';

import type { IGpuSample, UtilisationHistory } from './utilisationhistory';

/** SVG polyline points of GPU % over a `width` x `height` box (100 % at the top). */
export function sparkPoints(
  samples: IGpuSample[],
  width: number,
  height: number
): string {
  const known = samples.filter(s => s.gpuPercent !== null);
  if (known.length === 0) {
    return '';
  }
  const step = known.length > 1 ? width / (known.length - 1) : 0;
  return known
    .map((s, i) => {
      const pct = Math.max(0, Math.min(100, s.gpuPercent ?? 0));
      const y = height - (pct / 100) * height;
      return `${(i * step).toFixed(1)},${y.toFixed(1)}`;
    })
    .join(' ');
}

/** "85 % · 50000 MiB" for the latest sample. */
export function latestText(s: IGpuSample | undefined): string {
  if (!s) {
    return '—';
  }
  const parts: string[] = [];
  if (s.gpuPercent !== null) {
    parts.push(`${Math.round(s.gpuPercent)} %`);
  }
  if (s.memoryMB !== null) {
    parts.push(`${Math.round(s.memoryMB)} MiB`);
  }
  return parts.join(' · ') || '—';
}

const W = 96;
const H = 24;

export function UtilisationChart(props: {
  task: string;
  history: UtilisationHistory;
}): JSX.Element {
  const samples = props.history.samples(props.task);
  const last = samples[samples.length - 1];
  if (!last) {
    return (
      <span
        className="jp-PAI-util jp-PAI-muted"
        title={props.history.note ?? 'not measured'}
      >
        —
      </span>
    );
  }
  const points = sparkPoints(samples, W, H);
  return (
    <span
      className="jp-PAI-util"
      data-task={props.task}
      title={`GPU utilisation of ${props.task}, last ${samples.length} samples`}
    >
      <svg
        className="jp-PAI-util-chart"
        width={W}
        height={H}
        viewBox={`0 0 ${W} ${H}`}
        role="img"
        aria-label={`GPU utilisation of ${props.task}`}
      >
        <rect x={0} y={0} width={W} height={H} className="jp-PAI-util-bg" />
        {points && (
          <polyline points={points} className="jp-PAI-util-line" fill="none" />
        )}
      </svg>
      <span className="jp-PAI-util-text">{latestText(last)}</span>
    </span>
  );
}
