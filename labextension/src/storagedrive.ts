/**
 * A storage as a JupyterLab drive (`work:` …): JupyterLab's file browser,
 * editors and viewers read and write the storage through the REST API.
 */

import { Contents, ServerConnection } from '@jupyterlab/services';
import { ISignal, Signal } from '@lumino/signaling';

import type { PAIClient } from './api';
import { PAIRequestError } from './apirequest';
import {
  chooseFormat,
  contentBytes,
  distrust,
  EMPTY_NOTEBOOK,
  fileModel,
  freeName,
  listingModel,
  readsAsNotebook,
  withoutTrust
} from './drivemodel';
import {
  NOTEBOOK_TRUST_HEADER,
  type Storage,
  type StorageEntry,
  type StorageListing
} from './restmodels';
import { uploadFile } from './storageupload';
import { deleteEntry, makeFolder, moveEntry } from './storagewrites';
import { joinPath } from './uploadplan';

/**
 * The most a notebook sent whole to be signed may have: the server's default
 * `storage_piece_bytes`. A bigger one is saved in pieces, unsigned.
 */
const SIGNED_NOTEBOOK_BYTES = 64 * 1024 * 1024;

export class StorageDrive implements Contents.IDrive {
  readonly name: string;
  readonly serverSettings: ServerConnection.ISettings;
  private _fileChanged = new Signal<this, Contents.IChangedArgs>(this);
  private _disposed = false;
  /** Pieces of a chunked save (the file browser's upload), until the last. */
  private _chunks = new Map<string, Uint8Array[]>();

  constructor(
    readonly client: PAIClient,
    readonly storage: Storage
  ) {
    this.name = storage.name;
    this.serverSettings = client.serverSettings;
  }

  get fileChanged(): ISignal<this, Contents.IChangedArgs> {
    return this._fileChanged;
  }

  get isDisposed(): boolean {
    return this._disposed;
  }

  dispose(): void {
    this._disposed = true;
    Signal.clearData(this);
  }

  private get writable(): boolean {
    return !this.storage.readOnly;
  }

  private endpoint(path: string): string {
    return this.client.storageEndpoint(this.name, path);
  }

  async get(
    localPath: string,
    options: Contents.IFetchOptions = {}
  ): Promise<Contents.IModel> {
    const path = joinPath(localPath);
    // A notebook is read through the server's notary (`?notebook=1`), which
    // marks its cells trusted only where it signed them; one too big for that
    // (413) is read as it is, and trusted by nothing.
    const asNotebook =
      options.content !== false && readsAsNotebook(path, options);
    const response = asNotebook
      ? await this.client
          .raw(`${this.endpoint(path)}?notebook=1`)
          .catch((error: unknown) => {
            if (error instanceof PAIRequestError && error.status === 413) {
              return this.client.raw(this.endpoint(path));
            }
            throw error;
          })
      : await this.client.raw(this.endpoint(path));
    // A file comes with Content-Disposition; a folder is the listing JSON.
    if (!response.headers.get('Content-Disposition')) {
      const listing = (await response.json()) as StorageListing;
      return listingModel(
        listing,
        path,
        this.writable,
        options.content !== false
      );
    }
    const lastModified = response.headers.get('Last-Modified');
    const size = Number(response.headers.get('Content-Length') ?? NaN);
    if (options.content === false) {
      void response.body?.cancel().catch(() => undefined);
      return fileModel(path, null, {
        format: 'text',
        lastModified,
        size: Number.isFinite(size) ? size : null,
        writable: this.writable
      });
    }
    const bytes = new Uint8Array(await response.arrayBuffer());
    const model = fileModel(path, bytes, {
      format: chooseFormat(path, bytes, options),
      lastModified,
      size: bytes.byteLength,
      writable: this.writable,
      type: options.type
    });
    // Whatever was asked and answered: no notebook the server did not vouch
    // for reaches JupyterLab with a trusted cell.
    if (
      model.type === 'notebook' &&
      model.format === 'json' &&
      response.headers.get(NOTEBOOK_TRUST_HEADER) !== 'true'
    ) {
      distrust(model.content);
    }
    return model;
  }

  async getDownloadUrl(localPath: string): Promise<string> {
    return this.client.downloadUrl(
      `${this.endpoint(joinPath(localPath))}?download=1`
    );
  }

  async save(
    localPath: string,
    options: Partial<Contents.IModel> = {}
  ): Promise<Contents.IModel> {
    const path = joinPath(localPath);
    if (options.type === 'directory') {
      await makeFolder(this.client, this.name, path);
    } else {
      const bytes = contentBytes(options);
      const chunk = options.chunk;
      if (chunk !== undefined && chunk !== -1) {
        // The browser's uploader sends 1 MiB pieces without the total, which a
        // Content-Range needs: keep them until the last, then send in 8 MiB pieces.
        const held = chunk === 1 ? [] : (this._chunks.get(path) ?? []);
        held.push(bytes);
        this._chunks.set(path, held);
        return this.get(path, { content: false }).catch(() => ({
          ...fileModel(path, null, {
            format: 'text',
            lastModified: null,
            size: null,
            writable: true
          })
        }));
      }
      const parts = [...(this._chunks.get(path) ?? []), bytes];
      this._chunks.delete(path);
      const notebook = options.type === 'notebook' && parts.length === 1;
      if (!(notebook && (await this.saveSigned(path, bytes)))) {
        // A notebook too big to sign goes in pieces too, without `trusted`.
        const sent = notebook
          ? [
              contentBytes({
                ...options,
                content: withoutTrust(options.content)
              })
            ]
          : parts;
        await uploadFile(
          this.client.url(this.endpoint(path)),
          new Blob(sent as BlobPart[]),
          this.serverSettings,
          () => undefined
        );
      }
    }
    const model = await this.get(path, { content: false });
    this._fileChanged.emit({ type: 'save', oldValue: null, newValue: model });
    return model;
  }

