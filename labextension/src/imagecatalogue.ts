/**
 * What the image picker shows, as pure functions: the `GET images` answer with
 * its defaults, a repository and tag found from a URI, and the words for a
 * tag's age, size, labels, scan and the registries that are down.
 */

import { parseTime } from './displayformat';
import type {
  DateTime,
  Image,
  ImageChoices,
  ImageRepository,
  ImageTag,
  RegistryStatus
} from './restmodels';

/** `GET images` with every field filled in (old servers send `items` only). */
export interface IImageCatalogue {
  items: Image[];
  repositories: ImageRepository[];
  registries: RegistryStatus[];
  customImages: boolean;
}

export const EMPTY_CATALOGUE: IImageCatalogue = {
  items: [],
  repositories: [],
  registries: [],
  customImages: true
};

export function withCatalogueFields(
  answer: Partial<ImageChoices>
): IImageCatalogue {
  return {
    items: answer.items ?? [],
    repositories: answer.repositories ?? [],
    registries: answer.registries ?? [],
    customImages: answer.customImages ?? true
  };
}

export interface ITagMatch {
  repository: ImageRepository;
  tag: ImageTag;
}

/** The listed repository and tag whose URI is `uri` exactly. */
export function findTag(
  repositories: ImageRepository[],
  uri: string
): ITagMatch | undefined {
  for (const repository of repositories) {
    if (!uri.startsWith(`${repository.uri}:`)) {
      continue;
    }
    const tag = repository.tags.find(t => t.uri === uri);
    if (tag) {
      return { repository, tag };
    }
  }
  return undefined;
}

/** The URI without its tag or digest: `host:5000/team/pytorch:2.4` -> `host:5000/team/pytorch`. */
export function repositoryOf(uri: string): string {
  const at = uri.indexOf('@');
  const name = at >= 0 ? uri.slice(0, at) : uri;
  const colon = name.lastIndexOf(':');
  // A colon before the last slash is a port, not a tag.
  return colon > name.lastIndexOf('/') ? name.slice(0, colon) : name;
}

/** The listed repository an image URI (any tag, listed or not) belongs to. */
export function findRepository(
  repositories: ImageRepository[],
  uri: string
): ImageRepository | undefined {
  const name = repositoryOf(uri);
  return repositories.find(r => r.uri === name);
}

/** The image is a catalogue entry (by URI or name) or a listed tag. */
export function isListedImage(
  catalogue: IImageCatalogue,
  uri: string
): boolean {
  return (
    catalogue.items.some(i => i.uri === uri || i.name === uri) ||
    findTag(catalogue.repositories, uri) !== undefined
  );
}

const AGE_UNITS: [number, string][] = [
  [365 * 86400, 'year'],
  [30 * 86400, 'month'],
  [7 * 86400, 'week'],
  [86400, 'day'],
  [3600, 'hour'],
  [60, 'minute']
];

/** `3 days ago`, `1 hour ago`, `just now`; '' when unknown. */
export function formatAge(
  created: DateTime | null | undefined,
  now: number = Date.now()
): string {
  const date = parseTime(created);
  if (!date) {
    return '';
  }
  // A clock a little ahead of ours is still "just now".
  const seconds = Math.max(0, Math.floor((now - date.getTime()) / 1000));
  for (const [size, unit] of AGE_UNITS) {
    if (seconds >= size) {
      const n = Math.floor(seconds / size);
      return `${n} ${unit}${n === 1 ? '' : 's'} ago`;
    }
  }
  return 'just now';
}

const SIZE_UNITS = ['B', 'kB', 'MB', 'GB', 'TB'];

/** Decimal units, as registries and `docker images` show them: `1.2 GB`, `830 MB`. */
export function formatSize(bytes: number | null | undefined): string {
  if (bytes === null || bytes === undefined || !Number.isFinite(bytes)) {
    return '';
  }
  let value = bytes;
  let unit = 0;
  while (value >= 1000 && unit < SIZE_UNITS.length - 1) {
    value /= 1000;
    unit++;
  }
  const shown = unit === 0 ? String(value) : value.toFixed(value < 10 ? 1 : 0);
  return `${shown} ${SIZE_UNITS[unit]}`;
}

/** A CSS modifier for a Harbor scan severity: `jp-PAI-scan-high`. */
export function severityClass(severity: string): string {
  return `jp-PAI-scan jp-PAI-scan-${severity.toLowerCase().replace(/[^a-z]/g, '')}`;
}

export interface IDetailPart {
  /** What the part is about (`age`, `size`, `cuda`, …): a data attribute in the DOM. */
  kind: string;
  text: string;
  className?: string;
}

/** The line under the tag select: age, size, CUDA, framework, scan, nodes holding it. */
export function tagDetails(
  tag: ImageTag,
  now: number = Date.now()
): IDetailPart[] {
  const parts: IDetailPart[] = [];
  const age = formatAge(tag.created, now);
  if (age) {
    parts.push({ kind: 'age', text: `pushed ${age}` });
  }
  const size = formatSize(tag.size);
  if (size) {
    parts.push({ kind: 'size', text: size });
  }
  if (tag.cuda) {
    parts.push({ kind: 'cuda', text: `CUDA ${tag.cuda}` });
  }
  if (tag.framework) {
    parts.push({ kind: 'framework', text: tag.framework });
  }
  if (tag.scanSeverity) {
    const n = tag.vulnerabilities;
    const count =
      n === null || n === undefined
        ? ''
        : ` (${n} vulnerabilit${n === 1 ? 'y' : 'ies'})`;
    parts.push({
      kind: 'scan',
      text: `scan: ${tag.scanSeverity}${count}`,
      className: severityClass(tag.scanSeverity)
    });
  }
  const nodes = tag.nodesWithImage;
  if (nodes !== null && nodes !== undefined && nodes > 0) {
    parts.push({
      kind: 'nodes',
      text: `on ${nodes} GPU node${nodes === 1 ? '' : 's'} (starts without a pull)`
    });
  }
  return parts;
}

/** A tag select's option: `2.4 · 3 days ago`. */
export function tagLabel(tag: ImageTag, now: number = Date.now()): string {
  const age = formatAge(tag.created, now);
  return age ? `${tag.name} · ${age}` : tag.name;
}

/** `14:02 UTC` (a listing's time, as the server's messages write it). */
function utcTime(value: DateTime | null | undefined): string {
  const date = parseTime(value);
  if (!date) {
    return '';
  }
  const pad = (n: number) => String(n).padStart(2, '0');
  return `${pad(date.getUTCHours())}:${pad(date.getUTCMinutes())} UTC`;
}

/**
 * One line per registry the picker cannot list live: `harbor: cannot reach …;
 * showing the list from 14:02 UTC`; and one per registry cut short by a bound.
 */
export function registryNotices(registries: RegistryStatus[]): string[] {
  const lines: string[] = [];
  for (const r of registries) {
    if (!r.ok) {
      let text = `${r.name}: ${r.error || 'not listed yet'}`;
      // The server's message usually says which list is shown; say it where it does not.
      if (!/showing|no list/i.test(text)) {
        const at = utcTime(r.listedAt);
        text += at ? `; showing the list from ${at}` : '; no list yet';
      }
      lines.push(text);
    } else if (r.truncated) {
      lines.push(
        `${r.name}: showing the first ${r.repositories} repositories and ${r.tags} tags only`
      );
    }
  }
  return lines;
}
