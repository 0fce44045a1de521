/** Identifiers shared by the plugins: command ids, widget ids, the settings id. */

export const PLUGIN_ID = 'jupyter-pai:plugin';

/** The side panel's widget id (also the layout restorer's key). */
export const PANEL_ID = 'jupyter-pai-panel';

export namespace CommandIDs {
  export const openPanel = 'jupyter-pai:open-panel';
  export const refresh = 'jupyter-pai:refresh';
  export const newJob = 'jupyter-pai:new-job';
  export const showJobs = 'jupyter-pai:show-jobs';
  export const showStorage = 'jupyter-pai:show-storage';
  export const showCluster = 'jupyter-pai:show-cluster';
  export const openJob = 'jupyter-pai:open-job';
  export const stopJob = 'jupyter-pai:stop-job';
  export const cloneJob = 'jupyter-pai:clone-job';
  export const openJobFile = 'jupyter-pai:open-job-file';
  export const runNotebook = 'jupyter-pai:run-notebook';
}
