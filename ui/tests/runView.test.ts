/**
 * The preview's view of a run, folded from frames (src/utils/runView.ts): watched from its start, re-attached
 * mid-run (the engine replays start, newest status/progress, then live frames), a batch, an engine that went
 * away, and which run the page follows after a reload.
 */
import { describe, expect, it } from 'vitest';
import type { Frame } from '@/utils/engineStream';
import { EMPTY_QUEUE, IDLE, type QueueRow, type RunView, applyFrame, endedWithoutEnd, nextToWatch } from '@/utils/runView';

let seq = 0;
function frame(type: Frame['type'], t: number, fields: Record<string, unknown> = {}): Frame {
  return { type, header: { type, request_id: 'r1', seq: seq++, t, ...fields }, payload: new Uint8Array(0) } as unknown as Frame;
}

const start = (t: number, batch?: number) =>
  frame('start', t, {
    config: { sample: { seed: 7, num_inference_steps: 20 }, ...(batch ? { batch: { count: batch, seeds: 'consecutive' } } : {}) },
    output: { kind: 'image', ext: 'png' },
    latent: { layout: 'BCHW' },
  });

function fold(frames: Frame[]): RunView {
  const v = { ...IDLE };
  for (const f of frames) applyFrame(v, f);
  return v;
}

describe('applyFrame', () => {
  it('a run watched from its start ends done, with its elapsed time on the engine clock', () => {
    const v = fold([
      start(1000),
      frame('status', 1001, { stage: 'queued', message: 'Waiting in queue', position: 2 }),
      frame('status', 1500, { stage: 'loading', message: 'Loading sd1: unet' }),
      frame('progress', 2000, { step: 1, total: 20, eta_s: 3, it_s: 6 }),
      frame('progress', 4000, { step: 20, total: 20, eta_s: 0, it_s: 6 }),
      frame('result', 4200, { path: '/o/r1.png', url: '/api/files/o/r1.png', kind: 'image', ext: 'png', seed: 7 }),
      frame('end', 4300, { ok: true }),
    ]);
    expect(v.phase).toBe('done');
    expect([v.step, v.total, v.seed, v.results, v.position]).toEqual([20, 20, 7, 1, null]);
    expect(v.message).toBe('finished in 3.3 s');
  });

  it('a re-attached run (start, then the newest progress) shows where it stands and times from the run start', () => {
    const v = fold([
      start(10_000),
      frame('progress', 25_000, { step: 12, total: 20, eta_s: 5, it_s: 1 }),
      frame('latent', 25_001, { step: 12, shape: [1, 4, 8, 8], dtype: 'float16', layout: 'BCHW' }),
    ]);
    expect([v.phase, v.step, v.total, v.latentStep, v.latentCount]).toEqual(['sampling', 12, 20, 12, 1]);
    expect(v.elapsedMs).toBe(15_001);
  });

  it('the memory line shows the predicted plan, then the plan with why it was planned again and its bits', () => {
    const predicted = { summary: 'transformer stream to the GPU as they run', quality: null, replanned: null };
    const plan = {
      summary: 'transformer float8dq on the GPU',
      replanned: "re-planned: the streamed transformer's step measured 1.46x resident, predicted 1.15x",
      quality: 'fast: float8dq transformer resident, 1.26x faster than the best lossless plan',
    };
    const v = fold([
      frame('start', 0, { config: { sample: {} }, output: { kind: 'image' }, memory: { predicted } }),
      frame('status', 1, { stage: 'queued', message: 'Waiting in queue', position: 1 }),
    ]);
    expect(v.memory).toBe('transformer stream to the GPU as they run');
    applyFrame(v, frame('status', 2, { stage: 'loading', message: 'Memory plan: …', memory: plan }));
    applyFrame(v, frame('status', 3, { stage: 'loading', message: 'Loading flux: transformer' }));
    expect(v.memory).toBe(`${plan.summary} · ${plan.replanned} · ${plan.quality}`);
  });

  it('a batch counts its images and keeps the latest result', () => {
    const v = fold([
      start(0, 3),
      frame('status', 1, { stage: 'sampling', message: 'Image 2 of 3', image: 2, images: 3 }),
      frame('result', 2, { path: 'a', url: 'a', kind: 'image', ext: 'png', seed: 7, image: 1, images: 3 }),
      frame('result', 3, { path: 'b', url: 'b', kind: 'image', ext: 'png', seed: 8, image: 2, images: 3 }),
    ]);
    expect([v.images, v.image, v.results, v.result?.seed]).toEqual([3, 2, 2, 8]);
  });

  it('an error replaces the stage message; a cancel is not an error', () => {
    const failed = fold([start(0), frame('status', 1, { stage: 'loading', message: 'Loading sd1: unet' }),
      frame('error', 2, { code: 'oom', message: 'Out of memory while loading' }), frame('end', 3, { ok: false })]);
    expect([failed.phase, failed.message]).toEqual(['error', 'Out of memory while loading']);
    const cancelled = fold([start(0), frame('error', 2, { code: 'cancelled', message: 'Cancelled' }), frame('end', 3, { ok: false })]);
    expect(cancelled.phase).toBe('cancelled');
  });

  it('a stream that closes mid-run without an end frame says the engine went away', () => {
    const v = fold([start(0), frame('progress', 1, { step: 3, total: 20 })]);
    endedWithoutEnd(v);
    expect([v.phase, v.error?.code, v.message]).toEqual(['error', 'engine_gone', 'The engine stopped during this run']);
    const done = fold([start(0), frame('end', 1, { ok: true })]);
    endedWithoutEnd(done);
    expect(done.phase).toBe('done');
  });
});

describe('nextToWatch', () => {
  const row = (id: string, position: number): QueueRow => ({
    request_id: id, arch: 'sd1', name_or_path: 'tiny:sd1', prompt: 'p', seed: 1, batch_count: 1, detached: true,
    stage: position ? 'queued' : 'sampling', position, created: 0,
  });

  it('follows the running request, else the next in line, else nothing', () => {
    expect(nextToWatch({ running: row('a', 0), pending: [row('b', 1)] })).toBe('a');
    expect(nextToWatch({ running: null, pending: [row('b', 1), row('c', 2)] })).toBe('b');
    expect(nextToWatch(EMPTY_QUEUE)).toBeNull();
  });
});
