import {
  contentRange,
  fraction,
  joinPath,
  overallProgress,
  PIECE_BYTES,
  planPieces,
  resumeOffset,
  type IUploadItem
} from '../uploadplan';

const MiB = 1024 * 1024;

describe('planPieces', () => {
  it('cuts a file in 8 MiB pieces, the last one short', () => {
    const total = 20 * MiB + 5;
    const pieces = planPieces(total);
    expect(PIECE_BYTES).toBe(8 * MiB);
    expect(pieces).toEqual([
      { start: 0, end: 8 * MiB },
      { start: 8 * MiB, end: 16 * MiB },
      { start: 16 * MiB, end: total }
    ]);
    expect(pieces.map(p => contentRange(p, total))).toEqual([
      `bytes 0-${8 * MiB - 1}/${total}`,
      `bytes ${8 * MiB}-${16 * MiB - 1}/${total}`,
      `bytes ${16 * MiB}-${total - 1}/${total}`
    ]);
  });

  it('goes on from an offset the server gave, not from a piece boundary', () => {
    expect(planPieces(25, 7, 10)).toEqual([
      { start: 7, end: 17 },
      { start: 17, end: 25 }
    ]);
    expect(planPieces(25, 25, 10)).toEqual([]);
  });

  it('sends an empty file as one empty piece without a range', () => {
    const pieces = planPieces(0);
    expect(pieces).toEqual([{ start: 0, end: 0 }]);
    expect(contentRange(pieces[0], 0)).toBeNull();
  });

  it('refuses a piece size of zero', () => {
    expect(() => planPieces(10, 0, 0)).toThrow('piece size 0');
  });
});

describe('resumeOffset', () => {
  it('reads Upload-Offset and refuses what cannot be', () => {
    expect(resumeOffset('4096', 8192)).toBe(4096);
    expect(resumeOffset(' 0 ', 10)).toBe(0);
    expect(resumeOffset(null, 10)).toBeNull();
    expect(resumeOffset('-3', 10)).toBeNull();
    expect(resumeOffset('11', 10)).toBeNull();
    expect(resumeOffset('abc', 10)).toBeNull();
  });
});

describe('progress', () => {
  const item = (
    id: number,
    total: number,
    sent: number,
    status: IUploadItem['status']
  ): IUploadItem => ({ id, path: `f${id}`, total, sent, status });

  it('is a fraction of one file, an empty file counting when done', () => {
    expect(fraction(5, 10)).toBe(0.5);
    expect(fraction(15, 10)).toBe(1);
    expect(fraction(0, 0)).toBe(0);
    expect(fraction(0, 0, true)).toBe(1);
  });

  it('adds all files up, leaving out cancelled ones', () => {
    const all = overallProgress([
      item(1, 100, 100, 'done'),
      item(2, 300, 100, 'uploading'),
      item(3, 600, 0, 'queued'),
      item(4, 1000, 500, 'cancelled')
    ]);
    expect(all).toEqual({
      sent: 200,
      total: 1000,
      fraction: 0.2,
      finished: 1,
      count: 3
    });
  });

  it('is whole when only empty files were sent', () => {
    expect(overallProgress([item(1, 0, 0, 'done')]).fraction).toBe(1);
    expect(overallProgress([]).fraction).toBe(0);
  });
});

describe('joinPath', () => {
  it('joins without doubled or outer slashes', () => {
    expect(joinPath('', 'a.txt')).toBe('a.txt');
    expect(joinPath('data/', '/sub/b.txt')).toBe('data/sub/b.txt');
  });
});
