/** The tag select of a registry repository, with the chosen tag's details under it. */

import * as React from 'react';

import { tagDetails, tagLabel } from './imagecatalogue';
import type { ImageRepository, ImageTag } from './restmodels';

export const TAG_SELECT_ID = 'jp-PAI-image-tag';

export interface IImageTagPickerProps {
  repository: ImageRepository;
  tag: ImageTag;
  /** Picks a tag by its URI. */
  onPick: (uri: string) => void;
  /** Milliseconds since the epoch the ages count from (tests pin it). */
  now?: number;
}

export function ImageTagPicker(props: IImageTagPickerProps): JSX.Element {
  const { repository, tag } = props;
  const now = props.now ?? Date.now();
  const details = tagDetails(tag, now);
  const labels = Object.entries(tag.labels ?? {}).sort(([a], [b]) =>
    a.localeCompare(b)
  );
  const detailId = `${TAG_SELECT_ID}-detail`;
  return (
    <div className="jp-PAI-field jp-PAI-image-tag-field">
      <label htmlFor={TAG_SELECT_ID}>Tag</label>
      <select
        id={TAG_SELECT_ID}
        aria-describedby={detailId}
        className="jp-mod-styled jp-PAI-input"
        value={tag.uri}
        onChange={e => props.onPick(e.target.value)}
      >
        {repository.tags.map(t => (
          <option key={t.uri} value={t.uri}>
            {tagLabel(t, now)}
          </option>
        ))}
      </select>
      <div className="jp-PAI-hint jp-PAI-image-detail" id={detailId}>
        <code className="jp-PAI-image-detail-uri">{tag.uri}</code>
        {details.map(part => (
          <React.Fragment key={part.kind}>
            {' · '}
            <span data-detail={part.kind} className={part.className}>
              {part.text}
            </span>
          </React.Fragment>
        ))}
        {!details.length && ' · not described (only the newest tags are)'}
      </div>
      {labels.length > 0 && (
        <details className="jp-PAI-image-labels">
          <summary>
            {labels.length} label{labels.length === 1 ? '' : 's'}
          </summary>
          <ul>
            {labels.map(([key, value]) => (
              <li key={key}>
                <code>{key}</code> = {value}
              </li>
            ))}
          </ul>
        </details>
      )}
    </div>
  );
}
