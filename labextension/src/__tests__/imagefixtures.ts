/** Registry repositories the image picker's specs share. */
import type { ImageRepository } from '../restmodels';

/** The time the specs count tag ages from. */
export const NOW = Date.parse('2026-05-10T12:00:00Z');

export const PYTORCH: ImageRepository = {
  registry: '127.0.0.1:5000',
  name: 'team/pytorch',
  uri: '127.0.0.1:5000/team/pytorch',
  tags: [
    {
      name: '2.4',
      uri: '127.0.0.1:5000/team/pytorch:2.4',
      digest: 'sha256:aa',
      created: '2026-05-07T11:00:00Z',
      size: 1_234_000_000,
      labels: { 'com.nvidia.cuda.version': '12.1' },
      cuda: '12.1',
      framework: 'pytorch 2.4.0',
      scanSeverity: 'High',
      vulnerabilities: 3,
      nodesWithImage: 2
    },
    { name: '2.3', uri: '127.0.0.1:5000/team/pytorch:2.3', labels: {} }
  ]
};
