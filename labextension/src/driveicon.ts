import { LabIcon } from '@jupyterlab/ui-components';

/** The icon of a storage drive's file browser: a disk drive. */
export const driveIcon = new LabIcon({
  name: 'jupyter-pai:drive',
  svgstr:
    '<svg xmlns="http://www.w3.org/2000/svg" width="16" viewBox="0 0 24 24">' +
    '<path class="jp-icon3" fill="#616161" d="M4 5h16l2 8v5a1 1 0 0 1-1 1H3a1 1 0 0 1-1-1v-5zm1.6 2-1.3 5h15.4l-1.3-5zM4 14v3h16v-3zm12 1h2v1h-2z"/>' +
    '</svg>'
});
