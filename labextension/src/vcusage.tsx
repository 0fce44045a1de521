/** One virtual cluster's GPUs: used, free, asked for by waiting jobs, what it shares, and by type. */

import * as React from 'react';

import type { VirtualCluster } from './restmodels';
import { VcGpuTypes } from './vcgputypes';

function pct(part: number, whole: number): string {
  return whole > 0 ? `${Math.min(100, (100 * part) / whole)}%` : '0%';
}

/** "2 guaranteed · 2 borrowed · 0 lent · may borrow", or '' without a guarantee. */
export function vcSharing(vc: VirtualCluster): string {
  if (vc.guaranteedGpus === null || vc.guaranteedGpus === undefined) {
    return '';
  }
  const parts = [
    `${vc.guaranteedGpus} guaranteed`,
    `${vc.borrowedGpus ?? 0} borrowed`,
    `${vc.lentGpus ?? 0} lent`
  ];
  if (vc.mayBorrow) {
    parts.push('may borrow');
  }
  if (!vc.mayLend) {
    parts.push('lends none');
  }
  return parts.join(' · ');
}

export function VcUsage(props: {
  vc: VirtualCluster;
  /** Show guaranteed, borrowed and lent GPUs (some VC may borrow). */
  sharing?: boolean;
  /** The user's remote kernels running in this VC (jobs of kind kernel). */
  kernels?: number;
}): JSX.Element {
  const { vc } = props;
  const cap = vc.capacity.gpu;
  const sharing = props.sharing ? vcSharing(vc) : '';
  const label = `${vc.name}: ${vc.used.gpu} of ${cap} GPUs used, ${vc.free.gpu} free, ${vc.queued.gpu} asked for by ${vc.queuedJobs} waiting job${vc.queuedJobs === 1 ? '' : 's'}${sharing ? `; ${sharing}` : ''}`;
  return (
    <div className="jp-PAI-vc" data-vc={vc.name}>
      <div className="jp-PAI-vc-head">
        <strong>{vc.name}</strong>
        <span className="jp-PAI-muted">
          {vc.free.gpu}/{cap} GPUs free
        </span>
      </div>
      <div
        className="jp-PAI-bar"
        role="meter"
        aria-label={label}
        aria-valuemin={0}
        aria-valuemax={cap}
        aria-valuenow={vc.used.gpu}
        title={label}
      >
        <div
          className="jp-PAI-bar-used"
          style={{ width: pct(vc.used.gpu, cap) }}
        />
      </div>
      <div className="jp-PAI-vc-stats">
        <span>
          <span className="jp-PAI-swatch jp-PAI-swatch-used" /> used{' '}
          {vc.used.gpu}
        </span>
        <span>
          <span className="jp-PAI-swatch jp-PAI-swatch-free" /> free{' '}
          {vc.free.gpu}
        </span>
        <span>
          queued {vc.queued.gpu} GPU{vc.queued.gpu === 1 ? '' : 's'} (
          {vc.queuedJobs} job
          {vc.queuedJobs === 1 ? '' : 's'})
        </span>
        <span>running {vc.runningJobs}</span>
        {!!props.kernels && (
          <span
            className="jp-PAI-vc-kernels"
            title="Your remote kernels holding GPUs in this VC"
          >
            kernels {props.kernels}
          </span>
        )}
      </div>
      {sharing && (
        <div className="jp-PAI-muted jp-PAI-vc-sharing">{sharing}</div>
      )}
      <VcGpuTypes vc={vc} />
      {vc.description && <div className="jp-PAI-hint">{vc.description}</div>}
    </div>
  );
}
