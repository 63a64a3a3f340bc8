/**
 * What an engine job starts with, chosen beside Start on the Generate page: `engine.compile` and
 * `engine.vram_budget_gb` (README: "Compiling the denoiser", "Memory"). An engine reads its config once, when
 * it starts, so these apply from the next Start. Start writes them into the job's config and keeps everything
 * else there: a job made elsewhere (its default model, its LoRA roots) loses nothing.
 */
import type { Job } from './types';

export const COMPILE_MODES = ['auto', 'off', 'max'] as const;
export type CompileMode = (typeof COMPILE_MODES)[number];

export const COMPILE_HELP: Record<CompileMode, string> = {
  auto: "compile the denoiser's blocks on a GPU: faster steps, a first request per size that compiles",
  off: 'eager: no compile wait, slower steps',
  max: 'as auto, and SD 1.5/SDXL UNets and a resident Flux.1 as CUDA graphs (1–2 minutes per size)',
};

export interface EngineSettings {
  compile: CompileMode;
  /** GB as typed; empty: the whole card */
  vramBudgetGb: string;
}

export const DEFAULT_ENGINE_SETTINGS: EngineSettings = { compile: 'auto', vramBudgetGb: '' };

type Config = { config?: { process?: Record<string, unknown>[] } } & Record<string, unknown>;

export function vramBudgetError(text: string): string | null {
  if (!text.trim()) return null;
  const gb = Number(text);
  return Number.isFinite(gb) && gb > 0 ? null : 'VRAM budget: a number of GB above 0, or empty for the whole card';
}

/**
 * A new engine job's config: AI Toolkit's extension job with one InferenceEngine process. Its folders and DB path
 * are left out: the server writes its own when it starts the job (server/uiFolders.ts).
 */
export function newEngineJobConfig(name: string, settings: EngineSettings): Config {
  const base = {
    job: 'extension',
    config: { name, process: [{ type: 'InferenceEngine', device: 'auto', engine: {} }] },
    meta: { name, version: '1.0' },
  };
  return withEngineSettings(base, settings);
}

/** ``config`` with the settings written into its first process's ``engine``; nothing else changes. */
export function withEngineSettings(config: Config, settings: EngineSettings): Config {
  const copy = structuredClone(config);
  const process = copy.config?.process?.[0];
  if (!process) return copy;
  const engine: Record<string, unknown> = { ...((process.engine as Record<string, unknown> | undefined) ?? {}), compile: settings.compile };
  if (settings.vramBudgetGb.trim()) engine.vram_budget_gb = Number(settings.vramBudgetGb);
  else delete engine.vram_budget_gb;
  process.engine = engine;
  return copy;
}

/** The settings a job would start with (an unreadable config or one that sets nothing: the engine's defaults). */
export function settingsOf(job: Pick<Job, 'job_config'>): EngineSettings {
  let engine: Record<string, unknown> = {};
  try {
    engine = JSON.parse(job.job_config)?.config?.process?.[0]?.engine ?? {};
  } catch {
    // a config the page cannot read starts with the defaults shown
  }
  const compile = COMPILE_MODES.find((m) => m === engine.compile) ?? DEFAULT_ENGINE_SETTINGS.compile;
  const budget = Number(engine.vram_budget_gb);
  return { compile, vramBudgetGb: Number.isFinite(budget) && budget > 0 ? String(budget) : '' };
}
