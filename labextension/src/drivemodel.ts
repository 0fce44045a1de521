/**
 * Storage listings and files as `Contents.IModel`s, and back: the pure half of
 * the storage drives (no requests), so it can be tested on its own.
 */

import type { Contents } from '@jupyterlab/services';

import type { StorageEntry, StorageListing } from './restmodels';

const TEXT_TYPES: Record<string, string> = {
  '.txt': 'text/plain',
  '.md': 'text/markdown',
  '.csv': 'text/csv',
  '.tsv': 'text/tab-separated-values',
  '.py': 'text/x-python',
  '.json': 'application/json',
  '.yaml': 'text/x-yaml',
  '.yml': 'text/x-yaml',
  '.sh': 'text/x-sh',
  '.html': 'text/html',
  '.js': 'text/javascript',
  '.ts': 'text/typescript',
  '.xml': 'application/xml',
  '.log': 'text/plain',
  '.ipynb': 'application/x-ipynb+json'
};

const BINARY_TYPES: Record<string, string> = {
  '.png': 'image/png',
  '.jpg': 'image/jpeg',
  '.jpeg': 'image/jpeg',
  '.gif': 'image/gif',
  '.svg': 'image/svg+xml',
  '.pdf': 'application/pdf',
  '.zip': 'application/zip',
  '.gz': 'application/gzip'
};

export function extension(path: string): string {
  const name = path.split('/').pop() ?? '';
  const dot = name.lastIndexOf('.');
  return dot > 0 ? name.slice(dot).toLowerCase() : '';
}

export function mimetypeOf(path: string): string {
  const ext = extension(path);
  return TEXT_TYPES[ext] ?? BINARY_TYPES[ext] ?? 'application/octet-stream';
}

/** `notebook` for `.ipynb`, else `file`. */
export function fileType(path: string): Contents.ContentType {
  return extension(path) === '.ipynb' ? 'notebook' : 'file';
}

/** Whether a read gives JupyterLab a notebook model (JSON it renders). */
export function readsAsNotebook(
  path: string,
  options: Contents.IFetchOptions = {}
): boolean {
  const type =
    options.type && options.type !== 'directory'
      ? options.type
      : fileType(path);
  return type === 'notebook' && (options.format ?? 'json') === 'json';
}

function cellsOf(notebook: any): any[] {
  return notebook && Array.isArray(notebook.cells) ? notebook.cells : [];
}

/**
 * `notebook` with no cell trusted, changed in place: JupyterLab runs a trusted
 * code cell's HTML and JavaScript outputs, and a storage's file says what
 * whoever wrote it wanted. Used on every notebook the server did not vouch for.
 */
export function distrust(notebook: any): any {
  for (const cell of cellsOf(notebook)) {
    if (!cell || typeof cell !== 'object') {
      continue;
    }
    const metadata =
      cell.metadata && typeof cell.metadata === 'object' ? cell.metadata : {};
    delete metadata.trusted;
    if (cell.cell_type === 'code') {
      metadata.trusted = false;
    }
    cell.metadata = metadata;
  }
  return notebook;
}

/** A copy of `notebook` whose cells carry no `trusted` (what a file keeps). */
export function withoutTrust(notebook: any): any {
  const copy = { ...notebook, cells: cellsOf(notebook).map(c => ({ ...c })) };
  for (const cell of copy.cells) {
    if (cell && cell.metadata && typeof cell.metadata === 'object') {
      cell.metadata = { ...cell.metadata };
      delete cell.metadata.trusted;
    }
  }
  return copy;
}

/**
 * The format a file is read in: what the caller asked (an image viewer asks
 * base64, an editor text), else json for a notebook, text for a known text
 * extension, else text when the bytes are UTF-8 and base64 when not.
 */
export function chooseFormat(
  path: string,
  bytes: Uint8Array,
  options: Contents.IFetchOptions = {}
): Contents.FileFormat {
  if (options.format) {
    return options.format;
  }
  if (options.type === 'notebook' || fileType(path) === 'notebook') {
    return 'json';
  }
  if (TEXT_TYPES[extension(path)]) {
    return 'text';
  }
  if (BINARY_TYPES[extension(path)]) {
    return 'base64';
  }
  try {
    new TextDecoder('utf-8', { fatal: true }).decode(bytes);
    return 'text';
  } catch {
    return 'base64';
  }
}

