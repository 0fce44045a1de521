/**
 * The panel's shared state: what the server said last, refreshed by one poll.
 */

import { ISignal, Signal } from '@lumino/signaling';

import { PAIClient, PAIRequestError } from './api';
import type { Info } from './models';

/** A one-line description of any error, for panels ("cluster unreachable: …"). */
export function describeError(error: unknown): string {
  if (error instanceof PAIRequestError) {
    return error.describe();
  }
  if (error instanceof Error) {
    return error.message;
  }
  return String(error);
}

export class PAIModel {
  constructor(readonly client: PAIClient = new PAIClient()) {}

  get changed(): ISignal<this, void> {
    return this._changed;
  }

  get info(): Info | null {
    return this._info;
  }

  /** Why the last refresh failed, or null. */
  get infoError(): string | null {
    return this._infoError;
  }

  async refreshInfo(): Promise<void> {
    try {
      this._info = await this.client.info();
      this._infoError = null;
    } catch (error) {
      this._infoError = describeError(error);
    }
    this._changed.emit();
  }

  private _info: Info | null = null;
  private _infoError: string | null = null;
  private _changed = new Signal<this, void>(this);
}
