import { fullness } from '../hardwarebar';

describe('the hardware view', () => {
  it('colours a resource by how full it is', () => {
    expect(fullness(0, 4)).toBe('low');
    expect(fullness(2, 4)).toBe('mid');
    expect(fullness(7, 8)).toBe('high');
    expect(fullness(0, 0)).toBe('low');
  });
});
