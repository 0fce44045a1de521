/** The plugin: the panel, job tabs, commands, status bar and notifications, wired together. */

import {
  ILayoutRestorer,
  JupyterFrontEnd,
  JupyterFrontEndPlugin
} from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  Notification,
  WidgetTracker
} from '@jupyterlab/apputils';
import {
  IDefaultFileBrowser,
  IFileBrowserFactory
} from '@jupyterlab/filebrowser';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';

import { AbnormalJobsWatcher } from './abnormaljobs';
import { PAIClient } from './api';
import { addCommands, addToPalette } from './commands';
import { JobDetailPanel, jobWidgetId } from './jobdetail';
import { KernelQueueNotifier } from './kernelqueue';
import { PAIPanel } from './panel';
import {
  DEFAULT_SETTINGS,
  IPAISettings,
  PAIModel,
  type PanelSection
} from './panelstate';
import type { JobSummary } from './restmodels';
import { PAIStatusItem } from './statusbar';
import { addStorageDrives } from './storagedrives';
import { createPortTab, portWidgetId, type ITaskPort } from './taskports';
import { PLUGIN_ID, CommandIDs } from './tokens';

const plugin: JupyterFrontEndPlugin<void> = {
  id: PLUGIN_ID,
  description:
    'OpenPAI-style GPU jobs: launch form, job list, logs, storage and cluster usage.',
  autoStart: true,
  optional: [
    ILayoutRestorer,
    ICommandPalette,
    ISettingRegistry,
    IStatusBar,
    IDefaultFileBrowser,
    IFileBrowserFactory
  ],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    statusBar: IStatusBar | null,
    fileBrowser: IDefaultFileBrowser | null,
    browserFactory: IFileBrowserFactory | null
  ) => {
    const model = new PAIModel(
      new PAIClient(app.serviceManager.serverSettings)
    );
    // Remote kernels waiting for GPUs say so, with Cancel, panel open or not.
    new KernelQueueNotifier(model.client, () => model.info?.user ?? null);
    // The user's own jobs turning abnormal are notified, panel open or not.
    AbnormalJobsWatcher.for(model);
    const tracker = new WidgetTracker<MainAreaWidget<JobDetailPanel>>({
      namespace: 'jupyter-pai-job'
    });

    // A task's web port (TensorBoard, …) in a tab of its own, one per port.
    const openPort = (port: ITaskPort, jobName: string) => {
      const id = portWidgetId(port);
      if (!Array.from(app.shell.widgets('main')).some(w => w.id === id)) {
        app.shell.add(createPortTab(port, jobName), 'main', {
          mode: 'split-right'
        });
      }
      app.shell.activateById(id);
    };

    const openJob = (id: string, name?: string) => {
      const existing = tracker.find(w => w.content.model.jobId === id);
      if (existing) {
        app.shell.activateById(existing.id);
        return existing;
      }
      const content = new JobDetailPanel(model, id, name, openPort);
      const widget = new MainAreaWidget({ content });
      widget.id = jobWidgetId(id);
      widget.addClass('jp-PAI-job-tab');
      void tracker.add(widget);
      app.shell.add(widget, 'main');
      app.shell.activateById(widget.id);
      return widget;
    };

    const panel = new PAIPanel({
      model,
      openJob: (job: JobSummary) => openJob(job.id, job.name)
    });
    app.shell.add(panel, 'left', { rank: 600 });
    if (restorer) {
      restorer.add(panel, panel.id);
      void restorer.restore(tracker, {
        command: CommandIDs.openJob,
        args: w => ({ id: w.content.model.jobId }),
        name: w => w.content.model.jobId
      });
    }

    const show = (section: PanelSection) => {
      model.section = section;
      app.shell.activateById(panel.id);
    };
    addCommands(app, {
      model,
      tracker,
      fileBrowser,
      panelId: panel.id,
      openJob,
      show
    });
    if (palette) {
      addToPalette(palette);
    }

    if (statusBar) {
      const item = new PAIStatusItem(model, () => show('jobs'));
      statusBar.registerStatusItem('jupyter-pai:status', {
        item,
        align: 'left',
        rank: 5,
        isActive: () => true
      });
    }

    model.jobEnded.connect((_, { job }) => {
      if (!model.settings.notifications) {
        return;
      }
      const actions = [
        {
          label: 'Open',
          callback: () => {
            openJob(job.id, job.name);
          }
        }
      ];
      const text = `PAI job ${job.name} ${job.state.toLowerCase()}`;
      if (job.state === 'SUCCEEDED') {
        Notification.success(text, { autoClose: 8000, actions });
      } else if (job.state === 'FAILED') {
        const code =
          job.exitCode !== null && job.exitCode !== undefined
            ? ` (exit code ${job.exitCode})`
            : '';
        Notification.error(`${text}${code}`, { autoClose: false, actions });
      } else {
        Notification.info(text, { autoClose: 5000, actions });
      }
    });

    const applySettings = (settings: ISettingRegistry.ISettings | null) => {
      const composite = (settings?.composite ?? {}) as Partial<IPAISettings>;
      model.settings = { ...DEFAULT_SETTINGS, ...composite };
    };
    const ready = settingRegistry
      ? settingRegistry
          .load(PLUGIN_ID)
          .then(settings => {
            applySettings(settings);
            settings.changed.connect(applySettings);
          })
          .catch(reason => {
            console.warn('jupyter-pai: settings could not be loaded', reason);
          })
      : Promise.resolve();
    void Promise.all([ready, app.restored]).then(() => model.start());
    // Each storage as a drive (`work:`) with its own file browser.
    if (browserFactory) {
      addStorageDrives(app, model.client, browserFactory, fileBrowser).catch(
        reason => console.warn('jupyter-pai: storage drives not added', reason)
      );
    }
  }
};

export default plugin;
