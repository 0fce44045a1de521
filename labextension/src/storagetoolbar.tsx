/**
 * The storage browser's write actions for the folder shown: upload files, new
 * folder, download the folder as a zip. Hidden for a read-only storage except
 * the download.
 */

import { InputDialog } from '@jupyterlab/apputils';
import {
  downloadIcon,
  fileUploadIcon,
  newFolderIcon
} from '@jupyterlab/ui-components';
import * as React from 'react';

import { joinPath } from './uploadplan';

export function StorageToolbar(props: {
  storage: string;
  path: string;
  readOnly: boolean;
  archiveUrl: string;
  onFiles: (files: File[]) => void;
  onNewFolder: (path: string) => void;
}): JSX.Element {
  const { storage, path, readOnly } = props;
  const input = React.useRef<HTMLInputElement>(null);
  const folderName = path.split('/').pop() || storage;

  const newFolder = async () => {
    const answer = await InputDialog.getText({
      title: `New folder in ${storage}/${path}`,
      label: 'Name',
      placeholder: 'folder'
    });
    const name = answer.value?.trim();
    if (answer.button.accept && name) {
      props.onNewFolder(joinPath(path, name));
    }
  };

  return (
    <div className="jp-PAI-filters jp-PAI-storage-toolbar">
      {!readOnly && (
        <>
          <input
            ref={input}
            type="file"
            multiple
            hidden
            aria-label="Files to upload"
            className="jp-PAI-upload-input"
            onChange={e => {
              props.onFiles(Array.from(e.target.files ?? []));
              e.target.value = '';
            }}
          />
          <button
            type="button"
            className="jp-mod-styled jp-PAI-link-button"
            title={`Upload files into ${storage}/${path}`}
            onClick={() => input.current?.click()}
          >
            <fileUploadIcon.react tag="span" className="jp-PAI-icon" />
            Upload
          </button>
          <button
            type="button"
            className="jp-mod-styled jp-PAI-link-button"
            title={`New folder in ${storage}/${path}`}
            onClick={() => void newFolder()}
          >
            <newFolderIcon.react tag="span" className="jp-PAI-icon" />
            New folder
          </button>
        </>
      )}
      {readOnly && (
        <span className="jp-PAI-muted">read-only: browse and download</span>
      )}
      <span className="jp-PAI-spacer" />
      <a
        className="jp-mod-styled jp-PAI-link-button"
        href={props.archiveUrl}
        download={`${folderName}.zip`}
        title={`Download ${storage}/${path} as a zip archive`}
      >
        <downloadIcon.react tag="span" className="jp-PAI-icon" />
        Download folder
      </a>
    </div>
  );
}
