import {
  chooseFormat,
  contentBytes,
  distrust,
  entryModel,
  fileModel,
  freeName,
  fromBase64,
  isoTime,
  listingModel,
  mimetypeOf,
  readsAsNotebook,
  toBase64,
  withoutTrust
} from '../drivemodel';
import type { StorageListing } from '../restmodels';

const LISTING: StorageListing = {
  storage: 'work',
  path: 'data',
  type: 'directory',
  entries: [
    {
      name: 'sub',
      path: 'data/sub',
      type: 'directory',
      size: null,
      modified: '2026-01-02T03:04:05Z'
    },
    {
      name: 'run.ipynb',
      path: 'data/run.ipynb',
      type: 'file',
      size: 120,
      modified: '2026-01-03T00:00:00Z'
    },
    {
      name: 'data.csv',
      path: 'data/data.csv',
      type: 'file',
      size: 7,
      modified: '2026-01-01T00:00:00Z'
    }
  ]
};

describe('drive models', () => {
  it('turns a listing into a directory model with entries without content', () => {
    const model = listingModel(LISTING, 'data', true);
    expect(model.type).toBe('directory');
    expect(model.name).toBe('data');
    expect(model.last_modified).toBe('2026-01-03T00:00:00.000Z');
    const entries = model.content as any[];
    expect(entries.map(e => [e.name, e.type, e.mimetype, e.size])).toEqual([
      ['sub', 'directory', '', undefined],
      ['run.ipynb', 'notebook', 'application/x-ipynb+json', 120],
      ['data.csv', 'file', 'text/csv', 7]
    ]);
    expect(entries.every(e => e.content === null && e.writable)).toBe(true);
    expect(listingModel(LISTING, 'data', false, false).content).toBeNull();
  });

  it('gives a read-only storage read-only entries', () => {
    expect(entryModel(LISTING.entries[2], false).writable).toBe(false);
  });

  it('chooses the format the caller asked, else by extension and bytes', () => {
    const utf8 = new TextEncoder().encode('héllo');
    const binary = new Uint8Array([0xff, 0xfe, 0x00, 0x80]);
    expect(chooseFormat('a.png', utf8, { format: 'text' })).toBe('text');
    expect(chooseFormat('a.csv', binary, {})).toBe('text');
    expect(chooseFormat('a.ipynb', utf8, {})).toBe('json');
    expect(chooseFormat('a.png', utf8, {})).toBe('base64');
    expect(chooseFormat('noext', utf8, {})).toBe('text');
    expect(chooseFormat('noext', binary, {})).toBe('base64');
  });

  it('reads a file as text, base64 or json, keeping the Last-Modified time', () => {
    const bytes = new TextEncoder().encode('{"cells": []}');
    const base = {
      lastModified: 'Fri, 27 Nov 2026 06:00:00 GMT',
      size: null,
      writable: true
    };
    const asText = fileModel('x/a.json', bytes, { ...base, format: 'text' });
    expect(asText.content).toBe('{"cells": []}');
    expect(asText.last_modified).toBe('2026-11-27T06:00:00.000Z');
    expect(asText.size).toBe(13);
    expect(asText.name).toBe('a.json');
    expect(
      fileModel('n.ipynb', bytes, { ...base, format: 'json' }).content
    ).toEqual({ cells: [] });
    const asB64 = fileModel('a.bin', bytes, { ...base, format: 'base64' });
    expect(Array.from(fromBase64(asB64.content))).toEqual(Array.from(bytes));
    const bare = fileModel('a.bin', null, { ...base, format: 'text', size: 9 });
    expect([bare.content, bare.format, bare.size]).toEqual([null, null, 9]);
  });

  it('encodes what a save sends', () => {
    const bytes = new Uint8Array(70000).map((_, i) => i % 256);
    const back = contentBytes({ format: 'base64', content: toBase64(bytes) });
    expect(Array.from(back)).toEqual(Array.from(bytes));
    expect(
      new TextDecoder().decode(contentBytes({ format: 'text', content: 'é\n' }))
    ).toBe('é\n');
    const nb = contentBytes({
      type: 'notebook',
      format: 'json',
      content: { cells: [] }
    });
    expect(JSON.parse(new TextDecoder().decode(nb))).toEqual({ cells: [] });
    expect(contentBytes({ content: null }).byteLength).toBe(0);
  });

  it('trusts no cell of a notebook nobody vouched for, and saves none', () => {
    const planted = {
      cells: [
        { cell_type: 'code', metadata: { trusted: true }, outputs: [] },
        { cell_type: 'markdown', metadata: { trusted: true }, source: '' },
        { cell_type: 'code', outputs: [] }
      ]
    };
    const saved = withoutTrust(planted);
    expect(saved.cells.map((c: any) => c.metadata)).toEqual([
      {},
      {},
      undefined
    ]);
    expect(planted.cells[0].metadata).toEqual({ trusted: true }); // a copy
    expect(distrust(planted).cells.map((c: any) => c.metadata.trusted)).toEqual(
      [false, undefined, false]
    );
    expect(distrust({ nbformat: 4 })).toEqual({ nbformat: 4 });
    expect(readsAsNotebook('a/run.ipynb')).toBe(true);
    expect(readsAsNotebook('run.json', { type: 'notebook' })).toBe(true);
    expect(readsAsNotebook('run.ipynb', { format: 'text' })).toBe(false);
    expect(readsAsNotebook('run.ipynb', { type: 'file' })).toBe(false);
    expect(readsAsNotebook('data.csv')).toBe(false);
  });

  it('finds a free name', () => {
    const taken = new Set([
      'untitled.txt',
      'untitled 1.txt',
      'Untitled Folder'
    ]);
    expect(freeName('untitled.txt', taken)).toBe('untitled 2.txt');
    expect(freeName('Untitled Folder', taken)).toBe('Untitled Folder 1');
    expect(freeName('new.csv', taken)).toBe('new.csv');
  });

  it('knows mimetypes and times', () => {
    expect(mimetypeOf('a/b.PNG')).toBe('image/png');
    expect(mimetypeOf('Makefile')).toBe('application/octet-stream');
    expect(isoTime(null)).toBe('1970-01-01T00:00:00.000Z');
    expect(isoTime('nonsense')).toBe('1970-01-01T00:00:00.000Z');
  });
});
