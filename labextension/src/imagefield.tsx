/**
 * The job's image: a catalogue entry, a registry repository and one of its
 * tags, or (where the admin allows it) any URI typed in.
 */

import * as React from 'react';

import { Field } from './field';
import {
  EMPTY_CATALOGUE,
  findRepository,
  findTag,
  type IImageCatalogue
} from './imagecatalogue';
import { ImageTagPicker } from './imagetagpicker';
import { catalogueEntry } from './jobform';
import { RegistryNotices } from './registrystatus';
import type { FieldError, Image, ImageRepository } from './restmodels';

/** The select's value for "an image URI typed in". */
const CUSTOM = '__custom__';
/** The select's value for an image neither listed nor allowed to be typed. */
const UNLISTED = '__unlisted__';
/** A repository's option value is this prefix and its URI. */
const REPOSITORY = '__repository__:';

export interface IImageFieldProps {
  image: string;
  images: Image[];
  /** The registries' repositories and whether typed URIs are allowed. */
  catalogue?: IImageCatalogue;
  /** The image is a URI typed in, not a catalogue entry. */
  custom: boolean;
  errors: Map<string, FieldError[]>;
  /** A catalogue image or tag by URI, or null for one to type in. */
  onPick: (uri: string | null) => void;
  onType: (uri: string) => void;
  /** Milliseconds since the epoch tag ages count from (tests pin it). */
  now?: number;
}

function byRegistry(
  repositories: ImageRepository[]
): [string, ImageRepository[]][] {
  const groups = new Map<string, ImageRepository[]>();
  for (const r of repositories) {
    groups.set(r.registry, [...(groups.get(r.registry) ?? []), r]);
  }
  return [...groups.entries()];
}

function catalogueOptions(images: Image[]): JSX.Element[] {
  return images.map(i => (
    <option key={i.name} value={i.uri}>
      {i.name}
      {i.gpu ? '' : ' (CPU)'}
    </option>
  ));
}

export function ImageField(props: IImageFieldProps): JSX.Element {
  const { images, image } = props;
  const catalogue = props.catalogue ?? EMPTY_CATALOGUE;
  const { repositories, customImages } = catalogue;
  const entry = catalogueEntry(images, image);
  const match = entry ? undefined : findTag(repositories, image);
  const mode =
    props.custom && customImages
      ? 'custom'
      : entry
        ? 'catalogue'
        : match
          ? 'tag'
          : customImages
            ? 'custom'
            : 'unlisted';
  const value =
    mode === 'catalogue'
      ? entry!.uri
      : mode === 'tag'
        ? REPOSITORY + match!.repository.uri
        : mode === 'custom'
          ? CUSTOM
          : UNLISTED;

  const pick = (picked: string) => {
    if (picked === CUSTOM) {
      props.onPick(null);
    } else if (picked.startsWith(REPOSITORY)) {
      const uri = picked.slice(REPOSITORY.length);
      const newest = repositories.find(r => r.uri === uri)?.tags[0];
      if (newest) {
        props.onPick(newest.uri);
      }
    } else if (picked !== UNLISTED) {
      props.onPick(picked);
    }
  };

  let hint: React.ReactNode = null;
  if (mode === 'catalogue') {
    hint = entry!.description ?? null;
  } else if (mode === 'custom' && props.custom) {
    hint = 'Any image your cluster can pull.';
  } else if (mode === 'unlisted') {
    hint = (
      <span className="jp-PAI-image-unlisted">
        {image
          ? `${image} is not listed: the admin allows only the listed images; pick one.`
          : 'The admin allows only the listed images; pick one.'}
      </span>
    );
  }

  // A typed URI of a listed repository whose tag is not listed.
  const typedRepository =
    mode === 'custom' && image && !findTag(repositories, image)
      ? findRepository(repositories, image)
      : undefined;

  return (
    <>
      <Field
        label="Image"
        path="prerequisites"
        errors={props.errors}
        hint={hint}
      >
        {(id, d) => (
          <div className="jp-PAI-row">
            <select
              id={id}
              aria-describedby={d}
              className="jp-mod-styled jp-PAI-input jp-PAI-grow"
              value={value}
              onChange={e => pick(e.target.value)}
            >
              {mode === 'unlisted' && (
                <option value={UNLISTED} disabled>
                  {image ? `${image} (not listed)` : 'Pick an image…'}
                </option>
              )}
              {repositories.length ? (
                <optgroup label="Catalogue">
                  {catalogueOptions(images)}
                </optgroup>
              ) : (
                catalogueOptions(images)
              )}
              {byRegistry(repositories).map(([registry, repos]) => (
                <optgroup key={registry} label={registry}>
                  {repos.map(r => (
                    <option
                      key={r.uri}
                      value={REPOSITORY + r.uri}
                      disabled={!r.tags.length}
                    >
                      {r.name}
                      {r.tags.length ? '' : ' (no tags)'}
                    </option>
                  ))}
                </optgroup>
              ))}
              {customImages && (
                <option value={CUSTOM}>Custom image URI…</option>
              )}
            </select>
          </div>
        )}
      </Field>
      {mode === 'tag' && (
        <ImageTagPicker
          repository={match!.repository}
          tag={match!.tag}
          onPick={props.onPick}
          now={props.now}
        />
      )}
      {mode === 'custom' && (
        <div className="jp-PAI-field">
          <label htmlFor="jp-PAI-image-uri">Image URI</label>
          <input
            id="jp-PAI-image-uri"
            className="jp-mod-styled jp-PAI-input"
            placeholder="registry.example.com/team/pytorch:2.3-cuda12"
            value={image}
            onChange={e => props.onType(e.target.value)}
          />
          {typedRepository && (
            <div className="jp-PAI-hint jp-PAI-image-untagged">
              {`${typedRepository.uri} lists no such tag; newest: ${
                typedRepository.tags
                  .slice(0, 3)
                  .map(t => t.name)
                  .join(', ') || 'none'
              }`}
            </div>
          )}
        </div>
      )}
      <RegistryNotices registries={catalogue.registries} />
    </>
  );
}
