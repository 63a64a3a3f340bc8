/** Pure views of the queue list (ETA, move targets), the gallery drag payload, and an engine job's fields. */
import { describe, expect, it } from 'vitest';
import { ago, engineJobView, lastHeard } from '@/utils/engineJobView';
import { OUTPUT_DRAG_TYPE, dragPayload, draggedOutput } from '@/utils/outputDrag';
import { durationText, etaOf, moveTargets } from '@/utils/queueView';
import type { EngineHealth, Job } from '@/utils/types';

describe('queue view', () => {
  it('writes durations short and says unknown as a dash', () => {
    expect([durationText(0.4), durationText(59.6), durationText(61), durationText(120), durationText(3725), durationText(7200)]).toEqual([
      '0 s', '1 min', '1 min 1 s', '2 min', '1 h 2 min', '2 h',
    ]);
    expect([durationText(null), durationText(undefined), durationText(Number.NaN)]).toEqual(['—', '—', '—']);
  });

  it('says what an ETA rests on', () => {
    expect(etaOf({ eta_s: 12.4, eta_basis: 'measured' })).toMatchObject({ text: 'ETA 12 s' });
    expect(etaOf({ eta_s: 12.4, eta_basis: 'measured' }).title).toContain('same model, size and steps');
    expect(etaOf({ eta_s: null, eta_basis: null }).text).toBe('ETA unknown');
    expect(etaOf({ eta_s: 3, eta_basis: null }, true).title).toContain('steps left');
  });

  it('offers only the moves a place allows', () => {
    expect(moveTargets(1, 3)).toEqual({ top: null, up: null, down: 2 });
    expect(moveTargets(2, 3)).toEqual({ top: 1, up: 1, down: 3 });
    expect(moveTargets(3, 3)).toEqual({ top: 1, up: 2, down: null });
    expect(moveTargets(1, 1)).toEqual({ top: null, up: null, down: null });
  });
});

describe('gallery drag payload', () => {
  const entry = { name: 'a.png', path: '/t/engine/outputs/a.png', url: '/api/files/%2Ft%2Fengine%2Foutputs%2Fa.png' };

  it('round-trips through its own type and refuses anything else', () => {
    const data = new Map([[OUTPUT_DRAG_TYPE, dragPayload(entry)]]);
    expect(draggedOutput((t) => data.get(t) ?? '')).toEqual(entry);
    expect(draggedOutput(() => '')).toBeNull();
    expect(draggedOutput(() => '{broken')).toBeNull();
    expect(draggedOutput(() => JSON.stringify({ ...entry, path: 5 }))).toBeNull();
    expect(draggedOutput(() => JSON.stringify({ ...entry, url: 'https://elsewhere/a.png' }))).toBeNull();
    expect(draggedOutput(() => JSON.stringify({ ...entry, path: '' }))).toBeNull();
  });
});

describe('engine job view', () => {
  const running = { status: 'running', stop: false, engine_ready: true } as Job;
  const GB = 2 ** 30;

  it('shows health, model, queue and VRAM from /health', () => {
    const health: EngineHealth = {
      ok: true, busy: true, queue: 2, device: 'cuda:0', active: { arch: 'flux', name_or_path: 'black-forest-labs/FLUX.1-dev' },
      vram: { used: 30 * GB, total: 80 * GB, allocated: 23.1 * GB, peak_allocated: 25.5 * GB, budget: null }, counters: { requests: 7 },
    };
    expect(engineJobView(running, health, null)).toEqual({
      health: 'online · busy',
      model: 'flux (black-forest-labs/FLUX.1-dev)',
      queue: '1 running · 2 waiting',
      memory: 'VRAM 30.0 GB / 80.0 GB used · 23.1 GB allocated · peak 25.5 GB (latest request)',
      device: 'cuda:0',
      requests: '7',
    });
  });

  it('on a CPU shows what the models hold; before an answer says starting; stopped says offline', () => {
    const cpu: EngineHealth = { ok: true, busy: false, queue: 0, device: 'cpu', active: null, vram: null, resident_bytes: 44.7 * 2 ** 20 };
    expect(engineJobView(running, cpu, null)).toMatchObject({ health: 'online · idle', model: 'no model loaded', queue: '0 waiting', memory: 'models 45 MB in cpu memory' });
    expect(engineJobView(running, null, new Error('HTTP 503')).health).toBe('starting… (HTTP 503)');
    expect(engineJobView({ ...running, status: 'stopped' }, cpu, null)).toMatchObject({ health: 'offline', model: '—', memory: '—' });
    expect(engineJobView({ ...running, status: 'stopping' }, null, null).health).toBe('stopping');
    expect(engineJobView({ ...running, stop: true }, cpu, null).health).toBe('stopping');
    expect(engineJobView({ ...running, status: 'stopped', stop: true }, null, null).health).toBe('offline');
  });

  it('counts Updated from the latest answer when it is newer than the row', () => {
    const row = '2026-01-01T10:00:00.000Z';
    const rowMs = new Date(row).getTime();
    expect(lastHeard(row, null)).toBe(rowMs);
    expect(lastHeard(row, rowMs + 60_000)).toBe(rowMs + 60_000);
    expect(lastHeard(rowMs + 5000, rowMs)).toBe(rowMs + 5000);
    expect([ago(0, 500), ago(0, 12_000), ago(0, 300_000), ago(0, 3 * 3600_000), ago(0, 2 * 86400_000)]).toEqual([
      'just now', '12 s ago', '5 min ago', '3 h ago', '2 d ago',
    ]);
  });
});
