/** A virtual cluster's GPUs by type: one compact row per type, nothing where untyped. */

import * as React from 'react';

import { UNKNOWN_GPU_TYPE, vcGpuTypes } from './gputypes';
import type { VirtualCluster } from './restmodels';

export function VcGpuTypes(props: { vc: VirtualCluster }): JSX.Element | null {
  const types = vcGpuTypes(props.vc);
  if (!types.length) {
    return null;
  }
  return (
    <table
      className="jp-PAI-vc-gputypes"
      aria-label={`${props.vc.name} GPUs by type`}
    >
      <thead>
        <tr>
          <th scope="col">GPU type</th>
          <th scope="col">used / capacity</th>
          <th scope="col">free</th>
        </tr>
      </thead>
      <tbody>
        {types.map(t => (
          <tr
            key={t.name}
            data-gpu-type={t.name}
            title={
              t.name === UNKNOWN_GPU_TYPE
                ? 'GPUs on nodes without a GPU type label: no job can ask for them by type'
                : (t.product ?? t.name)
            }
          >
            <th scope="row">{t.name}</th>
            <td className="jp-PAI-vc-gputype-used">
              {t.used} / {t.capacity}
            </td>
            <td className="jp-PAI-vc-gputype-free">{t.free}</td>
          </tr>
        ))}
      </tbody>
    </table>
  );
}
