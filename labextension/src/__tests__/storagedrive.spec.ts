import { PAIClient } from '../api';
import { StorageDrive } from '../storagedrive';
import { uploadFile } from '../storageupload';
import { BASE_URL, FakeServer, jsonResponse } from './fakeserver';

/** A stand-in XMLHttpRequest: each send is answered by `answer`, and recorded. */
class FakeXHR {
  static sent: {
    url: string;
    headers: Record<string, string>;
    size: number;
  }[] = [];
  static answer: (range: string | undefined) => {
    status: number;
    body: unknown;
    offset?: string;
  } = () => ({
    status: 200,
    body: {}
  });
  upload: { onprogress: ((e: { loaded: number }) => void) | null } = {
    onprogress: null
  };
  onload: (() => void) | null = null;
  onerror: (() => void) | null = null;
  onabort: (() => void) | null = null;
  status = 0;
  responseText = '';
  private url = '';
  private headers: Record<string, string> = {};
  private offset: string | null = null;
  open(_method: string, url: string) {
    this.url = url;
  }
  setRequestHeader(key: string, value: string) {
    this.headers[key] = value;
  }
  getResponseHeader(name: string) {
    return name === 'Upload-Offset' ? this.offset : null;
  }
  abort() {
    this.onabort?.();
  }
  send(body: Blob) {
    FakeXHR.sent.push({
      url: this.url,
      headers: this.headers,
      size: body.size
    });
    const answer = FakeXHR.answer(this.headers['Content-Range']);
    this.status = answer.status;
    this.responseText = JSON.stringify(answer.body);
    this.offset = answer.offset ?? null;
    setTimeout(() => {
      this.upload.onprogress?.({ loaded: body.size });
      this.onload?.();
    }, 0);
  }
}

beforeEach(() => {
  FakeXHR.sent = [];
  (globalThis as any).XMLHttpRequest = FakeXHR;
});

describe('uploadFile', () => {
  it('sends pieces with Content-Range and the token, resuming on 409', async () => {
    const server = new FakeServer('secret');
    let refused = false;
    FakeXHR.answer = range => {
      // The server lost the second piece's start: it asks to go on from 12.
      if (range === 'bytes 10-19/25' && !refused) {
        refused = true;
        return {
          status: 409,
          body: { message: 'Content-Range starts at 10; 12 received' },
          offset: '12'
        };
      }
      return { status: 200, body: {} };
    };
    const progress: number[] = [];
    await uploadFile(
      `${BASE_URL}pai/api/storage/work/a.bin`,
      new Blob([new Uint8Array(25)]),
      server.settings,
      sent => progress.push(sent),
      undefined,
      10
    );
    expect(FakeXHR.sent.map(s => s.headers['Content-Range'])).toEqual([
      'bytes 0-9/25',
      'bytes 10-19/25',
      'bytes 12-21/25',
      'bytes 22-24/25'
    ]);
    expect(FakeXHR.sent[0].headers['Authorization']).toBe('token secret');
    expect(FakeXHR.sent.map(s => s.size)).toEqual([10, 10, 10, 3]);
    expect(progress[progress.length - 1]).toBe(25);
  });

  it('fails with the server message', async () => {
    const server = new FakeServer();
    FakeXHR.answer = () => ({
      status: 403,
      body: { message: 'storage data is read-only' }
    });
    await expect(
      uploadFile(
        `${BASE_URL}pai/api/storage/data/a.txt`,
        new Blob(['x']),
        server.settings,
        () => undefined
      )
    ).rejects.toThrow('storage data is read-only');
    expect(FakeXHR.sent[0].headers['Content-Range']).toBe('bytes 0-0/1');
  });
});

