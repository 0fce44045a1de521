/**
 * A fake `fetch` for ServerConnection settings: tests register answers per
 * method and path and read back the requests that were made.
 */
import { ServerConnection } from '@jupyterlab/services';

export interface IRecordedRequest {
  method: string;
  url: URL;
  path: string;
  headers: Headers;
  body: string;
}

type Answer = (request: IRecordedRequest) => Response | Promise<Response>;

export const BASE_URL = 'http://localhost:8888/lab-base/';

export class FakeServer {
  readonly requests: IRecordedRequest[] = [];
  readonly settings: ServerConnection.ISettings;

  constructor(token = '') {
    this.settings = ServerConnection.makeSettings({
      baseUrl: BASE_URL,
      token,
      fetch: (async (request: Request) => this.handle(request)) as any
    });
  }

  on(method: string, path: string, answer: Answer): this {
    this._answers.set(`${method} ${path}`, answer);
    return this;
  }

  json(method: string, path: string, body: unknown, status = 200): this {
    return this.on(method, path, () => jsonResponse(body, status));
  }

  private async handle(request: Request): Promise<Response> {
    const url = new URL(request.url);
    const path = url.pathname.slice(new URL(BASE_URL).pathname.length);
    const recorded: IRecordedRequest = {
      method: request.method,
      url,
      path,
      headers: request.headers,
      body: request.body ? await request.text() : ''
    };
    this.requests.push(recorded);
    const answer = this._answers.get(`${request.method} ${path}`);
    if (!answer) {
      return new Response('<html>404: Not Found</html>', {
        status: 404,
        statusText: 'Not Found',
        headers: { 'Content-Type': 'text/html' }
      });
    }
    return answer(recorded);
  }

  private _answers = new Map<string, Answer>();
}

export function jsonResponse(body: unknown, status = 200): Response {
  return new Response(JSON.stringify(body), {
    status,
    headers: { 'Content-Type': 'application/json' }
  });
}
