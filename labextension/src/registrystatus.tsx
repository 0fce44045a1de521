/** The registries the image picker cannot list live (or lists only in part), in words. */

import * as React from 'react';

import { registryNotices } from './imagecatalogue';
import type { RegistryStatus } from './restmodels';

export function RegistryNotices(props: {
  registries: RegistryStatus[];
}): JSX.Element | null {
  const lines = registryNotices(props.registries);
  if (!lines.length) {
    return null;
  }
  return (
    <ul className="jp-PAI-registry-notices" role="status">
      {lines.map(line => (
        <li key={line}>{line}</li>
      ))}
    </ul>
  );
}
