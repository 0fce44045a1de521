import { LabIcon } from '@jupyterlab/ui-components';

import paiSvg from '../style/icons/pai.svg';

/** The side panel's icon: a GPU chip. */
export const paiIcon = new LabIcon({ name: 'jupyter-pai:gpu', svgstr: paiSvg });
