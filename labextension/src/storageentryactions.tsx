/** Rename and delete of one entry of the storage browser (writable storages only). */

import { Dialog, InputDialog, showDialog } from '@jupyterlab/apputils';
import { deleteIcon, editIcon } from '@jupyterlab/ui-components';
import * as React from 'react';

import type { StorageEntry } from './restmodels';
import { joinPath } from './uploadplan';

export function StorageEntryActions(props: {
  storage: string;
  entry: StorageEntry;
  onRename: (entry: StorageEntry, to: string) => void;
  onDelete: (entry: StorageEntry, recursive: boolean) => void;
}): JSX.Element {
  const { storage, entry } = props;
  const folder = entry.path.split('/').slice(0, -1).join('/');
  const isFolder = entry.type === 'directory';

  const rename = async () => {
    const answer = await InputDialog.getText({
      title: `Rename ${storage}/${entry.path}`,
      label: 'New name (a path moves it inside the storage)',
      text: entry.name
    });
    const name = answer.value?.trim();
    if (answer.button.accept && name && name !== entry.name) {
      props.onRename(entry, joinPath(folder, name));
    }
  };

  const remove = async () => {
    const answer = await showDialog({
      title: isFolder ? 'Delete folder' : 'Delete file',
      body: isFolder
        ? `Delete the folder ${storage}/${entry.path} and everything in it? This cannot be undone.`
        : `Delete ${storage}/${entry.path}? This cannot be undone.`,
      buttons: [Dialog.cancelButton(), Dialog.warnButton({ label: 'Delete' })]
    });
    if (answer.button.accept) {
      props.onDelete(entry, isFolder);
    }
  };

  return (
    <>
      <button
        type="button"
        className="jp-PAI-link-button"
        title={`Rename ${entry.name}`}
        aria-label={`Rename ${entry.name}`}
        onClick={() => void rename()}
      >
        <editIcon.react tag="span" className="jp-PAI-icon" />
      </button>
      <button
        type="button"
        className="jp-PAI-link-button"
        title={`Delete ${entry.name}`}
        aria-label={`Delete ${entry.name}`}
        onClick={() => void remove()}
      >
        <deleteIcon.react tag="span" className="jp-PAI-icon" />
      </button>
    </>
  );
}
