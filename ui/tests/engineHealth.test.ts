import { describe, expect, it } from 'vitest';
import { healthText } from '@/utils/engineHealth';
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
