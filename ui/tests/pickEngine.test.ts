import { describe, expect, it } from 'vitest';
import { type EngineCandidate, pickEngine, workAhead } from '@/utils/pickEngine';
import type { EngineHealth } from '@/utils/types';

const SD1 = { arch: 'sd1', name_or_path: 'tiny:sd1' };
const SHAPES = { arch: 'sd1', name_or_path: 'builtin:shapes' };

function engine(jobId: string, health: Partial<EngineHealth> | null): EngineCandidate {
  return { jobId, health: health && { ok: true, busy: false, queue: 0, active: null, ...health } };
}

describe('pickEngine', () => {
  it('picks the engine that holds the model, even behind more work than another', () => {
    const engines = [engine('a', { active: SHAPES }), engine('b', { active: SD1, busy: true, queue: 3 })];
    expect(pickEngine(engines, SD1)).toEqual({ jobId: 'b', reason: 'resident' });
  });

  it('needs the same arch and the same name_or_path to count as holding it', () => {
    const engines = [engine('a', { active: { arch: 'sdxl', name_or_path: 'tiny:sd1' } }), engine('b', { active: SHAPES, queue: 1 })];
    expect(pickEngine(engines, SD1)).toEqual({ jobId: 'a', reason: 'least-work' });
  });

  it('among engines that hold it, the one with the least work ahead', () => {
    const engines = [engine('a', { active: SD1, queue: 2 }), engine('b', { active: SD1, busy: true }), engine('c', { active: SHAPES })];
    expect(pickEngine(engines, SD1)).toEqual({ jobId: 'b', reason: 'resident' });
  });

  it('when none holds it, the shortest queue counting the running run', () => {
    const engines = [engine('a', { busy: true, queue: 1 }), engine('b', { queue: 1 }), engine('c', { busy: true })];
    expect(pickEngine(engines, SD1)).toEqual({ jobId: 'b', reason: 'least-work' });
  });

  it('a tie goes to the first listed', () => {
    const engines = [engine('a', { active: SHAPES }), engine('b', {}), engine('c', { active: SHAPES })];
    expect(pickEngine(engines, SD1)?.jobId).toBe('a');
    expect(pickEngine(engines, SHAPES)?.jobId).toBe('a');
  });

  it('skips engines that are not ready or whose health says not ok', () => {
    const engines = [engine('down', null), engine('sick', { ok: false, active: SD1 }), engine('up', { busy: true, queue: 4 })];
    expect(pickEngine(engines, SD1)).toEqual({ jobId: 'up', reason: 'least-work' });
  });

  it('a run with control images goes to the engine whose files they are, and nowhere else', () => {
    const engines = [engine('a', { active: SD1 }), engine('b', { busy: true, queue: 5 }), engine('down', null)];
    expect(pickEngine(engines, SD1, 'b')).toEqual({ jobId: 'b', reason: 'control-images' });
    expect(pickEngine(engines, SD1, 'down')).toBeNull();
  });

  it('is null when no engine is ready', () => {
    expect(pickEngine([], SD1)).toBeNull();
    expect(pickEngine([engine('a', null)], SD1)).toBeNull();
  });
});

describe('workAhead', () => {
  it('counts the waiting runs and the running one', () => {
    expect(workAhead({ ok: true, busy: false, queue: 0, active: null })).toBe(0);
    expect(workAhead({ ok: true, busy: true, queue: 2, active: null })).toBe(3);
  });
});