  /**
   * A notebook sent whole with `?notebook=1`: the server writes it without
   * `trusted` and signs it if every code cell is trusted, as Jupyter saves.
   * False where it is too big for that (the server's limit, 413).
   */
  private async saveSigned(path: string, bytes: Uint8Array): Promise<boolean> {
    if (bytes.byteLength > SIGNED_NOTEBOOK_BYTES) {
      return false;
    }
    try {
      await uploadFile(
        `${this.client.url(this.endpoint(path))}?notebook=1`,
        new Blob([bytes as BlobPart]),
        this.serverSettings,
        () => undefined,
        undefined,
        Math.max(bytes.byteLength, 1)
      );
      return true;
    } catch (error) {
      if (error instanceof PAIRequestError && error.status === 413) {
        return false;
      }
      throw error;
    }
  }

  private async names(folder: string): Promise<Set<string>> {
    const listing = await this.get(folder, { content: true });
    return new Set(
      (listing.content as Contents.IModel[]).map(entry => entry.name)
    );
  }

  async newUntitled(
    options: Contents.ICreateOptions = {}
  ): Promise<Contents.IModel> {
    const folder = joinPath(options.path ?? '');
    const type = options.type ?? 'file';
    const taken = await this.names(folder);
    const ext = options.ext ? `.${options.ext.replace(/^\./, '')}` : '.txt';
    const base =
      type === 'directory'
        ? 'Untitled Folder'
        : type === 'notebook'
          ? 'Untitled.ipynb'
          : `untitled${ext}`;
    const path = joinPath(folder, freeName(base, taken));
    const model =
      type === 'directory'
        ? await this.save(path, { type: 'directory' })
        : type === 'notebook'
          ? await this.save(path, {
              type: 'notebook',
              format: 'json',
              content: EMPTY_NOTEBOOK
            })
          : await this.save(path, {
              type: 'file',
              format: 'text',
              content: ''
            });
    this._fileChanged.emit({ type: 'new', oldValue: null, newValue: model });
    return model;
  }

  async delete(localPath: string): Promise<void> {
    const path = joinPath(localPath);
    // JupyterLab has asked already, for a folder as for a file (as Jupyter
    // Server, which deletes a folder with what is in it).
    await deleteEntry(this.client, this.name, path, true);
    this._fileChanged.emit({
      type: 'delete',
      oldValue: { path },
      newValue: null
    });
  }

  async rename(
    oldLocalPath: string,
    newLocalPath: string
  ): Promise<Contents.IModel> {
    const from = joinPath(oldLocalPath);
    const entry: StorageEntry = await moveEntry(
      this.client,
      this.name,
      from,
      joinPath(newLocalPath)
    );
    const model = await this.get(entry.path, { content: false });
    this._fileChanged.emit({
      type: 'rename',
      oldValue: { path: from },
      newValue: model
    });
    return model;
  }

  /** A copy of a file into `toLocalDir` under a free name (`data 1.csv`). */
  async copy(localPath: string, toLocalDir: string): Promise<Contents.IModel> {
    const source = await this.get(localPath, {
      type: 'file',
      format: 'base64',
      content: true
    });
    if (source.type === 'directory') {
      throw new PAIRequestError(
        `copying the folder ${this.name}:${localPath} is not supported; copy its files`,
        400
      );
    }
    const folder = joinPath(toLocalDir);
    const name = freeName(source.name, await this.names(folder));
    const model = await this.save(joinPath(folder, name), {
      type: 'file',
      format: 'base64',
      content: source.content
    });
    this._fileChanged.emit({ type: 'new', oldValue: null, newValue: model });
    return model;
  }

  // Checkpoints: none. A storage is shared with jobs that write it directly,
  // so a copy kept beside each file would be stale and would show up in their
  // listings; JupyterLab works without them ("Revert" reloads from disk).
  async createCheckpoint(
    localPath: string
  ): Promise<Contents.ICheckpointModel> {
    return { id: 'none', last_modified: new Date().toISOString() };
  }

  async listCheckpoints(
    localPath: string
  ): Promise<Contents.ICheckpointModel[]> {
    return [];
  }

  async restoreCheckpoint(
    localPath: string,
    checkpointID: string
  ): Promise<void> {
    return;
  }

  async deleteCheckpoint(
    localPath: string,
    checkpointID: string
  ): Promise<void> {
    return;
  }
}
