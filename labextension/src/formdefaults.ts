/** What a new launch form starts with: the user's settings, then what the server lists. */

import { catalogueEntry, newJobForm, type JobForm } from './jobform';
import type { PAIModel } from './panelstate';

/** The form with the virtual cluster and image the server lists where it has none. */
export function withCatalogueDefaults(form: JobForm, model: PAIModel): JobForm {
  const vcs = model.virtualClusters;
  const images = model.images;
  let next = form;
  if (!next.virtualCluster && vcs.length) {
    const preferred =
      vcs.find(v => v.name === model.settings.defaultVirtualCluster) ??
      [...vcs].sort((a, b) => b.free.gpu - a.free.gpu)[0];
    next = { ...next, virtualCluster: preferred.name };
  }
  if (!next.image && images.length) {
    const wanted = catalogueEntry(images, model.settings.defaultImage);
    next = { ...next, image: (wanted ?? images[0]).uri };
  }
  const named = catalogueEntry(images, next.image);
  if (named && named.uri !== next.image) {
    next = { ...next, image: named.uri };
  }
  return next;
}

/** A new form with the user's default virtual cluster and image. */
export function settingsForm(model: PAIModel): JobForm {
  return newJobForm({
    virtualCluster: model.settings.defaultVirtualCluster,
    image: model.settings.defaultImage
  });
}
