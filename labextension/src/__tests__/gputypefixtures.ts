/** Virtual clusters with and without GPU types, for the GPU type specs. */
import type { VirtualCluster } from '../restmodels';

const NONE = { gpu: 0, cpu: 0, memoryMB: 0 };

export const TYPED_VC: VirtualCluster = {
  name: 'default',
  capacity: { gpu: 32, cpu: 64, memoryMB: 1 << 18 },
  used: { gpu: 4, cpu: 8, memoryMB: 1 << 14 },
  free: { gpu: 28, cpu: 56, memoryMB: 1 << 17 },
  runningJobs: 1,
  queuedJobs: 0,
  queued: NONE,
  gpuTypes: [
    {
      name: 'A100-40GB',
      product: 'NVIDIA-A100-SXM4-40GB',
      capacity: 16,
      used: 4,
      free: 12
    },
    {
      name: 'H100-80GB',
      product: 'NVIDIA-H100-80GB-HBM3',
      capacity: 16,
      used: 0,
      free: 16
    }
  ]
};

export const UNTYPED_VC: VirtualCluster = { ...TYPED_VC, gpuTypes: [] };

/** GPUs on nodes without GPU Feature Discovery's labels: the server's "unknown". */
export const UNKNOWN = {
  name: 'unknown',
  product: null,
  capacity: 4,
  used: 1,
  free: 3
};

/** React's root for a spec: react-dom has no type declarations here. */
export async function reactRoot(): Promise<{
  host: HTMLElement;
  root: { render: (el: any) => void; unmount: () => void };
}> {
  const client = 'react-dom/client';
  const { createRoot } = await import(client);
  (globalThis as any).IS_REACT_ACT_ENVIRONMENT = true;
  const host = document.createElement('div');
  document.body.appendChild(host);
  return { host, root: createRoot(host) };
}
