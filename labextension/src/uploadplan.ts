/**
 * Upload arithmetic, free of the browser: the pieces a file is sent in, the
 * `Content-Range` of each, and the progress of one file and of all files.
 */

/** Each PUT carries at most this much (the server takes up to 64 MiB). */
export const PIECE_BYTES = 8 * 1024 * 1024;

/** One request's share of a file: bytes `start` to `end` (exclusive). */
export interface IPiece {
  start: number;
  end: number;
}

/** The pieces of a `total`-byte file from `offset` on; an empty file is one empty piece. */
export function planPieces(
  total: number,
  offset = 0,
  pieceBytes = PIECE_BYTES
): IPiece[] {
  if (pieceBytes <= 0) {
    throw new Error(`piece size ${pieceBytes} must be positive`);
  }
  if (total === 0) {
    return [{ start: 0, end: 0 }];
  }
  const pieces: IPiece[] = [];
  for (let start = Math.max(0, offset); start < total; start += pieceBytes) {
    pieces.push({ start, end: Math.min(total, start + pieceBytes) });
  }
  return pieces;
}

/**
 * The `Content-Range` header of a piece (END inclusive), or null for an
 * empty file, which is sent whole without one (a range cannot be empty).
 */
export function contentRange(piece: IPiece, total: number): string | null {
  if (total === 0 || piece.end <= piece.start) {
    return null;
  }
  return `bytes ${piece.start}-${piece.end - 1}/${total}`;
}

/** Where the server says to go on after a 409 (`Upload-Offset`), or null. */
export function resumeOffset(
  header: string | null,
  total: number
): number | null {
  if (header === null || !/^\d+$/.test(header.trim())) {
    return null;
  }
  const offset = Number(header.trim());
  return offset <= total ? offset : null;
}

export type UploadStatus =
  'queued' | 'uploading' | 'done' | 'failed' | 'cancelled';

/** One file of an upload, as the progress bars show it. */
export interface IUploadItem {
  id: number;
  /** The path inside the storage the file goes to. */
  path: string;
  total: number;
  sent: number;
  status: UploadStatus;
  error?: string;
}

/** A fraction in [0, 1] of `sent` over `total` (an empty file is done when done). */
export function fraction(sent: number, total: number, done = false): number {
  if (total <= 0) {
    return done ? 1 : 0;
  }
  return Math.min(1, Math.max(0, sent / total));
}

/** All files together: bytes sent of bytes to send, and how many files are finished. */
export function overallProgress(items: IUploadItem[]): {
  sent: number;
  total: number;
  fraction: number;
  finished: number;
  count: number;
} {
  let sent = 0;
  let total = 0;
  let finished = 0;
  for (const item of items) {
    if (item.status === 'cancelled') {
      continue;
    }
    total += item.total;
    sent +=
      item.status === 'done' ? item.total : Math.min(item.sent, item.total);
    if (item.status === 'done' || item.status === 'failed') {
      finished += 1;
    }
  }
  const count = items.filter(i => i.status !== 'cancelled').length;
  return {
    sent,
    total,
    fraction: total ? sent / total : count && finished === count ? 1 : 0,
    finished,
    count
  };
}

/** `folder/name` joined, without leading, trailing or doubled slashes. */
export function joinPath(...parts: string[]): string {
  return parts
    .join('/')
    .split('/')
    .filter(p => p.length > 0)
    .join('/');
}
