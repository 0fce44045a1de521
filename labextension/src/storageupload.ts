/**
 * Send one file into a storage in pieces: `PUT storage/{name}/{path}` with
 * `Content-Range`, over XMLHttpRequest because fetch reports no upload
 * progress. A 409 says where the server is (`Upload-Offset`); the upload goes
 * on from there, so a dropped piece is sent again rather than the whole file.
 */

import { ServerConnection } from '@jupyterlab/services';

import { abortError, PAIRequestError } from './apirequest';
import {
  contentRange,
  PIECE_BYTES,
  planPieces,
  resumeOffset,
  type IPiece
} from './uploadplan';

/** How often one piece may be told to start elsewhere before giving up. */
const MAX_RESUMES = 5;

/** The headers `ServerConnection.makeRequest` adds: token, else the XSRF cookie. */
export function authHeaders(
  settings: ServerConnection.ISettings
): Record<string, string> {
  const headers: Record<string, string> = {};
  if (settings.token) {
    headers['Authorization'] = `token ${settings.token}`;
  }
  if (typeof document !== 'undefined') {
    const found = document.cookie.match('\\b_xsrf=([^;]*)\\b');
    if (found) {
      headers['X-XSRFToken'] = decodeURIComponent(found[1]);
    }
  }
  return headers;
}

/** The answer to one piece: its status, body and `Upload-Offset` header. */
interface IPieceAnswer {
  status: number;
  text: string;
  offset: string | null;
}

function sendPiece(
  url: string,
  body: Blob,
  headers: Record<string, string>,
  onSent: (bytes: number) => void,
  signal?: AbortSignal
): Promise<IPieceAnswer> {
  return new Promise((resolve, reject) => {
    if (signal?.aborted) {
      reject(abortError());
      return;
    }
    const xhr = new XMLHttpRequest();
    xhr.open('PUT', url);
    for (const [key, value] of Object.entries(headers)) {
      xhr.setRequestHeader(key, value);
    }
    const onAbort = () => xhr.abort();
    signal?.addEventListener('abort', onAbort);
    const finish = () => signal?.removeEventListener('abort', onAbort);
    xhr.upload.onprogress = e => onSent(e.loaded);
    xhr.onload = () => {
      finish();
      resolve({
        status: xhr.status,
        text: xhr.responseText,
        offset: xhr.getResponseHeader('Upload-Offset')
      });
    };
    xhr.onerror = () => {
      finish();
      reject(new PAIRequestError(`PUT ${url.split('?')[0]}: network error`, 0));
    };
    xhr.onabort = () => {
      finish();
      reject(abortError());
    };
    xhr.send(body);
  });
}

function errorOf(answer: IPieceAnswer): PAIRequestError {
  let message = `upload failed: ${answer.status}`;
  try {
    const body = JSON.parse(answer.text);
    message = body?.message ?? body?.reason ?? message;
  } catch {
    // Not JSON: the status says enough.
  }
  return new PAIRequestError(String(message), answer.status);
}

/**
 * Upload `file` to `url` (the storage endpoint's full URL); `onProgress` gets
 * the bytes the server holds plus those of the piece in flight.
 */
export async function uploadFile(
  url: string,
  file: Blob,
  settings: ServerConnection.ISettings,
  onProgress: (sent: number) => void,
  signal?: AbortSignal,
  pieceBytes = PIECE_BYTES
): Promise<void> {
  const total = file.size;
  const headers = authHeaders(settings);
  let queue: IPiece[] = planPieces(total, 0, pieceBytes);
  let resumes = 0;
  while (queue.length) {
    const piece = queue[0];
    const range = contentRange(piece, total);
    const answer = await sendPiece(
      url,
      file.slice(piece.start, piece.end),
      {
        ...headers,
        'Content-Type': 'application/octet-stream',
        ...(range ? { 'Content-Range': range } : {})
      },
      loaded =>
        onProgress(piece.start + Math.min(loaded, piece.end - piece.start)),
      signal
    );
    if (answer.status === 409) {
      const offset = resumeOffset(answer.offset, total);
      if (offset === null || resumes >= MAX_RESUMES) {
        throw errorOf(answer);
      }
      resumes += 1;
      queue = planPieces(total, offset, pieceBytes);
      continue;
    }
    if (answer.status < 200 || answer.status >= 300) {
      throw errorOf(answer);
    }
    onProgress(piece.end);
    queue.shift();
  }
}
