/**
 * Dragging files from one drive's file browser onto another's: JupyterLab's
 * listing would ask the ContentsManager to rename, which refuses across
 * drives. A capture-phase `lm-drop` handler on each browser takes such drops
 * first and copies instead (get as base64, save under the target folder);
 * drops inside one drive go on to JupyterLab's own move.
 */

import type { Contents } from '@jupyterlab/services';
import type { FileBrowser } from '@jupyterlab/filebrowser';
import { showErrorMessage } from '@jupyterlab/apputils';

const CONTENTS_MIME = 'application/x-jupyter-icontents';

/** `drive:folder/name` -> `name`; `folder/name` -> `name`. */
function baseName(path: string): string {
  return path.split(':').pop()!.split('/').filter(Boolean).pop() ?? '';
}

/** Join a global folder path (maybe `drive:` or `drive:folder`) and a name. */
export function globalJoin(folder: string, name: string): string {
  if (folder.endsWith(':') || folder === '') {
    return `${folder}${name}`;
  }
  return `${folder}/${name}`;
}

/** Copy a file or folder (recursively) from any drive to `toFolder` on another. */
export async function copyAcross(
  contents: Contents.IManager,
  from: string,
  toFolder: string
): Promise<void> {
  const found = await contents.get(from, { content: false });
  const target = globalJoin(toFolder, baseName(from));
  if (found.type === 'directory') {
    await contents.save(target, { type: 'directory' });
    const listing = await contents.get(from, { content: true });
    for (const child of listing.content as Contents.IModel[]) {
      await copyAcross(contents, globalJoin(from, child.name), target);
    }
    return;
  }
  const file = await contents.get(from, {
    type: 'file',
    format: 'base64',
    content: true
  });
  await contents.save(target, {
    type: 'file',
    format: 'base64',
    content: file.content
  });
}

/** Copy drops coming from another drive onto `browser`; refresh it after. */
export function handleCrossDriveDrops(
  browser: FileBrowser,
  contents: Contents.IManager
): void {
  const node = browser.node;
  node.addEventListener(
    'lm-drop',
    (event: any) => {
      const paths: string[] | undefined =
        event.mimeData?.hasData(CONTENTS_MIME) &&
        event.mimeData.getData(CONTENTS_MIME);
      if (!paths || !paths.length) {
        return;
      }
      const here = browser.model.driveName;
      const foreign = paths.filter(p => contents.driveName(p) !== here);
      if (!foreign.length) {
        return;
      }
      event.preventDefault();
      event.stopPropagation();
      event.dropAction = 'copy';
      const item = (event.target as HTMLElement | null)?.closest(
        '.jp-DirListing-item'
      );
      let folder = browser.model.path;
      if (item?.getAttribute('data-isdir') === 'true') {
        const name = item.querySelector('.jp-DirListing-itemText')?.textContent;
        if (name) {
          folder = globalJoin(folder, name.trim());
        }
      }
      void (async () => {
        try {
          for (const path of foreign) {
            await copyAcross(contents, path, folder);
          }
        } catch (error) {
          void showErrorMessage('Copy between drives failed', error as Error);
        }
        await browser.model.refresh();
      })();
    },
    true
  );
}
