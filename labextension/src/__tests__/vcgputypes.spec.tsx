/** The cluster view's GPU types under a VC: name, used / capacity, free; none where untyped. */
import * as React from 'react';
import { act } from 'react';

import { VcUsage } from '../vcusage';
import type { VirtualCluster } from '../restmodels';
import { reactRoot, TYPED_VC, UNKNOWN, UNTYPED_VC } from './gputypefixtures';

async function renderVc(vc: VirtualCluster): Promise<HTMLElement> {
  const { host, root } = await reactRoot();
  await act(async () => root.render(<VcUsage vc={vc} />));
  return host;
}

describe('VcUsage GPU types', () => {
  it('lists each type with used / capacity and free', async () => {
    const host = await renderVc(TYPED_VC);
    const table = host.querySelector(
      'table[aria-label="default GPUs by type"]'
    );
    expect(table).not.toBeNull();
    const rows = [...table!.querySelectorAll('tbody tr')].map(tr =>
      [...tr.children].map(c => c.textContent)
    );
    expect(rows).toEqual([
      ['A100-40GB', '4 / 16', '12'],
      ['H100-80GB', '0 / 16', '16']
    ]);
    const a100 = host.querySelector('[data-gpu-type="A100-40GB"]');
    expect(a100?.getAttribute('title')).toBe('NVIDIA-A100-SXM4-40GB');
  });

  it('counts unlabelled GPUs beside the types, alone they are untyped', async () => {
    const host = await renderVc({
      ...TYPED_VC,
      gpuTypes: [...TYPED_VC.gpuTypes!, UNKNOWN]
    });
    const row = host.querySelector('[data-gpu-type="unknown"]')!;
    expect(row.textContent).toBe('unknown1 / 43');
    expect(row.getAttribute('title')).toContain('without a GPU type label');
    const alone = await renderVc({ ...TYPED_VC, gpuTypes: [UNKNOWN] });
    expect(alone.querySelector('table')).toBeNull();
  });

  it('shows nothing by type for untyped GPUs', async () => {
    const untyped = await renderVc(UNTYPED_VC);
    const absent = await renderVc({ ...UNTYPED_VC, gpuTypes: undefined });
    expect(untyped.querySelector('table')).toBeNull();
    expect(untyped.innerHTML).toBe(absent.innerHTML);
  });
});
