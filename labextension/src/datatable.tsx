/** A table of the panel's (jobs, tasks): scrolls sideways in its wrapper, heads its columns. */

import * as React from 'react';

export interface IColumn {
  label: React.ReactNode;
  /** Numbers align right. */
  numeric?: boolean;
}

export function DataTable(props: {
  /** The table's own class, beside `jp-PAI-table`. */
  className: string;
  columns: IColumn[];
  /** The rows. */
  children: React.ReactNode;
}): JSX.Element {
  return (
    <div className="jp-PAI-table-wrap">
      <table className={`jp-PAI-table ${props.className}`}>
        <thead>
          <tr>
            {props.columns.map((c, i) => (
              <th
                key={i}
                scope="col"
                className={c.numeric ? 'jp-PAI-num' : undefined}
              >
                {c.label}
              </th>
            ))}
          </tr>
        </thead>
        <tbody>{props.children}</tbody>
      </table>
    </div>
  );
}
