/**
 * The cluster view's words for OpenPAI's VC sharing: guaranteed, borrowed, lent.
 */
import { vcSharing } from '../vcusage';
import type { VirtualCluster } from '../restmodels';

const NONE = { gpu: 0, cpu: 0, memoryMB: 0 };

function vc(extra: Partial<VirtualCluster>): VirtualCluster {
  return {
    name: 'a',
    capacity: { gpu: 4, cpu: 8, memoryMB: 1024 },
    used: NONE,
    free: NONE,
    runningJobs: 0,
    queuedJobs: 0,
    queued: NONE,
    ...extra
  };
}

describe('vcSharing', () => {
  it('says what a borrowing VC holds on loan', () => {
    const borrower = vc({
      guaranteedGpus: 2,
      borrowedGpus: 2,
      lentGpus: 0,
      mayBorrow: true,
      mayLend: true
    });
    expect(vcSharing(borrower)).toBe(
      '2 guaranteed · 2 borrowed · 0 lent · may borrow'
    );
  });

  it('says what a lender has lent, and a VC that keeps its GPUs', () => {
    expect(
      vcSharing(vc({ guaranteedGpus: 2, lentGpus: 2, mayLend: true }))
    ).toBe('2 guaranteed · 0 borrowed · 2 lent');
    expect(vcSharing(vc({ guaranteedGpus: 2, mayLend: false }))).toBe(
      '2 guaranteed · 0 borrowed · 0 lent · lends none'
    );
  });

  it('says nothing where the backend has no guarantee', () => {
    expect(vcSharing(vc({ guaranteedGpus: null }))).toBe('');
  });
});
