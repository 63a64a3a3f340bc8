/**
 * Compare mode's grid logic (utils/gridRun.ts): the `POST /grid` body made from the form's request and the picks,
 * and a grid stream's frames folded into cells as the engine sends them (docs/PROTOCOL.md "The grid stream").
 */
import { describe, expect, it } from 'vitest';
import type { Frame } from '@/utils/engineStream';
import {
  EMPTY_GRID, type GridJob, defaultPrompts, doneCount, gridBody, gridReduce, pageRows, parseMultipliers, promptLines,
} from '@/utils/gridRun';

let seq = 0;
function frame(type: Frame['type'], fields: Record<string, unknown> = {}, payload = new Uint8Array(0)): Frame {
  const header = { type, request_id: String(fields.request_id ?? 'grid'), seq: seq++, t: 0, ...fields };
  return { type, header, payload } as Frame;
}

const plan = {
  shape: [3, 2],
  axes: [
    { name: 'lora', labels: ['j @ 250', 'j @ 500', 'j @ 750'], steps: [250, 500, 750] },
    { name: 'prompt', labels: ['a cat', 'a dog'], steps: [null, null] },
  ],
  cells: Array.from({ length: 6 }, (_, i) => ({ cell: i, coords: [i % 3, Math.floor(i / 3)], labels: {}, request_id: `r${i}` })),
  order: [0, 3, 1, 4, 2, 5],
};

describe('the grid body', () => {
  const base = { model: { arch: 'sd1', name_or_path: 'tiny:sd1', lora_path: '/x.safetensors' }, sample: { prompt: 'form', seed: 3 }, stream: { latents: 'raw' } };

  it('puts checkpoints in columns, prompts in rows and strengths in pages, only where there are several', () => {
    const body = gridBody(base, { checkpoints: ['/a', '/b'], prompts: ['p1', 'p2'], multipliers: [0.5, 1] });
    expect(body.axes).toEqual([
      { name: 'lora', values: ['/a', '/b'] },
      { name: 'prompt', values: ['p1', 'p2'] },
      { name: 'lora_multiplier', values: [0.5, 1] },
    ]);
    expect(body.model).toEqual({ arch: 'sd1', name_or_path: 'tiny:sd1', lora_multiplier: 0.5 }); // the form's LoRA is the axis's
    const withPicked = { ...base, model: { ...base.model, loras: [{ path: '/a', multiplier: 1 }, { path: '/style', multiplier: 0.3 }] } };
    expect(gridBody(withPicked, { checkpoints: ['/a'], prompts: ['p'], multipliers: [1] }).model.loras).toEqual([{ path: '/style', multiplier: 0.3 }]);
    const one = gridBody(base, { checkpoints: ['/a'], prompts: ['only'], multipliers: [0.8] });
    expect(one.axes).toEqual([{ name: 'lora', values: ['/a'] }]);
    expect(one.sample.prompt).toBe('only');
    expect(one.model.lora_multiplier).toBe(0.8);
  });

  it('reads the text fields and starts from the job’s own sample prompts', () => {
    expect(promptLines(' a \n\n b\n')).toEqual(['a', 'b']);
    expect(parseMultipliers('0.5, 1 1.5')).toEqual([0.5, 1, 1.5]);
    expect(parseMultipliers('0.5, x')).toBeNull();
    expect(parseMultipliers('11')).toBeNull();
    const job = { job: 'j', sample: { prompts: ['sks a cat'] } } as GridJob;
    expect(defaultPrompts(job, 'form prompt')).toEqual(['sks a cat']);
    expect(defaultPrompts({ ...job, sample: null }, 'form prompt')).toEqual(['form prompt']);
  });
});

describe('the grid stream', () => {
  it('lays out the cells from the grid’s start and fills each from its own frames', () => {
    let state = gridReduce(EMPTY_GRID, frame('start', { config: {}, output: { kind: 'grid' }, latent: null, grid: plan }));
    expect(state.cells).toHaveLength(6);
    expect(pageRows(state, 0).map((row) => row.map((c) => c.index))).toEqual([[0, 1, 2], [3, 4, 5]]);
    const spec = { layout: 'BCHW', rgb_factors: null, rgb_bias: null };
    state = gridReduce(state, frame('start', { request_id: 'r4', cell: 4, config: { sample: { seed: 1 } }, latent: spec }));
    state = gridReduce(state, frame('status', { request_id: 'r4', cell: 4, stage: 'sampling', message: '' }));
    state = gridReduce(state, frame('progress', { request_id: 'r4', cell: 4, step: 1, total: 2 }));
    const latent = new Uint8Array(2 * 3 * 2 * 2); // float16 zeros, [1, 3, 2, 2]
    state = gridReduce(state, frame('latent', { request_id: 'r4', cell: 4, step: 1, shape: [1, 3, 2, 2], dtype: 'float16', layout: 'BCHW' }, latent));
    expect(state.cells[4]).toMatchObject({ status: 'running', step: 1, total: 2, stage: 'sampling' });
    expect(state.cells[4].picture).toMatchObject({ width: 2, height: 2 });
    expect(state.cells[4].latents).toBe(1);
    state = gridReduce(state, frame('result', { request_id: 'r4', cell: 4, path: '/o/r4.png', url: '/api/files/r4', width: 64, height: 64, seed: 1 }));
    state = gridReduce(state, frame('error', { request_id: 'r2', cell: 2, code: 'cancelled', message: 'Cancelled' }));
    expect(state.cells[4]).toMatchObject({ status: 'done', result: { url: '/api/files/r4' } });
    expect(state.cells[2]).toMatchObject({ status: 'failed', error: { code: 'cancelled' } });
    expect(doneCount(state)).toBe(1);
    // the grid's own end: its pages and replay body
    const pages = [{ path: '/o/grid_g.png', url: '/api/files/g', name: 'grid_g.png' }];
    state = gridReduce(state, frame('result', { path: pages[0].path, url: pages[0].url, pages, replay: { axes: [] } }));
    state = gridReduce(state, frame('end', { ok: true }));
    expect(state).toMatchObject({ pages, replay: { axes: [] }, ended: true, ok: true });
  });
});

describe('the gallery', () => {
  it('lists a grid as one item, its page, while the page is there', async () => {
    const { pageOutputs } = await import('@/server/outputs');
    const entry = (name: string, meta: Record<string, unknown> | null) => ({ name, path: `/o/${name}`, url: '', bytes: 1, mtime: 1, meta });
    const cells = [0, 1].map((i) => entry(`c${i}.png`, { grid_cell: { grid: 'g', cell: i, page: 'grid_g.png' } }));
    const page = entry('grid_g.png', { grid: { shape: [2] } });
    const other = entry('x.png', null);
    const names = (items: { name: string }[]) => items.map((e) => e.name).sort();
    expect(names(pageOutputs([...cells, page, other], {}, 0, 10).items)).toEqual(['grid_g.png', 'x.png']);
    expect(names(pageOutputs([...cells, other], {}, 0, 10).items)).toEqual(['c0.png', 'c1.png', 'x.png']); // page deleted
  });
});
