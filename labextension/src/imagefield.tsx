/** The job's image: a catalogue entry, or any URI typed in. */

import * as React from 'react';

import { Field } from './field';
import { catalogueEntry } from './jobform';
import type { FieldError, Image } from './restmodels';

/** The select's value for "an image URI typed in". */
const CUSTOM = '__custom__';

export interface IImageFieldProps {
  image: string;
  images: Image[];
  /** The image is a URI typed in, not a catalogue entry. */
  custom: boolean;
  errors: Map<string, FieldError[]>;
  /** A catalogue image by URI, or null for one to type in. */
  onPick: (uri: string | null) => void;
  onType: (uri: string) => void;
}

export function ImageField(props: IImageFieldProps): JSX.Element {
  const { images } = props;
  const entry = catalogueEntry(images, props.image);
  const custom = props.custom || !entry;
  return (
    <>
      <Field
        label="Image"
        path="prerequisites"
        errors={props.errors}
        hint={
          entry?.description ??
          (props.custom ? 'Any image your cluster can pull.' : null)
        }
      >
        {(id, d) => (
          <div className="jp-PAI-row">
            <select
              id={id}
              aria-describedby={d}
              className="jp-mod-styled jp-PAI-input jp-PAI-grow"
              value={props.custom || !entry ? CUSTOM : entry.uri}
              onChange={e =>
                props.onPick(e.target.value === CUSTOM ? null : e.target.value)
              }
            >
              {images.map(i => (
                <option key={i.name} value={i.uri}>
                  {i.name}
                  {i.gpu ? '' : ' (CPU)'}
                </option>
              ))}
              <option value={CUSTOM}>Custom image URI…</option>
            </select>
          </div>
        )}
      </Field>
      {custom && (
        <div className="jp-PAI-field">
          <label htmlFor="jp-PAI-image-uri">Image URI</label>
          <input
            id="jp-PAI-image-uri"
            className="jp-mod-styled jp-PAI-input"
            placeholder="registry.example.com/team/pytorch:2.3-cuda12"
            value={props.image}
            onChange={e => props.onType(e.target.value)}
          />
        </div>
      )}
    </>
  );
}
