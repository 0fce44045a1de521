/**
 * Rows of a key, a value and a remove button, and a button that adds one: the
 * launch form's parameters and storage mounts.
 */

import * as React from 'react';

import { RemoveButton } from './removebutton';

/** The key or the value of a row: a text input, or a select of names. */
export interface IKeyValueCell<T> {
  /** The accessible name of row `i`'s control. */
  label: (row: T, i: number) => string;
  text: (row: T) => string;
  /** The row with `text` in this cell. */
  set: (row: T, text: string) => T;
  placeholder?: (row: T) => string;
  /** Names to pick from (a select) rather than text to type. */
  choices?: (row: T) => string[];
  /** The cell takes the row's spare width. */
  grow?: boolean;
}

export interface IKeyValueRowsProps<T> {
  rows: T[];
  onChange: (rows: T[]) => void;
  keyCell: IKeyValueCell<T>;
  valueCell: IKeyValueCell<T>;
  /** Controls between the value and the remove button. */
  extra?: (row: T, set: (row: T) => void) => React.ReactNode;
  removeLabel: (row: T) => string;
  /** Wraps row `i` in more (its path and errors). */
  wrap?: (row: T, i: number, content: JSX.Element) => JSX.Element;
  /** The add button's text and the row it adds after `rows`; none without. */
  add?: { label: string; row: (rows: T[]) => T };
}

function cellControl<T>(
  cell: IKeyValueCell<T>,
  row: T,
  i: number,
  set: (row: T) => void
): JSX.Element {
  const common = {
    'aria-label': cell.label(row, i),
    className: `jp-mod-styled jp-PAI-input${cell.grow ? ' jp-PAI-grow' : ''}`,
    value: cell.text(row),
    onChange: (e: React.ChangeEvent<HTMLInputElement | HTMLSelectElement>) =>
      set(cell.set(row, e.target.value))
  };
  if (cell.choices) {
    return (
      <select {...common}>
        {cell.choices(row).map(name => (
          <option key={name} value={name}>
            {name}
          </option>
        ))}
      </select>
    );
  }
  return <input {...common} placeholder={cell.placeholder?.(row)} />;
}

export function KeyValueRows<T>(props: IKeyValueRowsProps<T>): JSX.Element {
  const { rows, onChange, add } = props;
  return (
    <>
      {rows.map((row, i) => {
        const set = (next: T) =>
          onChange(rows.map((r, j) => (j === i ? next : r)));
        const content = (
          <div className="jp-PAI-row">
            {cellControl(props.keyCell, row, i, set)}
            {cellControl(props.valueCell, row, i, set)}
            {props.extra?.(row, set)}
            <RemoveButton
              label={props.removeLabel(row)}
              onClick={() => onChange(rows.filter((_, j) => j !== i))}
            />
          </div>
        );
        return (
          <React.Fragment key={i}>
            {props.wrap ? props.wrap(row, i, content) : content}
          </React.Fragment>
        );
      })}
      {add && (
        <button
          type="button"
          className="jp-mod-styled jp-PAI-link-button"
          onClick={() => onChange([...rows, add.row(rows)])}
        >
          {add.label}
        </button>
      )}
    </>
  );
}
