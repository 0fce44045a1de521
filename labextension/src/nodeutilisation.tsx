/**
 * A node's measured use in the hardware view: CPU, memory and GPU busy (%), from
 * Prometheus's node and DCGM exporters on Kubernetes, from this machine locally;
 * or why there is no measurement. Requests say what jobs hold, this what they use.
 */

import * as React from 'react';

import { HardwareBar } from './hardwarebar';
import type { NodeResources } from './restmodels';

export function NodeUtilisation(props: { node: NodeResources }): JSX.Element {
  const { node } = props;
  const measured: [string, number | null][] = [
    ['CPU use', node.cpuPercent],
    ['Memory use', node.memoryPercent],
    ['GPU use', node.gpuPercent]
  ];
  return (
    <div className="jp-PAI-hw-util">
      {measured.map(([label, percent]) =>
        percent === null ? null : (
          <HardwareBar
            key={label}
            label={label}
            used={percent}
            total={100}
            text={`${percent} % in use`}
          />
        )
      )}
      {node.utilisationNote && (
        <div className="jp-PAI-hint jp-PAI-hw-util-note">
          {node.utilisationNote}
        </div>
      )}
    </div>
  );
}
