/**
 * The image picker's pure helpers: the `GET images` answer with its defaults,
 * a repository and tag found from a URI, ages, sizes, the detail line and the
 * notices for registries that are down.
 */
import {
  findRepository,
  findTag,
  formatAge,
  formatSize,
  isListedImage,
  registryNotices,
  repositoryOf,
  severityClass,
  tagDetails,
  tagLabel,
  withCatalogueFields
} from '../imagecatalogue';
import type { RegistryStatus } from '../restmodels';
import { NOW, PYTORCH } from './imagefixtures';

describe('the image catalogue', () => {
  it('fills in what an older server leaves out', () => {
    expect(withCatalogueFields({ items: [] })).toEqual({
      items: [],
      repositories: [],
      registries: [],
      customImages: true
    });
    expect(
      withCatalogueFields({ items: [], customImages: false }).customImages
    ).toBe(false);
  });

  it('finds a listed tag by its URI exactly', () => {
    const found = findTag([PYTORCH], '127.0.0.1:5000/team/pytorch:2.3');
    expect(found?.repository.name).toBe('team/pytorch');
    expect(found?.tag.name).toBe('2.3');
    expect(findTag([PYTORCH], '127.0.0.1:5000/team/pytorch:2.5')).toBe(
      undefined
    );
    expect(findTag([PYTORCH], '127.0.0.1:5000/team/pytorch')).toBe(undefined);
  });

  it('finds the repository of any tag or digest, a port is not a tag', () => {
    expect(repositoryOf('127.0.0.1:5000/team/pytorch:2.5')).toBe(
      '127.0.0.1:5000/team/pytorch'
    );
    expect(repositoryOf('127.0.0.1:5000/team/pytorch')).toBe(
      '127.0.0.1:5000/team/pytorch'
    );
    expect(repositoryOf('127.0.0.1:5000/team/pytorch@sha256:ab')).toBe(
      '127.0.0.1:5000/team/pytorch'
    );
    expect(
      findRepository([PYTORCH], '127.0.0.1:5000/team/pytorch:9')?.name
    ).toBe('team/pytorch');
    expect(findRepository([PYTORCH], 'python:3.11')).toBe(undefined);
  });

  it('knows catalogue entries (by URI or name) and listed tags', () => {
    const catalogue = withCatalogueFields({
      items: [{ name: 'python', uri: 'python:3.11', gpu: false }],
      repositories: [PYTORCH]
    });
    expect(isListedImage(catalogue, 'python:3.11')).toBe(true);
    expect(isListedImage(catalogue, 'python')).toBe(true);
    expect(isListedImage(catalogue, '127.0.0.1:5000/team/pytorch:2.4')).toBe(
      true
    );
    expect(isListedImage(catalogue, 'ubuntu:24.04')).toBe(false);
  });

  it('says how old a tag is in words', () => {
    expect(formatAge('2026-05-07T11:00:00Z', NOW)).toBe('3 days ago');
    expect(formatAge('2026-05-10T11:00:00Z', NOW)).toBe('1 hour ago');
    expect(formatAge('2026-05-10T11:58:00Z', NOW)).toBe('2 minutes ago');
    expect(formatAge('2026-05-10T11:59:50Z', NOW)).toBe('just now');
    // A registry clock a little ahead.
    expect(formatAge('2026-05-10T12:00:30Z', NOW)).toBe('just now');
    expect(formatAge('2026-04-20T12:00:00Z', NOW)).toBe('2 weeks ago');
    expect(formatAge('2026-02-01T12:00:00Z', NOW)).toBe('3 months ago');
    expect(formatAge('2024-05-01T12:00:00Z', NOW)).toBe('2 years ago');
    expect(formatAge(null, NOW)).toBe('');
    expect(formatAge('not a date', NOW)).toBe('');
  });

  it('gives sizes in decimal units as registries do', () => {
    expect(formatSize(512)).toBe('512 B');
    expect(formatSize(4_096)).toBe('4.1 kB');
    expect(formatSize(830_000_000)).toBe('830 MB');
    expect(formatSize(1_234_000_000)).toBe('1.2 GB');
    expect(formatSize(null)).toBe('');
    expect(formatSize(undefined)).toBe('');
  });

  it('writes the detail line of a described tag', () => {
    expect(tagDetails(PYTORCH.tags[0], NOW)).toEqual([
      { kind: 'age', text: 'pushed 3 days ago' },
      { kind: 'size', text: '1.2 GB' },
      { kind: 'cuda', text: 'CUDA 12.1' },
      { kind: 'framework', text: 'pytorch 2.4.0' },
      {
        kind: 'scan',
        text: 'scan: High (3 vulnerabilities)',
        className: 'jp-PAI-scan jp-PAI-scan-high'
      },
      { kind: 'nodes', text: 'on 2 GPU nodes (starts without a pull)' }
    ]);
    expect(tagDetails(PYTORCH.tags[1], NOW)).toEqual([]);
    expect(
      tagDetails(
        {
          ...PYTORCH.tags[0],
          nodesWithImage: 0,
          vulnerabilities: 1,
          scanSeverity: 'Low'
        },
        NOW
      ).map(p => p.text)
    ).toEqual([
      'pushed 3 days ago',
      '1.2 GB',
      'CUDA 12.1',
      'pytorch 2.4.0',
      'scan: Low (1 vulnerability)'
    ]);
    expect(tagLabel(PYTORCH.tags[0], NOW)).toBe('2.4 · 3 days ago');
    expect(tagLabel(PYTORCH.tags[1], NOW)).toBe('2.3');
    expect(severityClass('None')).toBe('jp-PAI-scan jp-PAI-scan-none');
  });

  it('tells in words which registries are down or cut short', () => {
    const base: RegistryStatus = {
      name: 'harbor',
      url: 'https://harbor.example.com',
      kind: 'harbor',
      ok: false,
      listedAt: '2026-05-10T14:02:00Z',
      error: null,
      repositories: 4,
      tags: 40,
      truncated: false
    };
    expect(
      registryNotices([
        {
          ...base,
          error:
            'cannot reach https://harbor.example.com: connection refused; ' +
            'showing the list from 14:02 UTC'
        },
        { ...base, name: 'quiet', error: 'timed out' },
        { ...base, name: 'new', listedAt: null, error: 'HTTP 401' },
        { ...base, name: 'big', ok: true, truncated: true },
        { ...base, name: 'fine', ok: true }
      ])
    ).toEqual([
      'harbor: cannot reach https://harbor.example.com: connection refused; ' +
        'showing the list from 14:02 UTC',
      'quiet: timed out; showing the list from 14:02 UTC',
      'new: HTTP 401; no list yet',
      'big: showing the first 4 repositories and 40 tags only'
    ]);
  });
});
