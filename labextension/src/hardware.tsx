/**
 * The hardware view (as OpenPAI's hardware page): per node its GPUs used by
 * jobs and free, CPU and memory requested against allocatable, each bar
 * coloured by how full it is, and the jobs on the node (open on click).
 */

import * as React from 'react';

import type { NodeResources } from './models';
import { describeError, PAIModel } from './model';

/** How full a resource is, for its colour: OpenPAI's green, yellow, red. */
export function fullness(used: number, total: number): 'low' | 'mid' | 'high' {
  const ratio = total > 0 ? used / total : 0;
  return ratio >= 0.8 ? 'high' : ratio >= 0.5 ? 'mid' : 'low';
}

function Bar(props: {
  label: string;
  used: number;
  total: number;
  text: string;
}): JSX.Element {
  const { used, total } = props;
  const pct = total > 0 ? Math.min(100, (100 * used) / total) : 0;
  return (
    <div className="jp-PAI-hw-row" data-resource={props.label}>
      <span className="jp-PAI-hw-label">{props.label}</span>
      <span className="jp-PAI-hw-bar">
        <span
          className={`jp-PAI-hw-fill jp-PAI-hw-${fullness(used, total)}`}
          style={{ width: `${pct}%` }}
        />
      </span>
      <span className="jp-PAI-hw-text">{props.text}</span>
    </div>
  );
}

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
