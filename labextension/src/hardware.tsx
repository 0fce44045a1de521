/**
 * The hardware view (as OpenPAI's hardware page): per node its GPUs used by
 * jobs and free, CPU and memory requested against allocatable, each bar
 * coloured by how full it is, the measured use where there is a measurement,
 * and the jobs on the node (open on click).
 */

import * as React from 'react';

import { HardwareBar as Bar } from './hardwarebar';
import type { NodeResources } from './restmodels';
import { describeError, PAIModel } from './panelstate';
import { NodeUtilisation } from './nodeutilisation';

const REFRESH_MS = 10 * 1000;

export function HardwareView(props: {
  model: PAIModel;
  onOpenJob?: (id: string) => void;
}): JSX.Element {
  const [nodes, setNodes] = React.useState<NodeResources[] | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  const { model } = props;
  // The panel keeps every section mounted: load when the cluster section comes
  // on screen and whenever a job starts or ends, not only on the timer, so a
  // job that started while another section was shown is there at once.
  const shown = model.panelVisible && model.section === 'cluster';
  const jobStates = model.jobs.map(j => `${j.id}:${j.state}`).join(',');
  React.useEffect(() => {
    if (!shown) {
      return;
    }
    let live = true;
    const load = () =>
      model.client.nodes().then(
        n => live && (setNodes(n), setError(null)),
        e => live && setError(describeError(e))
      );
    void load();
    const timer = window.setInterval(load, REFRESH_MS);
    return () => {
      live = false;
      window.clearInterval(timer);
    };
  }, [model, shown, jobStates]);
  return (
    <div className="jp-PAI-hardware">
      <div className="jp-PAI-section-title">Hardware</div>
      {error && (
        <div className="jp-PAI-error" role="alert">
          {error}
        </div>
      )}
      {nodes === null ? (
        <div className="jp-PAI-hint">Loading nodes…</div>
      ) : (
        nodes.map(n => (
          <div key={n.name} className="jp-PAI-hw-node" data-node={n.name}>
            <div className="jp-PAI-hw-name">{n.name}</div>
            <Bar
              label="GPU"
              used={n.gpuUsed}
              total={n.gpuTotal}
              text={`${n.gpuUsed} used · ${n.gpuFree} free of ${n.gpuTotal}`}
            />
            <Bar
              label="CPU"
              used={n.cpuRequested}
              total={n.cpuAllocatable}
              text={`${n.cpuRequested} of ${n.cpuAllocatable} requested`}
            />
            <Bar
              label="Memory"
              used={n.memoryMBRequested}
              total={n.memoryMBAllocatable}
              text={`${Math.round(n.memoryMBRequested / 1024)} of ${Math.round(n.memoryMBAllocatable / 1024)} GiB requested`}
            />
            <NodeUtilisation node={n} />
            {n.jobs.length > 0 && (
              <div className="jp-PAI-hw-jobs">
                {n.jobs.map(id => (
                  <button
                    key={id}
                    type="button"
                    className="jp-PAI-link-button"
                    onClick={() => props.onOpenJob?.(id)}
                  >
                    {id}
                  </button>
                ))}
              </div>
            )}
          </div>
        ))
      )}
    </div>
  );
}
