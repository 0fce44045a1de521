/** GPU use per task as sampled while a job runs, for the job tab's charts. */

import type { GpuUsage, JobUtilisation } from './restmodels';

/** One sample of a task. */
export interface IGpuSample {
  at: number;
  gpuPercent: number | null;
  memoryMB: number | null;
}

/** Samples kept per task: at a 5 s refresh, the last 10 minutes. */
export const MAX_SAMPLES = 120;

/** The samples read so far, per task (`role-index`). DOM-free. */
export class UtilisationHistory {
  add(u: JobUtilisation, at: number = Date.now()): void {
    this._note = u.note;
    for (const t of u.tasks) {
      const key = `${t.role}-${t.index}`;
      const list = this._samples.get(key) ?? [];
      if (t.current) {
        list.push(sample(t.current, at));
        list.splice(0, Math.max(0, list.length - MAX_SAMPLES));
      }
      this._samples.set(key, list);
    }
  }

  samples(task: string): IGpuSample[] {
    return this._samples.get(task) ?? [];
  }

  get note(): string | null {
    return this._note;
  }

  private _samples = new Map<string, IGpuSample[]>();
  private _note: string | null = null;
}

function sample(u: GpuUsage, at: number): IGpuSample {
  return { at, gpuPercent: u.gpuPercent, memoryMB: u.memoryMB };
}
