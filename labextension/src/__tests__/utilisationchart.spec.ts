import type { JobUtilisation } from '../restmodels';
import { latestText, sparkPoints } from '../utilisationchart';
import { MAX_SAMPLES, UtilisationHistory } from '../utilisationhistory';

function util(percent: number | null, memory: number | null): JobUtilisation {
  const current =
    percent === null && memory === null
      ? null
      : { gpuPercent: percent, memoryMB: memory };
  return {
    jobId: 'alice~j',
    source: current ? 'prometheus' : null,
    current,
    lastHour: current,
    tasks: [{ role: 'w', index: 0, gpuNumber: 1, current, lastHour: current }],
    note: current ? null : 'NVML sees no GPU on this machine'
  };
}

describe('a task’s GPU use chart', () => {
  it('keeps the samples read while the job runs, up to a bound', () => {
    const h = new UtilisationHistory();
    for (let i = 0; i < MAX_SAMPLES + 5; i++) {
      h.add(util(i % 100, 100), i);
    }
    const s = h.samples('w-0');
    expect(s.length).toBe(MAX_SAMPLES);
    expect(s[s.length - 1].at).toBe(MAX_SAMPLES + 4);
  });

  it('keeps nothing (not zeros) where nothing is measured, and the note', () => {
    const h = new UtilisationHistory();
    h.add(util(null, null));
    expect(h.samples('w-0')).toEqual([]);
    expect(h.note).toBe('NVML sees no GPU on this machine');
  });

  it('draws GPU % with 100 at the top', () => {
    const samples = [
      { at: 0, gpuPercent: 0, memoryMB: 1 },
      { at: 1, gpuPercent: 50, memoryMB: 1 },
      { at: 2, gpuPercent: 100, memoryMB: 1 }
    ];
    expect(sparkPoints(samples, 100, 20)).toBe('0.0,20.0 50.0,10.0 100.0,0.0');
    expect(sparkPoints([], 100, 20)).toBe('');
  });

  it('says the latest figures', () => {
    expect(latestText({ at: 0, gpuPercent: 84.6, memoryMB: 50000 })).toBe(
      '85 % · 50000 MiB'
    );
    expect(latestText(undefined)).toBe('—');
  });
});
