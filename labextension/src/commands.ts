/**
 * The PAI commands: their palette entries and the file browser's context menu
 * items that run them.
 */

import { JupyterFrontEnd } from '@jupyterlab/application';
import {
  ICommandPalette,
  MainAreaWidget,
  Notification,
  WidgetTracker
} from '@jupyterlab/apputils';
import { PathExt } from '@jupyterlab/coreutils';
import { IDefaultFileBrowser } from '@jupyterlab/filebrowser';

import { emitNotice } from './fielderrorlist';
import { JobDetailPanel } from './jobdetail';
import {
  importErrorNotice,
  importJobFile,
  importNotice,
  JOB_FILE,
  JobFileError
} from './jobfile';
import { cloneJob, stopJob } from './jobslist';
import { runNotebook } from './notebookjob';
import { describeError, PAIModel, type PanelSection } from './panelstate';
import type { JobSummary } from './restmodels';
import { CommandIDs } from './tokens';

/** What the commands act on, from the plugin's wiring. */
export interface ICommandContext {
  model: PAIModel;
  tracker: WidgetTracker<MainAreaWidget<JobDetailPanel>>;
  fileBrowser: IDefaultFileBrowser | null;
  /** The side panel's widget id. */
  panelId: string;
  /** Open (or bring forward) a job's tab. */
  openJob: (id: string, name?: string) => void;
  /** Show a section of the side panel. */
  show: (section: PanelSection) => void;
}

/** Register every command and the context menu items of job files and notebooks. */
export function addCommands(app: JupyterFrontEnd, ctx: ICommandContext): void {
  const { model, tracker, fileBrowser, openJob, show } = ctx;
  const { commands } = app;

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

  /** A command on one job, enabled while there is a job for it to act on. */
  const addJobCommand = (
    id: string,
    label: string,
    act: (job: JobSummary) => Promise<void>
  ) =>
    commands.addCommand(id, {
      label,
      isEnabled: () => !!jobFor({}),
      execute: async args => {
        const job = jobFor(args);
        if (job) {
          await act(job);
        }
      }
    });

  commands.addCommand(CommandIDs.openPanel, {
    label: 'PAI: Show Side Panel',
    caption: 'Show the PAI side panel',
    execute: () => app.shell.activateById(ctx.panelId)
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
  addJobCommand(CommandIDs.stopJob, 'PAI: Stop Job', job =>
    stopJob(model, job)
  );
  addJobCommand(
    CommandIDs.cloneJob,
    'PAI: Clone Job into the Launch Form',
    async job => {
      await cloneJob(model, job);
      show('launch');
    }
  );

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
          output => void commands.execute('docmanager:open', { path: output }),
          openJob
        );
      }
    }
  });

  for (const command of [CommandIDs.openJobFile, CommandIDs.runNotebook]) {
    app.contextMenu.addItem({
      command,
      selector: '.jp-DirListing-item[data-isdir="false"]',
      rank: 3
    });
  }
}

/** The commands the palette lists, under PAI. */
export function addToPalette(palette: ICommandPalette): void {
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
