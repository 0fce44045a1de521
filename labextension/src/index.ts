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
import { PathExt } from '@jupyterlab/coreutils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';
import { ISettingRegistry } from '@jupyterlab/settingregistry';
import { IStatusBar } from '@jupyterlab/statusbar';

import { AbnormalJobsWatcher } from './abnormaljobs';
import { PAIClient } from './api';
import { JobDetailPanel, jobWidgetId } from './jobdetail';
import { emitNotice } from './fielderrorlist';
import {
  importErrorNotice,
  importJobFile,
  importNotice,
  JOB_FILE,
  JobFileError
} from './jobfile';
import { cloneJob, stopJob } from './jobslist';
import { runNotebook } from './notebookjob';
import type { JobSummary } from './models';
import {
  DEFAULT_SETTINGS,
  describeError,
  IPAISettings,
  PAIModel,
  type PanelSection
} from './model';
import { KernelQueueNotifier } from './kernelqueue';
import { PAIPanel } from './panel';
import { createPortTab, portWidgetId, type ITaskPort } from './taskports';
import { PAIStatusItem } from './statusbar';
import { CommandIDs, PLUGIN_ID } from './tokens';

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
    IDefaultFileBrowser
  ],
  activate: (
    app: JupyterFrontEnd,
    restorer: ILayoutRestorer | null,
    palette: ICommandPalette | null,
    settingRegistry: ISettingRegistry | null,
    statusBar: IStatusBar | null,
    fileBrowser: IDefaultFileBrowser | null
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
    /** The job a command is about: its `id` argument, or the current job tab's. */
    const jobFor = (args: any): JobSummary | null => {
      const id: string | undefined =
        (args?.id as string) ?? tracker.currentWidget?.content.model.jobId;
      if (!id) {
        return null;
      }
      return (
        model.jobs.find(j => j.id === id) ??
        tracker.find(w => w.content.model.jobId === id)?.content.model.job ??
        null
      );
    };

    const { commands } = app;
    commands.addCommand(CommandIDs.openPanel, {
      label: 'PAI: Show Side Panel',
      caption: 'Show the PAI side panel',
      execute: () => app.shell.activateById(panel.id)
    });
    commands.addCommand(CommandIDs.newJob, {
      label: 'PAI: New Job',
      caption: 'Open the launch form for a new GPU job',
      execute: () => {
        model.requestForm(null);
        show('launch');
      }
    });
    commands.addCommand(CommandIDs.showJobs, {
      label: 'PAI: Show Jobs',
      execute: () => show('jobs')
    });
    commands.addCommand(CommandIDs.showStorage, {
      label: 'PAI: Browse Storage',
      execute: () => show('storage')
    });
    commands.addCommand(CommandIDs.showCluster, {
      label: 'PAI: Show Cluster Usage',
      execute: () => show('cluster')
    });
    commands.addCommand(CommandIDs.refresh, {
      label: 'PAI: Refresh',
      execute: () => model.refreshInfo()
    });
    commands.addCommand(CommandIDs.openJob, {
      label: args => (args.id ? `PAI: Open Job ${args.id}` : 'PAI: Open Job'),
      execute: args => {
        const id = args.id as string | undefined;
        if (id) {
          openJob(id, args.name as string | undefined);
        } else {
          show('jobs');
        }
      }
    });
    commands.addCommand(CommandIDs.stopJob, {
      label: 'PAI: Stop Job',
      isEnabled: () => !!jobFor({}),
      execute: async args => {
        const job = jobFor(args);
        if (job) {
          await stopJob(model, job);
        }
      }
    });
    commands.addCommand(CommandIDs.cloneJob, {
      label: 'PAI: Clone Job into the Launch Form',
      isEnabled: () => !!jobFor({}),
      execute: async args => {
        const job = jobFor(args);
        if (job) {
          await cloneJob(model, job);
          show('launch');
        }
      }
    });
    /** The job file a command is about: its `path` argument, or the browser's selection. */
    const selectedJobFile = (args: any): string | null => {
      const path =
        (args?.path as string | undefined) ??
        fileBrowser?.selectedItems().next().value?.path;
      return path && JOB_FILE.test(path) ? path : null;
    };
    commands.addCommand(CommandIDs.openJobFile, {
      label: 'Open in PAI Launch Form',
      caption: 'Load this OpenPAI job file into the PAI launch form',
      isVisible: args => !!selectedJobFile(args),
      execute: async args => {
        const path = selectedJobFile(args);
        if (!path) {
          return;
        }
        try {
          const file = await app.serviceManager.contents.get(path, {
            content: true,
            format: 'text'
          });
          const imported = await importJobFile(
            path,
            file.content as string,
            text => model.client.convertJob(text)
          );
          model.requestForm(imported.form);
          show('launch');
          const notice = importNotice(path, imported);
          if (imported.format !== 'v2' || notice.type === 'warning') {
            emitNotice(notice);
          }
        } catch (error) {
          if (error instanceof JobFileError) {
            // It names the file and each field it is about.
            emitNotice(importErrorNotice(error));
          } else {
            Notification.error(
              `Could not open ${path}: ${describeError(error)}`,
              { autoClose: false }
            );
          }
        }
      }
    });
    app.contextMenu.addItem({
      command: CommandIDs.openJobFile,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 3
    });

    const selectedNotebook = (args: any): string | null => {
      // The item right-clicked, whether or not the selection has caught up with it yet.
      const hit = app.contextMenuHitTest(node =>
        node.classList.contains('jp-DirListing-item')
      );
      const name = hit
        ?.querySelector('.jp-DirListing-itemText')
        ?.textContent?.trim();
      const clicked =
        name && fileBrowser
          ? PathExt.join(fileBrowser.model.path, name)
          : undefined;
      const path: string | undefined =
        (args?.path as string | undefined) ??
        clicked ??
        fileBrowser?.selectedItems().next().value?.path;
      return path && path.endsWith('.ipynb') ? path : null;
    };
    commands.addCommand(CommandIDs.runNotebook, {
      label: 'Run as PAI Job',
      caption:
        'Run this notebook as a job; the executed notebook opens when it ends',
      isVisible: args => !!selectedNotebook(args),
      execute: args => {
        const path = selectedNotebook(args);
        if (path) {
          return runNotebook(
            model,
            path,
            output =>
              void commands.execute('docmanager:open', { path: output }),
            openJob
          );
        }
      }
    });
    app.contextMenu.addItem({
      command: CommandIDs.runNotebook,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 3
    });

    if (palette) {
      for (const command of [
        CommandIDs.openPanel,
        CommandIDs.newJob,
        CommandIDs.showJobs,
        CommandIDs.showStorage,
        CommandIDs.showCluster,
        CommandIDs.refresh,
        CommandIDs.stopJob,
        CommandIDs.cloneJob
      ]) {
        palette.addItem({ command, category: 'PAI' });
      }
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
  }
};

export default plugin;
