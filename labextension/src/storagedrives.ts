/**
 * Each storage as a JupyterLab drive with a file browser of its own in the
 * left area (`work:`, `data:` …), registered once the storages are known.
 */

import type { JupyterFrontEnd } from '@jupyterlab/application';
import {
  FileBrowser,
  type IFileBrowserFactory,
  Uploader
} from '@jupyterlab/filebrowser';
import {
  newFolderIcon,
  refreshIcon,
  ToolbarButton
} from '@jupyterlab/ui-components';

import type { PAIClient } from './api';
import { handleCrossDriveDrops } from './crossdrivedrop';
import { driveIcon } from './driveicon';
import { StorageDrive } from './storagedrive';

export async function addStorageDrives(
  app: JupyterFrontEnd,
  client: PAIClient,
  factory: IFileBrowserFactory,
  defaultBrowser: FileBrowser | null
): Promise<StorageDrive[]> {
  const storages = await client.storages();
  const contents = app.serviceManager.contents;
  const drives: StorageDrive[] = [];
  storages.forEach((storage, i) => {
    const drive = new StorageDrive(client, storage);
    contents.addDrive(drive);
    drives.push(drive);
    const browser = factory.createFileBrowser(`jp-PAI-drive-${storage.name}`, {
      driveName: drive.name,
      refreshInterval: 10000
    });
    browser.title.icon = driveIcon;
    browser.title.label = `${storage.name}:`;
    browser.title.caption = `Storage ${storage.name}${storage.readOnly ? ' (read-only)' : ''}`;
    browser.addClass('jp-PAI-drive-browser');
    addToolbar(browser, storage.readOnly);
    handleCrossDriveDrops(browser, contents);
    app.shell.add(browser, 'left', { rank: 610 + i });
  });
  if (defaultBrowser && drives.length) {
    // Storage files dropped on the server's own browser are copied there too.
    handleCrossDriveDrops(defaultBrowser, contents);
  }
  return drives;
}

/** New folder and upload (writable storages), refresh: browsers made by the factory have none. */
function addToolbar(browser: FileBrowser, readOnly: boolean): void {
  if (!readOnly) {
    browser.toolbar.addItem(
      'new-folder',
      new ToolbarButton({
        icon: newFolderIcon,
        tooltip: 'New Folder',
        onClick: () => void browser.createNewDirectory()
      })
    );
    browser.toolbar.addItem('upload', new Uploader({ model: browser.model }));
  }
  browser.toolbar.addItem(
    'refresh',
    new ToolbarButton({
      icon: refreshIcon,
      tooltip: 'Refresh the file list',
      onClick: () => void browser.model.refresh()
    })
  );
}
