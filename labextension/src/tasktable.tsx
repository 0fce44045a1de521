/** A job's tasks: where each runs, its ports, GPUs and their use, and its log links. */

import * as React from 'react';

import { AttemptLinks } from './attemptlinks';
import { DataTable, type IColumn } from './datatable';
import { stateClass } from './displayformat';
import type { JobDetailModel } from './jobdetailmodel';
import type { JobDetail, TaskStatus } from './restmodels';
import { TaskPorts } from './taskports';
import { UtilisationChart } from './utilisationchart';

const COLUMNS: IColumn[] = [
  { label: 'Task' },
  { label: 'State' },
  { label: 'Node' },
  { label: 'IP' },
  { label: 'Ports' },
  { label: 'GPUs' },
  { label: 'GPU use' },
  { label: 'Exit code', numeric: true },
  { label: 'Retries', numeric: true },
  { label: 'Log' }
];

/** "2 (0,1)" where device ids are known, "2" where only the count is. */
function gpuCell(t: TaskStatus): string {
  if (!t.gpuNumber) {
    return '—';
  }
  return t.gpus.length
    ? `${t.gpuNumber} (${t.gpus.join(',')})`
    : `${t.gpuNumber}`;
}

export function TaskTable(props: {
  model: JobDetailModel;
  job: JobDetail;
}): JSX.Element {
  const { model, job } = props;
  const selected = model.selected;
  return (
    <DataTable className="jp-PAI-tasks-table" columns={COLUMNS}>
      {job.tasks.map(t => {
        const isSelected =
          selected?.role === t.role && selected?.index === t.index;
        const current = isSelected && selected?.attempt === undefined;
        return (
          <tr
            key={`${t.role}-${t.index}`}
            className={isSelected ? 'jp-mod-selected' : ''}
            data-task={`${t.role}-${t.index}`}
          >
            <td>
              {t.role}-{t.index}
            </td>
            <td>
              <span className={stateClass(t.state)}>{t.state}</span>
            </td>
            <td>{t.node ?? '—'}</td>
            <td>{t.ip ?? '—'}</td>
            <td className="jp-PAI-ports">
              <TaskPorts
                jobId={job.id}
                task={t}
                url={path => model.pai.client.url(path)}
                onOpen={p => model.openPort?.(p, job.name)}
              />
            </td>
            <td className="jp-PAI-gpus">{gpuCell(t)}</td>
            <td>
              {t.gpuNumber > 0 ? (
                <UtilisationChart
                  task={`${t.role}-${t.index}`}
                  history={model.utilisation}
                />
              ) : (
                '—'
              )}
            </td>
            <td className="jp-PAI-num" title={t.exitReason ?? undefined}>
              {t.exitCode ?? '—'}
              {t.exitReason ? ` (${t.exitReason})` : ''}
            </td>
            <td className="jp-PAI-num">{t.retries}</td>
            <td>
              <button
                type="button"
                className="jp-mod-styled jp-PAI-link-button"
                aria-pressed={current}
                onClick={() =>
                  (model.selected = { role: t.role, index: t.index })
                }
              >
                {current ? 'Shown' : 'Show log'}
              </button>
              <AttemptLinks
                task={t}
                shown={isSelected ? selected?.attempt : undefined}
                onShow={attempt =>
                  (model.selected = { role: t.role, index: t.index, attempt })
                }
              />
            </td>
          </tr>
        );
      })}
    </DataTable>
  );
}
