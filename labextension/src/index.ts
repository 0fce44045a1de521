import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import { ICommandPalette } from '@jupyterlab/apputils';

import { PAIClient } from './api';
import { PAIModel } from './model';
import { PAIPanel } from './panel';
import { CommandIDs, PLUGIN_ID } from './tokens';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description: 'OpenPAI-style GPU jobs: launch form, jobs, logs, storage.',
  autoStart: true,
  optional: [ILayoutRestorer, ICommandPalette],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null
  ) => {
    const model = new PAIModel(
      new PAIClient(app.serviceManager.serverSettings)
    );
    const panel = new PAIPanel(model);
    app.shell.add(panel, 'left', { rank: 600 });
    restorer?.add(panel, panel.id);

    app.commands.addCommand(CommandIDs.openPanel, {
      label: 'PAI: Open Side Panel',
      execute: () => app.shell.activateById(panel.id)
    });
    app.commands.addCommand(CommandIDs.refresh, {
      label: 'PAI: Refresh',
      execute: () => model.refreshInfo()
    });
    palette?.addItem({ command: CommandIDs.openPanel, category: 'PAI' });
    palette?.addItem({ command: CommandIDs.refresh, category: 'PAI' });

    void model.refreshInfo();
  }
};

export default plugin;
