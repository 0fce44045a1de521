/**
 * The storage browser: folders of the storages the user may mount, text
 * previews, downloads, and "mount in the launch form" for a path.
 */

import { Clipboard, Notification } from '@jupyterlab/apputils';
import {
  addIcon,
  closeIcon,
  downloadIcon,
  fileIcon,
  folderIcon,
  refreshIcon
} from '@jupyterlab/ui-components';
import * as React from 'react';

import type { StorageContent } from './api';
import { formatBytes, formatTime } from './displayformat';
import type { StorageEntry } from './restmodels';
import { describeError, PAIModel } from './panelstate';
import { StorageEntryActions } from './storageentryactions';
import { StorageToolbar } from './storagetoolbar';
import {
  archiveUrl,
  deleteEntry,
  droppedFiles,
  makeFolder,
  moveEntry
} from './storagewrites';
import { UploadProgress } from './uploadprogress';
import { useUploads } from './useuploads';

const PREVIEW_BYTES = 256 * 1024;

/** The path a job sees for `path` of storage `name` when mounted. */
export function containerPath(mountPath: string, path: string): string {
  const base = mountPath.replace(/\/+$/, '');
  const rest = path.replace(/^\/+/, '');
  return rest ? `${base}/${rest}` : base || '/';
}

export function StorageBrowser(props: { model: PAIModel }): JSX.Element {
  const { model } = props;
  const storages = model.storages;
  const [name, setName] = React.useState<string>('');
  const [path, setPath] = React.useState('');
  const [content, setContent] = React.useState<StorageContent | null>(null);
  const [preview, setPreview] = React.useState<{
    path: string;
    content: StorageContent;
  } | null>(null);
  const [error, setError] = React.useState<string | null>(null);
  const [loading, setLoading] = React.useState(false);

  React.useEffect(() => {
    if (!name && storages.length) {
      setName(storages[0].name);
    }
  }, [storages]);

  const load = React.useCallback(async () => {
    if (!name) {
      return;
    }
    setLoading(true);
    try {
      const found = await model.client.storageContent(
        name,
        path,
        PREVIEW_BYTES
      );
      setError(null);
      if (found.kind === 'file') {
        setPreview({ path, content: found });
      } else {
        setContent(found);
      }
    } catch (e) {
      setError(describeError(e));
    } finally {
      setLoading(false);
    }
  }, [model, name, path]);

  React.useEffect(() => {
    void load();
  }, [load]);

  const storage = storages.find(s => s.name === name);
  const mountPath = storage?.mountPath ?? `/mnt/${name}`;
  const writable = !!storage && !storage.readOnly;
  const uploads = useUploads(model.client, name, () => void load());
  const [dropping, setDropping] = React.useState(false);

  // A write, then the listing again; the server's sentence on failure.
  const write = async (what: () => Promise<unknown>) => {
    let failure: string | null = null;
    try {
      await what();
    } catch (e) {
      failure = describeError(e);
    }
    await load(); // clears the error line, so the failure is set after it
    setError(failure);
  };
  const folder = preview
    ? preview.path.split('/').slice(0, -1).join('/')
    : path;
  const onDrop = async (e: React.DragEvent) => {
    e.preventDefault();
    setDropping(false);
    if (writable) {
      uploads.start(await droppedFiles(e.dataTransfer), folder);
    }
  };

  const mount = (p: string) => {
    const inJob = containerPath(mountPath, p);
    model.requestMount(name, p);
    Clipboard.copyToSystem(inJob);
    Notification.info(
      `Storage ${name} is mounted in the launch form at ${mountPath}; ${inJob} copied.`,
      { autoClose: 4000 }
    );
  };

  const downloadUrl = (p: string) =>
    model.client.downloadUrl(
      `${model.client.storageEndpoint(name, p)}?download=1`
    );

  if (!storages.length) {
    return (
      <div className="jp-PAI-empty">
        {model.infoError ??
          'No storage is configured for you. An administrator lists storages in the server configuration.'}
      </div>
    );
  }

  const parts = path.split('/').filter(Boolean);
  const entries: StorageEntry[] =
    content?.kind === 'directory'
      ? [...content.listing.entries].sort((a, b) =>
          a.type === b.type
            ? a.name.localeCompare(b.name)
            : a.type === 'directory'
              ? -1
              : 1
        )
      : [];

  return (
    <div
      className={`jp-PAI-storage${dropping ? ' jp-mod-dropping' : ''}`}
      onDragOver={e => {
        if (writable && e.dataTransfer.types.includes('Files')) {
          e.preventDefault();
          setDropping(true);
        }
      }}
      onDragLeave={() => setDropping(false)}
      onDrop={e => void onDrop(e)}
    >
      <div className="jp-PAI-filters">
        <select
          aria-label="Storage"
          className="jp-mod-styled jp-PAI-input"
          value={name}
          onChange={e => {
            setName(e.target.value);
            setPath('');
            setPreview(null);
          }}
        >
          {storages.map(s => (
            <option key={s.name} value={s.name}>
              {s.name}
              {s.readOnly ? ' (read-only)' : ''}
            </option>
          ))}
        </select>
        <span className="jp-PAI-spacer" />
        <button
          type="button"
          className="jp-mod-styled jp-PAI-link-button"
          onClick={() => mount(path)}
          title={`Mount ${name} in the launch form and copy ${containerPath(mountPath, path)}`}
        >
          Mount this folder
        </button>
        <button
          type="button"
          className="jp-mod-styled jp-PAI-icon-button"
          aria-label="Refresh storage"
          title="Refresh"
          onClick={() => void load()}
        >
          <refreshIcon.react tag="span" className="jp-PAI-icon" />
        </button>
      </div>
      {storage?.description && (
        <div className="jp-PAI-hint">{storage.description}</div>
      )}
      <StorageToolbar
        storage={name}
        path={folder}
        readOnly={!writable}
        archiveUrl={archiveUrl(model.client, name, folder)}
        onFiles={files =>
          uploads.start(
            files.map(file => ({ file, path: file.name })),
            folder
          )
        }
        onNewFolder={p => void write(() => makeFolder(model.client, name, p))}
      />
      <UploadProgress
        items={uploads.items}
        running={uploads.running}
        onCancel={uploads.cancel}
        onClose={uploads.clear}
      />
      <nav className="jp-PAI-breadcrumbs" aria-label="Folder">
        <button
          type="button"
          className="jp-PAI-link-button"
          onClick={() => {
            setPath('');
            setPreview(null);
          }}
        >
          {name}
        </button>
        {parts.map((part, i) => (
          <React.Fragment key={i}>
            <span aria-hidden="true">/</span>
            <button
              type="button"
              className="jp-PAI-link-button"
              onClick={() => {
                setPath(parts.slice(0, i + 1).join('/'));
                setPreview(null);
              }}
            >
              {part}
            </button>
          </React.Fragment>
        ))}
        <span className="jp-PAI-muted">
          {' '}
          → {containerPath(mountPath, path)}
        </span>
      </nav>
      {error && (
        <div className="jp-PAI-error" role="alert">
          {error}
        </div>
      )}
      {loading && !content && <div className="jp-PAI-empty">Loading…</div>}
      {content?.kind === 'directory' && entries.length === 0 && (
        <div className="jp-PAI-empty">This folder is empty.</div>
      )}
      {entries.length > 0 && (
        <ul className="jp-PAI-entries" aria-label={`Files in ${name}/${path}`}>
          {entries.map(entry => (
            <li
              key={entry.path}
              className={`jp-PAI-entry jp-PAI-entry-${entry.type}`}
            >
              <button
                type="button"
                className="jp-PAI-link-button jp-PAI-entry-name"
                onClick={() => {
                  if (entry.type === 'directory') {
                    setPath(entry.path);
                    setPreview(null);
                  } else {
                    setPath(entry.path);
                  }
                }}
              >
                {entry.type === 'directory' ? (
                  <folderIcon.react tag="span" className="jp-PAI-icon" />
                ) : (
                  <fileIcon.react tag="span" className="jp-PAI-icon" />
                )}
                {entry.name}
              </button>
              <span className="jp-PAI-muted jp-PAI-entry-meta">
                {entry.type === 'file' ? formatBytes(entry.size) : ''}{' '}
                {formatTime(entry.modified)}
              </span>
              {entry.type === 'file' && (
                <a
                  className="jp-PAI-link-button"
                  href={downloadUrl(entry.path)}
                  download={entry.name}
                  title={`Download ${entry.name}`}
                  aria-label={`Download ${entry.name}`}
                >
                  <downloadIcon.react tag="span" className="jp-PAI-icon" />
                </a>
              )}
              <button
                type="button"
                className="jp-PAI-link-button"
                title={`Mount ${name} in the launch form and copy ${containerPath(mountPath, entry.path)}`}
                aria-label={`Use ${entry.name} in the launch form`}
                onClick={() => mount(entry.path)}
              >
                <addIcon.react tag="span" className="jp-PAI-icon" />
              </button>
              {writable && (
                <StorageEntryActions
                  storage={name}
                  entry={entry}
                  onRename={(e, to) =>
                    void write(() => moveEntry(model.client, name, e.path, to))
                  }
                  onDelete={(e, recursive) =>
                    void write(() =>
                      deleteEntry(model.client, name, e.path, recursive)
                    )
                  }
                />
              )}
            </li>
          ))}
        </ul>
      )}
      {preview && preview.content.kind === 'file' && (
        <section
          className="jp-PAI-preview"
          aria-label={`Preview of ${preview.path}`}
        >
          <div className="jp-PAI-filters">
            <strong>{preview.path.split('/').pop()}</strong>
            <span className="jp-PAI-spacer" />
            <a
              className="jp-mod-styled jp-PAI-link-button"
              href={downloadUrl(preview.path)}
              download={preview.path.split('/').pop()}
            >
              Download
            </a>
            <button
              type="button"
              className="jp-mod-styled jp-PAI-icon-button"
              aria-label="Close preview"
              onClick={() => {
                setPreview(null);
                setPath(preview.path.split('/').slice(0, -1).join('/'));
              }}
            >
              <closeIcon.react tag="span" className="jp-PAI-icon" />
            </button>
          </div>
          {isText(preview.content) ? (
            <pre className="jp-PAI-preview-text">
              {preview.content.text}
              {preview.content.truncated &&
                `\n… (first ${formatBytes(PREVIEW_BYTES)} shown; download for the rest)`}
            </pre>
          ) : (
            <div className="jp-PAI-empty">
              No preview for {preview.content.contentType || 'this file'};
              download it instead.
            </div>
          )}
        </section>
      )}
    </div>
  );
}

function isText(content: StorageContent): boolean {
  if (content.kind !== 'file') {
    return false;
  }
  const type = content.contentType;
  if (/^text\/|json|yaml|xml|javascript|x-sh|x-python|csv/.test(type)) {
    return true;
  }
  // Unknown types: text if the first bytes decode without replacement characters.
  const head = content.text.slice(0, 4096);
  return !head.includes('\ufffd') && !head.includes(String.fromCharCode(0));
}
