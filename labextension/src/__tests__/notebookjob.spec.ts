import { parseParams } from '../notebookjob';

describe('parseParams', () => {
  it('reads name=value lines, skipping blanks and comments', () => {
    expect(parseParams('alpha=0.5\n\n# note\n name = run 2 \nurl=a=b')).toEqual(
      { alpha: '0.5', name: 'run 2', url: 'a=b' }
    );
  });

  it('names a line that is not name=value', () => {
    expect(() => parseParams('alpha')).toThrow('"alpha" is not name=value');
    expect(() => parseParams('=1')).toThrow('"=1" is not name=value');
  });
});