export function toBase64(bytes: Uint8Array): string {
  let binary = '';
  // Blocks keep String.fromCharCode's argument list short.
  for (let i = 0; i < bytes.length; i += 0x8000) {
    binary += String.fromCharCode(...bytes.subarray(i, i + 0x8000));
  }
  return btoa(binary);
}

export function fromBase64(text: string): Uint8Array {
  const binary = atob(text.replace(/\s+/g, ''));
  const bytes = new Uint8Array(binary.length);
  for (let i = 0; i < binary.length; i++) {
    bytes[i] = binary.charCodeAt(i);
  }
  return bytes;
}

/** An HTTP date or ISO time as ISO 8601; the epoch when unknown. */
export function isoTime(value: string | null | undefined): string {
  const time = value ? new Date(value) : null;
  return time && !isNaN(time.getTime())
    ? time.toISOString()
    : new Date(0).toISOString();
}

/** A listing's entry as a model without content. */
export function entryModel(
  entry: StorageEntry,
  writable: boolean
): Contents.IModel {
  const dir = entry.type === 'directory';
  const modified = isoTime(entry.modified);
  return {
    name: entry.name,
    path: entry.path,
    type: dir ? 'directory' : fileType(entry.path),
    writable,
    created: modified,
    last_modified: modified,
    mimetype: dir ? '' : mimetypeOf(entry.path),
    content: null,
    format: null,
    size: dir ? undefined : (entry.size ?? undefined)
  };
}

/** A folder's model: its entries (without content) when `content` is asked. */
export function listingModel(
  listing: StorageListing,
  path: string,
  writable: boolean,
  withContent = true
): Contents.IModel {
  const entries = listing.entries.map(e => entryModel(e, writable));
  const newest = listing.entries
    .map(e => isoTime(e.modified))
    .sort()
    .pop();
  return {
    name: path.split('/').pop() ?? '',
    path,
    type: 'directory',
    writable,
    created: newest ?? isoTime(null),
    last_modified: newest ?? isoTime(null),
    mimetype: '',
    content: withContent ? entries : null,
    format: withContent ? 'json' : null
  };
}

/** A file's model with its bytes in `format` (null content when not asked). */
export function fileModel(
  path: string,
  bytes: Uint8Array | null,
  options: {
    format: Contents.FileFormat;
    lastModified: string | null;
    size: number | null;
    writable: boolean;
    type?: Contents.ContentType;
  }
): Contents.IModel {
  const modified = isoTime(options.lastModified);
  let content: any = null;
  if (bytes) {
    if (options.format === 'base64') {
      content = toBase64(bytes);
    } else {
      const text = new TextDecoder().decode(bytes);
      content = options.format === 'json' ? JSON.parse(text) : text;
    }
  }
  const type =
    options.type && options.type !== 'directory'
      ? options.type
      : fileType(path);
  return {
    name: path.split('/').pop() ?? '',
    path,
    type,
    writable: options.writable,
    created: modified,
    last_modified: modified,
    mimetype: mimetypeOf(path),
    content,
    format: bytes ? options.format : null,
    size: bytes ? bytes.byteLength : (options.size ?? undefined)
  };
}

/** The bytes a save sends: base64 decoded, text as UTF-8, JSON (notebooks) serialised. */
export function contentBytes(options: Partial<Contents.IModel>): Uint8Array {
  const content = options.content;
  if (content === null || content === undefined) {
    return new Uint8Array(0);
  }
  if (options.format === 'base64') {
    return fromBase64(String(content));
  }
  const text =
    options.format === 'json' ||
    options.type === 'notebook' ||
    typeof content !== 'string'
      ? JSON.stringify(content, null, 1) + '\n'
      : content;
  return new TextEncoder().encode(text);
}

/** The first of `name`, `stem 1.ext`, `stem 2.ext`, … not in `taken`. */
export function freeName(name: string, taken: Set<string>): string {
  if (!taken.has(name)) {
    return name;
  }
  const ext = extension(name);
  const stem = ext ? name.slice(0, -ext.length) : name;
  for (let i = 1; ; i++) {
    const candidate = `${stem} ${i}${ext}`;
    if (!taken.has(candidate)) {
      return candidate;
    }
  }
}

/** An empty notebook, as JupyterLab's own "new notebook" writes it. */
export const EMPTY_NOTEBOOK = {
  cells: [],
  metadata: {},
  nbformat: 4,
  nbformat_minor: 5
};
