/** The panel reads `GET images` whole: the catalogue and the registries' repositories. */
import { PAIClient } from '../api';
import { PAIModel } from '../panelstate';
import { FakeServer } from './fakeserver';
import { PYTORCH } from './imagefixtures';

function model(images: Record<string, unknown>): PAIModel {
  const server = new FakeServer()
    .json('GET', 'pai/api/info', {
      backend: 'local',
      version: '0',
      user: 'mei'
    })
    .json('GET', 'pai/api/images', images)
    .json('GET', 'pai/api/storage', { items: [] });
  return new PAIModel(new PAIClient(server.settings));
}

const PYTHON = { name: 'python', uri: 'python:3.11', gpu: false };

describe('the image choices', () => {
  it('keeps the repositories, registries and policy the server sends', async () => {
    const m = model({
      items: [PYTHON],
      repositories: [PYTORCH],
      registries: [],
      customImages: false
    });
    await m.refreshCatalogues();
    expect(m.images).toEqual([PYTHON]);
    expect(m.imageChoices.repositories).toEqual([PYTORCH]);
    expect(m.imageChoices.customImages).toBe(false);
  });

  it('works with a server that sends the catalogue only', async () => {
    const m = model({ items: [PYTHON] });
    expect(m.imageChoices.repositories).toEqual([]);
    await m.refreshCatalogues();
    expect(m.imageChoices).toEqual({
      items: [PYTHON],
      repositories: [],
      registries: [],
      customImages: true
    });
  });
});
