import { describe, expect, it } from 'vitest';
import { engineSummary, healthText, sentToText } from '@/utils/engineHealth';
import type { EngineHealth, Job } from '@/utils/types';

const running = { status: 'running' } as Job;
const GB = 2 ** 30;

describe('healthText', () => {
  it('is offline without a running job', () => {
    expect(healthText(null, null, null)).toBe('offline');
    expect(healthText({ status: 'stopped' } as Job, null, null)).toBe('offline');
  });

  it('shows starting until /health answers', () => {
    expect(healthText(running, null, null)).toBe('starting…');
    expect(healthText(running, null, new Error('HTTP 502'))).toBe('starting… (HTTP 502)');
  });

  it('shows the model, queue and VRAM with the last request peak', () => {
    const health: EngineHealth = {
      ok: true, busy: true, queue: 2, device: 'cuda',
      active: { arch: 'flux', name_or_path: 'black-forest-labs/FLUX.1-dev' },
      vram: { used: 30 * GB, total: 140 * GB, allocated: 23.1 * GB, peak_allocated: 25.5 * GB },
    };
    expect(healthText(running, health, null)).toBe(
      'online · cuda · busy · 2 waiting · flux (black-forest-labs/FLUX.1-dev) · VRAM 30.0/140.0 GB ' +
        "(last request's peak 25.5 GB)",
    );
  });

  it('leaves VRAM out on a CPU engine', () => {
    const health: EngineHealth = { ok: true, busy: false, queue: 0, device: 'cpu', active: null, vram: null };
    expect(healthText(running, health, null)).toBe('online · cpu · idle · no model loaded');
  });
});

describe('engineSummary', () => {
  it('is empty for an engine that is not running: its status says enough', () => {
    const health: EngineHealth = { ok: true, busy: false, queue: 0, active: null };
    expect(engineSummary({ status: 'stopped' } as Job, health)).toBe('');
  });

  it('says starting until /health answers ok', () => {
    expect(engineSummary(running, null)).toBe('starting…');
    expect(engineSummary(running, { ok: false, busy: false, queue: 0, active: null })).toBe('starting…');
  });

  it('shows busy, the queue length and the resident model', () => {
    const health: EngineHealth = { ok: true, busy: true, queue: 2, active: { arch: 'sd1', name_or_path: 'tiny:sd1' } };
    expect(engineSummary(running, health)).toBe('busy · queue 2 · sd1 (tiny:sd1)');
    expect(engineSummary(running, { ...health, busy: false, queue: 0, active: null })).toBe('idle · queue 0 · no model loaded');
  });
});

describe('sentToText', () => {
  const model = { arch: 'sd1', name_or_path: 'tiny:sd1' };
  it('names the engine and why it was picked', () => {
    expect(sentToText('inference_engine_gpu1', { reason: 'resident', model })).toBe('sent to inference_engine_gpu1: it holds sd1 (tiny:sd1)');
    expect(sentToText('inference_engine_gpu0', { reason: 'least-work', model })).toBe(
      'sent to inference_engine_gpu0: no engine held sd1 (tiny:sd1), it had the least work waiting',
    );
    expect(sentToText('inference_engine_gpu2', { reason: 'control-images', model })).toBe('sent to inference_engine_gpu2: the control images are its files');
  });
});
