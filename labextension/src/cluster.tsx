/**
 * Every virtual cluster's GPUs: used, free and asked for by waiting jobs; where VCs
 * borrow each other's idle GPUs, also guaranteed, borrowed and lent.
 */

import * as React from 'react';

import { AbnormalJobsList } from './abnormaljobs';
import { ClusterCheck } from './clustercheck';
import { HardwareView } from './hardware';
import { VcUsage } from './vcusage';
import type { JobSummary } from './restmodels';
import { PAIModel } from './panelstate';

export function ClusterView(props: {
  model: PAIModel;
  onOpen?: (job: JobSummary) => void;
}): JSX.Element {
  const { model } = props;
  const vcs = model.virtualClusters;
  // Shown whatever else fails: a missing permission is often why nothing loads.
  const check = (
    <ClusterCheck shown={model.panelVisible && model.section === 'cluster'} />
  );
  if (!model.loaded) {
    return model.error ? (
      <>
        {check}
        <div className="jp-PAI-error" role="alert">
          {model.error}
        </div>
      </>
    ) : (
      <>
        {check}
        <div className="jp-PAI-empty">Loading virtual clusters…</div>
      </>
    );
  }
  if (!vcs.length) {
    return (
      <>
        {check}
        <div className="jp-PAI-empty">
          No virtual cluster is available to you.
        </div>
      </>
    );
  }
  const total = vcs.reduce(
    (t, vc) => ({
      // A borrower's capacity includes other VCs' GPUs: count guarantees.
      cap: t.cap + (vc.guaranteedGpus ?? vc.capacity.gpu),
      used: t.used + vc.used.gpu,
      queued: t.queued + vc.queuedJobs
    }),
    { cap: 0, used: 0, queued: 0 }
  );
  const sharing = vcs.some(vc => vc.mayBorrow);
  return (
    <div className="jp-PAI-cluster">
      {model.error && (
        <div className="jp-PAI-error" role="alert">
          {model.error}
        </div>
      )}
      {check}
      <div className="jp-PAI-hint">
        {total.used} of {total.cap} GPUs in use across {vcs.length} virtual
        cluster
        {vcs.length === 1 ? '' : 's'}; {total.queued} job
        {total.queued === 1 ? '' : 's'} waiting.
      </div>
      {vcs.map(vc => (
        <VcUsage
          key={vc.name}
          vc={vc}
          sharing={sharing}
          kernels={
            model.jobs.filter(
              j =>
                j.kind === 'kernel' &&
                j.state === 'RUNNING' &&
                j.virtualCluster === vc.name
            ).length
          }
        />
      ))}
      <AbnormalJobsList model={model} onOpen={props.onOpen} />
      <HardwareView
        model={model}
        onOpenJob={id => {
          const job = model.jobs.find(j => j.id === id);
          if (job) {
            props.onOpen?.(job);
          }
        }}
      />
    </div>
  );
}
