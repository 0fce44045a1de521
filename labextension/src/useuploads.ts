/**
 * The storage browser's upload queue as React state: files sent one after the
 * other into the current folder, progress per file, Cancel for all.
 */

import * as React from 'react';

import type { PAIClient } from './api';
import { describeError } from './panelstate';
import { uploadFile } from './storageupload';
import { discardUpload, type IDroppedFile } from './storagewrites';
import { joinPath, type IUploadItem } from './uploadplan';

export interface IUploads {
  items: IUploadItem[];
  running: boolean;
  start: (files: IDroppedFile[], folder: string) => void;
  cancel: () => void;
  clear: () => void;
}

export function useUploads(
  client: PAIClient,
  storage: string,
  onFinished: () => void
): IUploads {
  const [items, setItems] = React.useState<IUploadItem[]>([]);
  const [running, setRunning] = React.useState(false);
  const abort = React.useRef<AbortController | null>(null);
  const nextId = React.useRef(1);

  const update = (id: number, change: Partial<IUploadItem>) =>
    setItems(all => all.map(i => (i.id === id ? { ...i, ...change } : i)));

  const start = (files: IDroppedFile[], folder: string) => {
    if (!files.length) {
      return;
    }
    const queued = files.map(f => ({
      item: {
        id: nextId.current++,
        path: joinPath(folder, f.path),
        total: f.file.size,
        sent: 0,
        status: 'queued' as const
      },
      file: f.file
    }));
    setItems(all => [
      ...all.filter(i => i.status === 'uploading' || i.status === 'queued'),
      ...queued.map(q => q.item)
    ]);
    const controller = abort.current ?? new AbortController();
    abort.current = controller;
    setRunning(true);
    void (async () => {
      for (const { item, file } of queued) {
        if (controller.signal.aborted) {
          update(item.id, { status: 'cancelled' });
          continue;
        }
        update(item.id, { status: 'uploading' });
        try {
          await uploadFile(
            client.url(client.storageEndpoint(storage, item.path)),
            file,
            client.serverSettings,
            sent => update(item.id, { sent }),
            controller.signal
          );
          update(item.id, { status: 'done', sent: item.total });
        } catch (e) {
          update(
            item.id,
            controller.signal.aborted
              ? { status: 'cancelled' }
              : { status: 'failed', error: describeError(e) }
          );
          if (controller.signal.aborted) {
            // What arrived of it waits under a hidden name: not kept for a resume.
            void discardUpload(client, storage, item.path).catch(
              () => undefined
            );
          }
        }
      }
      if (abort.current === controller) {
        abort.current = null;
        setRunning(false);
      }
      onFinished();
    })();
  };

  const cancel = () => {
    abort.current?.abort();
    abort.current = null;
    setRunning(false);
  };

  const clear = () => setItems([]);

  return { items, running, start, cancel, clear };
}
