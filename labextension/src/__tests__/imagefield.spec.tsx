/**
 * The launch form's Image field: catalogue entries, a registry repository
 * then one of its tags with the tag's details, the custom URI, and what shows
 * when the admin allows only listed images.
 */
import * as React from 'react';
import { act } from 'react';

import { withCatalogueFields, type IImageCatalogue } from '../imagecatalogue';
import { ImageField } from '../imagefield';
import type { Image, ImageRepository } from '../restmodels';
import { NOW, PYTORCH } from './imagefixtures';

const IMAGES: Image[] = [
  { name: 'python', uri: 'python:3.11', gpu: false, description: 'Python' }
];
const TENSORFLOW: ImageRepository = {
  registry: '127.0.0.1:5000',
  name: 'team/tensorflow',
  uri: '127.0.0.1:5000/team/tensorflow',
  tags: [{ name: '2.16', uri: '127.0.0.1:5000/team/tensorflow:2.16' }]
};

interface IRendered {
  host: HTMLElement;
  picked: (string | null)[];
  typed: string[];
  render: (image: string, custom?: boolean) => Promise<void>;
  unmount: () => void;
}

async function renderField(catalogue: IImageCatalogue): Promise<IRendered> {
  // react-dom has no type declarations here: loaded by a name TypeScript leaves alone.
  const client = 'react-dom/client';
  const { createRoot } = await import(client);
  (globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
  const host = document.createElement('div');
  document.body.appendChild(host);
  const root = createRoot(host);
  const picked: (string | null)[] = [];
  const typed: string[] = [];
  const render = async (image: string, custom = false) => {
    await act(async () => {
      root.render(
        <ImageField
          image={image}
          images={catalogue.items}
          catalogue={catalogue}
          custom={custom}
          errors={new Map()}
          onPick={uri => picked.push(uri)}
          onType={uri => typed.push(uri)}
          now={NOW}
        />
      );
    });
  };
  return {
    host,
    picked,
    typed,
    render,
    unmount: () => {
      act(() => root.unmount());
      host.remove();
    }
  };
}

function choose(select: HTMLSelectElement, value: string): void {
  act(() => {
    select.value = value;
    select.dispatchEvent(new Event('change', { bubbles: true }));
  });
}

const imageSelect = (host: HTMLElement) =>
  host.querySelector<HTMLSelectElement>("[data-path='prerequisites'] select")!;

describe('the image field', () => {
  const catalogue = withCatalogueFields({
    items: IMAGES,
    repositories: [PYTORCH, TENSORFLOW],
    registries: [
      {
        name: 'harbor',
        url: 'https://harbor.example.com',
        kind: 'harbor',
        ok: false,
        listedAt: '2026-05-10T14:02:00Z',
        error: 'cannot reach https://harbor.example.com: connection refused',
        repositories: 0,
        tags: 0,
        truncated: false
      }
    ]
  });

  it('offers the catalogue, each repository by registry, and a custom URI', async () => {
    const f = await renderField(catalogue);
    await f.render('python:3.11');
    const select = imageSelect(f.host);
    expect([...select.querySelectorAll('optgroup')].map(g => g.label)).toEqual([
      'Catalogue',
      '127.0.0.1:5000'
    ]);
    expect([...select.options].map(o => o.textContent)).toEqual([
      'python (CPU)',
      'team/pytorch',
      'team/tensorflow',
      'Custom image URI…'
    ]);
    expect(select.value).toBe('python:3.11');
    expect(f.host.querySelector('#jp-PAI-image-tag')).toBe(null);
    expect(f.host.querySelector('#jp-PAI-image-uri')).toBe(null);
    // The registry that is down, in words.
    expect(f.host.querySelector('[role="status"]')?.textContent).toBe(
      'harbor: cannot reach https://harbor.example.com: connection refused; ' +
        'showing the list from 14:02 UTC'
    );
    // Picking a repository picks its newest tag.
    choose(select, select.options[1].value);
    expect(f.picked).toEqual(['127.0.0.1:5000/team/pytorch:2.4']);
    f.unmount();
  });

  it('shows a listed tag as repository, tag and its details', async () => {
    const f = await renderField(catalogue);
    await f.render('127.0.0.1:5000/team/pytorch:2.4');
    const select = imageSelect(f.host);
    expect(select.selectedOptions[0].textContent).toBe('team/pytorch');
    const tags = f.host.querySelector<HTMLSelectElement>('#jp-PAI-image-tag')!;
    expect(tags.value).toBe('127.0.0.1:5000/team/pytorch:2.4');
    expect([...tags.options].map(o => o.textContent)).toEqual([
      '2.4 · 3 days ago',
      '2.3'
    ]);
    const detail = f.host.querySelector('.jp-PAI-image-detail')!;
    expect(detail.textContent).toBe(
      '127.0.0.1:5000/team/pytorch:2.4 · pushed 3 days ago · 1.2 GB · ' +
        'CUDA 12.1 · pytorch 2.4.0 · scan: High (3 vulnerabilities) · ' +
        'on 2 GPU nodes (starts without a pull)'
    );
    expect(detail.querySelector('[data-detail="scan"]')?.className).toContain(
      'jp-PAI-scan-high'
    );
    expect(f.host.querySelector('.jp-PAI-image-labels')?.textContent).toBe(
      '1 labelcom.nvidia.cuda.version = 12.1'
    );
    // The label describes the select; no custom URI input.
    expect(
      f.host.querySelector('label[for="jp-PAI-image-tag"]')?.textContent
    ).toBe('Tag');
    expect(f.host.querySelector('#jp-PAI-image-uri')).toBe(null);
    choose(tags, '127.0.0.1:5000/team/pytorch:2.3');
    expect(f.picked).toEqual(['127.0.0.1:5000/team/pytorch:2.3']);
    await f.render('127.0.0.1:5000/team/pytorch:2.3');
    expect(f.host.querySelector('.jp-PAI-image-detail')?.textContent).toBe(
      '127.0.0.1:5000/team/pytorch:2.3 · not described (only the newest tags are)'
    );
    f.unmount();
  });

  it('keeps the custom URI input, and names the tags of a listed repository', async () => {
    const f = await renderField(catalogue);
    await f.render('python:3.11');
    choose(imageSelect(f.host), '__custom__');
    expect(f.picked).toEqual([null]);
    await f.render('127.0.0.1:5000/team/pytorch:2.5', true);
    expect(imageSelect(f.host).value).toBe('__custom__');
    const input = f.host.querySelector<HTMLInputElement>('#jp-PAI-image-uri')!;
    expect(input.value).toBe('127.0.0.1:5000/team/pytorch:2.5');
    expect(f.host.querySelector('.jp-PAI-image-untagged')?.textContent).toBe(
      '127.0.0.1:5000/team/pytorch lists no such tag; newest: 2.4, 2.3'
    );
    expect(f.host.textContent).toContain('Any image your cluster can pull.');
    f.unmount();
  });

  it('offers no custom URI where the admin allows only listed images', async () => {
    const listedOnly = { ...catalogue, customImages: false, registries: [] };
    const f = await renderField(listedOnly);
    await f.render('ubuntu:24.04', true);
    const select = imageSelect(f.host);
    expect([...select.options].map(o => o.textContent)).toEqual([
      'ubuntu:24.04 (not listed)',
      'python (CPU)',
      'team/pytorch',
      'team/tensorflow'
    ]);
    expect(f.host.querySelector('#jp-PAI-image-uri')).toBe(null);
    expect(f.host.querySelector('.jp-PAI-image-unlisted')?.textContent).toBe(
      'ubuntu:24.04 is not listed: the admin allows only the listed images; pick one.'
    );
    expect(f.host.querySelector('[role="status"]')).toBe(null);
    // A listed image shows as usual.
    await f.render('127.0.0.1:5000/team/tensorflow:2.16', true);
    expect(f.host.querySelector('.jp-PAI-image-unlisted')).toBe(null);
    expect(
      f.host.querySelector<HTMLSelectElement>('#jp-PAI-image-tag')?.value
    ).toBe('127.0.0.1:5000/team/tensorflow:2.16');
    f.unmount();
  });

  it('is the old flat select for a server without registries', async () => {
    const f = await renderField(withCatalogueFields({ items: IMAGES }));
    await f.render('python:3.11');
    const select = imageSelect(f.host);
    expect(select.querySelectorAll('optgroup').length).toBe(0);
    expect([...select.options].map(o => o.value)).toEqual([
      'python:3.11',
      '__custom__'
    ]);
    expect(f.host.textContent).toContain('Python');
    f.unmount();
  });
});
