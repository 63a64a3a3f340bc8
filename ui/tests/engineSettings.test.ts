import { describe, expect, it } from 'vitest';
import { newEngineJobConfig, settingsOf, vramBudgetError, withEngineSettings } from '@/utils/engineSettings';

const engineOf = (config: { config?: { process?: Record<string, unknown>[] } }) => config.config!.process![0].engine;

describe('engine settings', () => {
  it("a new engine job is AI Toolkit's extension job with the chosen settings in its engine section", () => {
    const config = newEngineJobConfig('inference_engine_gpu0', { compile: 'off', vramBudgetGb: '22.5' });
    expect(config.job).toBe('extension');
    expect(config.config!.process![0].type).toBe('InferenceEngine');
    expect(engineOf(config)).toEqual({ compile: 'off', vram_budget_gb: 22.5 });
    expect(engineOf(newEngineJobConfig('x', { compile: 'auto', vramBudgetGb: ' ' }))).toEqual({ compile: 'auto' });
  });

  it('writing settings into a job made elsewhere keeps the rest of its config, and an empty budget removes its own', () => {
    const theirs = {
      job: 'extension',
      config: { name: 'mine', process: [{ type: 'InferenceEngine', device: 'cuda:1', engine: { default_model: { arch: 'flux' }, vram_budget_gb: 16, compile: 'max' } }] },
      meta: { note: 'kept' },
    };
    const written = withEngineSettings(theirs, { compile: 'off', vramBudgetGb: '' });
    expect(written.config!.process![0]).toEqual({ type: 'InferenceEngine', device: 'cuda:1', engine: { default_model: { arch: 'flux' }, compile: 'off' } });
    expect(written.meta).toEqual({ note: 'kept' });
    expect(theirs.config.process[0].engine).toEqual({ default_model: { arch: 'flux' }, vram_budget_gb: 16, compile: 'max' }); // a copy
  });

  it('reads back what a job starts with, and the defaults from a config that says nothing or cannot be read', () => {
    const job = (config: unknown) => ({ job_config: typeof config === 'string' ? config : JSON.stringify(config) });
    expect(settingsOf(job(newEngineJobConfig('x', { compile: 'max', vramBudgetGb: '24' })))).toEqual({ compile: 'max', vramBudgetGb: '24' });
    expect(settingsOf(job({ config: { process: [{ engine: { compile: 'turbo', vram_budget_gb: -3 } }] } }))).toEqual({ compile: 'auto', vramBudgetGb: '' });
    expect(settingsOf(job('{not json'))).toEqual({ compile: 'auto', vramBudgetGb: '' });
  });

  it('a VRAM budget is a number of GB above 0, or empty for the whole card', () => {
    expect(vramBudgetError('')).toBeNull();
    expect(vramBudgetError('23.5')).toBeNull();
    for (const bad of ['0', '-4', 'lots', '12GB']) expect(vramBudgetError(bad)).toMatch(/VRAM budget/);
  });
});