describe('StorageDrive', () => {
  const storage = {
    name: 'work',
    mountPath: '/mnt/work',
    readOnly: false
  };

  it('lists a folder and reads a file by its format', async () => {
    const server = new FakeServer();
    server.json('GET', 'pai/api/storage/work/data', {
      storage: 'work',
      path: 'data',
      type: 'directory',
      entries: [
        {
          name: 'data.csv',
          path: 'data/data.csv',
          type: 'file',
          size: 8,
          modified: '2026-01-01T00:00:00Z'
        }
      ]
    });
    server.on(
      'GET',
      'pai/api/storage/work/data/data.csv',
      () =>
        new Response('a,b\n1,2\n', {
          headers: {
            'Content-Type': 'text/csv',
            'Content-Disposition': 'inline; filename="data.csv"',
            'Last-Modified': 'Fri, 27 Nov 2026 06:00:00 GMT'
          }
        })
    );
    const drive = new StorageDrive(new PAIClient(server.settings), storage);
    const folder = await drive.get('data');
    expect(folder.type).toBe('directory');
    expect(folder.content.map((e: any) => e.path)).toEqual(['data/data.csv']);
    const csv = await drive.get('data/data.csv', { content: true });
    expect([csv.type, csv.format, csv.content]).toEqual([
      'file',
      'text',
      'a,b\n1,2\n'
    ]);
    expect(csv.last_modified).toBe('2026-11-27T06:00:00.000Z');
    const b64 = await drive.get('data/data.csv', { format: 'base64' });
    expect(atob(b64.content)).toBe('a,b\n1,2\n');
  });

  it('renames, deletes recursively and signals the changes', async () => {
    const server = new FakeServer();
    server.on('PATCH', 'pai/api/storage/work/a.txt', () =>
      jsonResponse({ name: 'b.txt', path: 'b.txt', type: 'file', size: 1 })
    );
    server.on(
      'GET',
      'pai/api/storage/work/b.txt',
      () =>
        new Response('x', {
          headers: { 'Content-Disposition': 'inline; filename="b.txt"' }
        })
    );
    server.on(
      'DELETE',
      'pai/api/storage/work/b.txt',
      () => new Response(null, { status: 204 })
    );
    const drive = new StorageDrive(new PAIClient(server.settings), storage);
    const changes: string[] = [];
    drive.fileChanged.connect((_, change) => changes.push(change.type));
    const renamed = await drive.rename('a.txt', 'b.txt');
    expect(renamed.path).toBe('b.txt');
    const patch = server.requests.find(r => r.method === 'PATCH')!;
    expect(JSON.parse(patch.body)).toEqual({ path: 'b.txt' });
    await drive.delete('b.txt');
    const del = server.requests.find(r => r.method === 'DELETE')!;
    expect(del.url.searchParams.get('recursive')).toBe('true');
    expect(changes).toEqual(['rename', 'delete']);
    expect(await drive.listCheckpoints('b.txt')).toEqual([]);
  });

  const NOTEBOOK = {
    cells: [
      {
        cell_type: 'code',
        metadata: { trusted: true },
        outputs: [
          {
            output_type: 'display_data',
            data: { 'text/html': '<script>alert(1)</script>' },
            metadata: {}
          }
        ],
        source: ''
      }
    ],
    metadata: {},
    nbformat: 4,
    nbformat_minor: 5
  };
  const notebookAnswer = (trusted: string | null) => () =>
    new Response(JSON.stringify(NOTEBOOK), {
      headers: {
        'Content-Disposition': 'inline; filename="run.ipynb"',
        ...(trusted === null ? {} : { 'X-Notebook-Trusted': trusted })
      }
    });
  const trustOf = (model: any) =>
    model.content.cells.map((c: any) => c.metadata.trusted);

  it('opens a notebook through the notary, trusting only what it vouches for', async () => {
    for (const [header, trusted] of [
      ['true', true],
      ['false', false],
      [null, false]
    ] as const) {
      const server = new FakeServer();
      server.on(
        'GET',
        'pai/api/storage/work/run.ipynb',
        notebookAnswer(header)
      );
      const drive = new StorageDrive(new PAIClient(server.settings), storage);
      const model = await drive.get('run.ipynb');
      expect([model.type, model.format]).toEqual(['notebook', 'json']);
      expect(trustOf(model)).toEqual([trusted]);
      expect(server.requests[0].url.searchParams.get('notebook')).toBe('1');
    }
  });

  it('opens a notebook too big for the notary as it is, untrusted', async () => {
    const server = new FakeServer();
    server.on('GET', 'pai/api/storage/work/run.ipynb', request =>
      request.url.searchParams.get('notebook')
        ? jsonResponse({ message: 'too big', errors: [] }, 413)
        : notebookAnswer(null)()
    );
    const drive = new StorageDrive(new PAIClient(server.settings), storage);
    const model = await drive.get('run.ipynb');
    expect(trustOf(model)).toEqual([false]);
    const asked = () =>
      server.requests.map(r => r.url.searchParams.get('notebook'));
    expect(asked()).toEqual(['1', null]);
    // A listing's entry, or the bytes as text: the server is not asked to sign.
    await drive.get('run.ipynb', { content: false });
    await drive.get('run.ipynb', { format: 'text' });
    expect(asked().slice(2)).toEqual([null, null]);
  });

  it('saves a notebook whole for the server to sign, else without trusted', async () => {
    const server = new FakeServer();
    server.on(
      'GET',
      'pai/api/storage/work/run.ipynb',
      () =>
        new Response('{}', {
          headers: { 'Content-Disposition': 'inline; filename="run.ipynb"' }
        })
    );
    const drive = new StorageDrive(new PAIClient(server.settings), storage);
    FakeXHR.answer = () => ({ status: 200, body: { complete: true } });
    const options = {
      type: 'notebook',
      format: 'json',
      content: NOTEBOOK
    } as const;
    await drive.save('run.ipynb', options);
    expect(FakeXHR.sent.map(s => s.url)).toEqual([
      `${BASE_URL}pai/api/storage/work/run.ipynb?notebook=1`
    ]);
    const whole = FakeXHR.sent[0];
    expect(whole.headers['Content-Range']).toBe(
      `bytes 0-${whole.size - 1}/${whole.size}`
    );
    // The server's limit is lower than the drive thought: in pieces, unsigned.
    FakeXHR.sent = [];
    let first = true;
    FakeXHR.answer = () => {
      if (first) {
        first = false;
        return { status: 413, body: { message: 'too large' } };
      }
      return { status: 200, body: { complete: true } };
    };
    await drive.save('run.ipynb', options);
    expect(FakeXHR.sent.map(s => s.url)).toEqual([
      `${BASE_URL}pai/api/storage/work/run.ipynb?notebook=1`,
      `${BASE_URL}pai/api/storage/work/run.ipynb`
    ]);
    expect(FakeXHR.sent[1].size).toBeLessThan(FakeXHR.sent[0].size);
    expect(NOTEBOOK.cells[0].metadata.trusted).toBe(true); // the model is untouched
  });

  it('saves text through PUT and returns the model the server has', async () => {
    const server = new FakeServer();
    FakeXHR.answer = () => ({ status: 200, body: { complete: true } });
    server.on(
      'GET',
      'pai/api/storage/work/notes.txt',
      () =>
        new Response('hello', {
          headers: {
            'Content-Disposition': 'inline; filename="notes.txt"',
            'Last-Modified': 'Fri, 27 Nov 2026 06:30:00 GMT'
          }
        })
    );
    const drive = new StorageDrive(new PAIClient(server.settings), storage);
    const saved = await drive.save('notes.txt', {
      type: 'file',
      format: 'text',
      content: 'hello'
    });
    expect(FakeXHR.sent).toHaveLength(1);
    expect(FakeXHR.sent[0].url).toBe(
      `${BASE_URL}pai/api/storage/work/notes.txt`
    );
    expect(FakeXHR.sent[0].size).toBe(5);
    expect(saved.last_modified).toBe('2026-11-27T06:30:00.000Z');
  });
});
