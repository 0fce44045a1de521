/**
 * The storage writes besides uploads: new folder, rename/move, delete, and the
 * URL of a folder's archive; plus the dropped-file walker for the browser.
 */

import type { PAIClient } from './api';
import type { StorageEntry } from './restmodels';

export function makeFolder(
  client: PAIClient,
  name: string,
  path: string
): Promise<StorageEntry> {
  return client.request<StorageEntry>(client.storageEndpoint(name, path), {
    method: 'POST',
    body: JSON.stringify({ type: 'directory' }),
    headers: { 'Content-Type': 'application/json' }
  });
}

export function moveEntry(
  client: PAIClient,
  name: string,
  path: string,
  to: string
): Promise<StorageEntry> {
  return client.request<StorageEntry>(client.storageEndpoint(name, path), {
    method: 'PATCH',
    body: JSON.stringify({ path: to }),
    headers: { 'Content-Type': 'application/json' }
  });
}

export async function deleteEntry(
  client: PAIClient,
  name: string,
  path: string,
  recursive = false
): Promise<void> {
  const query = recursive ? '?recursive=true' : '';
  await client.raw(`${client.storageEndpoint(name, path)}${query}`, {
    method: 'DELETE'
  });
}

/** Drops the bytes of a cancelled upload to `path` (the file under the name stays). */
export async function discardUpload(
  client: PAIClient,
  name: string,
  path: string
): Promise<void> {
  await client.raw(`${client.storageEndpoint(name, path)}?upload=true`, {
    method: 'DELETE'
  });
}

/** A link that downloads a folder as a zip archive, made while it streams. */
export function archiveUrl(
  client: PAIClient,
  name: string,
  path: string
): string {
  return client.downloadUrl(
    `${client.storageEndpoint(name, path)}?archive=zip`
  );
}

/** A file dropped or picked, with its path relative to the drop folder. */
export interface IDroppedFile {
  file: File;
  path: string;
}

function readEntries(
  reader: FileSystemDirectoryReader
): Promise<FileSystemEntry[]> {
  return new Promise((resolve, reject) => reader.readEntries(resolve, reject));
}

async function walk(
  entry: FileSystemEntry,
  out: IDroppedFile[]
): Promise<void> {
  if (entry.isFile) {
    const file = await new Promise<File>((resolve, reject) =>
      (entry as FileSystemFileEntry).file(resolve, reject)
    );
    out.push({ file, path: entry.fullPath.replace(/^\/+/, '') });
    return;
  }
  if (entry.isDirectory) {
    const reader = (entry as FileSystemDirectoryEntry).createReader();
    // readEntries answers in batches (100 in Chromium) until an empty one.
    for (;;) {
      const batch = await readEntries(reader);
      if (!batch.length) {
        break;
      }
      for (const child of batch) {
        await walk(child, out);
      }
    }
  }
}

/**
 * The files a drop carries, folders walked (`webkitGetAsEntry`); where entries
 * are not offered, the plain file list.
 */
export async function droppedFiles(
  data: DataTransfer
): Promise<IDroppedFile[]> {
  // Entries must be taken before the first await: the list empties after the event.
  const entries: FileSystemEntry[] = [];
  const plain: File[] = [];
  for (const item of Array.from(data.items ?? [])) {
    if (item.kind !== 'file') {
      continue;
    }
    const entry = item.webkitGetAsEntry?.();
    if (entry) {
      entries.push(entry);
    } else {
      const file = item.getAsFile();
      if (file) {
        plain.push(file);
      }
    }
  }
  if (!entries.length && !plain.length) {
    plain.push(...Array.from(data.files ?? []));
  }
  const out: IDroppedFile[] = plain.map(file => ({ file, path: file.name }));
  for (const entry of entries) {
    await walk(entry, out);
  }
  return out;
}
