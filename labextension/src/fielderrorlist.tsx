/**
 * Field errors or warnings as `path: message` lines, and the dialog that
 * shows them in full when a notification had to cut them short.
 */

import { Dialog, Notification, showDialog } from '@jupyterlab/apputils';
import * as React from 'react';

import { displayPath, type Notice } from './jobfile';
import type { FieldError } from './restmodels';

export function FieldErrorList(props: { errors: FieldError[] }): JSX.Element {
  return (
    <ul className="jp-PAI-field-errors jp-PAI-dialog-errors">
      {props.errors.map((e, i) => (
        <li key={i}>
          {e.path ? <code>{displayPath(e.path)}</code> : null}
          {e.path ? ': ' : ''}
          {e.message}
        </li>
      ))}
    </ul>
  );
}

/** A dialog listing every field error or warning. */
export async function showFieldErrors(
  title: string,
  errors: FieldError[]
): Promise<void> {
  await showDialog({
    title,
    body: <FieldErrorList errors={errors} />,
    buttons: [Dialog.okButton()]
  });
}

/** Show a notice as a notification, with "Details" when it has a list behind it. */
export function emitNotice(notice: Notice): void {
  Notification.emit(notice.message, notice.type, {
    autoClose: notice.autoClose,
    actions: notice.details.length
      ? [
          {
            label: 'Details',
            caption: 'Show every field and what is wrong with it',
            callback: () => void showFieldErrors(notice.title, notice.details)
          }
        ]
      : []
  });
}
