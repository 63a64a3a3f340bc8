/**
 * A compare grid (the engine's `POST /grid`, docs/PROTOCOL.md "The grid stream") as the Generate page's Compare
 * mode runs it: the body built from the form's request and the picks (a training job's checkpoints as columns,
 * prompts as rows, LoRA strengths as pages), and the stream's frames folded into what the page draws: each
 * cell's stage, step, latest latent picture and result, then the grid's pages and replay body.
 *
 * The grid's own frames carry no `cell`; every cell's frames carry `cell` (its index in the layout) and `axes`
 * (its labels), in the frame format of `POST /generate`, so a cell is drawn as the main preview draws a run.
 */
import { type Frame, type LatentSpec, type Picture, latentOf, projectLatent } from './engineStream';

export interface GridCheckpoint {
  path: string;
  name: string;
  step: number | null;
  tag?: string;
  preview_url?: string | null;
}

/** One row of `GET /grid/jobs`. */
export interface GridJob {
  job: string;
  arch: string | null;
  folder: string;
  checkpoints: GridCheckpoint[];
  trigger_words: string[];
  sample: { prompts?: string[]; negative_prompt?: string; seed?: number; guidance_scale?: number; num_inference_steps?: number } | null;
}

export interface GridPicks {
  checkpoints: string[];
  prompts: string[];
  multipliers: number[];
}

export interface GridAxisView {
  name: string;
  labels: string[];
  steps: (number | null)[];
}

export type CellStatus = 'queued' | 'running' | 'done' | 'failed';

export interface GridCell {
  index: number;
  coords: number[];
  labels: Record<string, string>;
  requestId: string | null;
  status: CellStatus;
  stage: string;
  step: number;
  total: number;
  spec: LatentSpec | null;
  picture: Picture | null;
  /** latent frames painted so far */
  latents: number;
  result: { path: string; url: string; width?: number; height?: number; seed?: number } | null;
  config: Record<string, unknown> | null;
  error: { code: string; message: string } | null;
}

export interface GridState {
  gridId: string | null;
  shape: number[];
  axes: GridAxisView[];
  cells: GridCell[];
  /** the grid's end: its pages, the body that replays it, and whether every cell ran */
  pages: { path: string; url: string; name: string }[];
  replay: unknown;
  ended: boolean;
  ok: boolean | null;
  error: string | null;
}

export const EMPTY_GRID: GridState = {
  gridId: null, shape: [], axes: [], cells: [], pages: [], replay: null, ended: false, ok: null, error: null,
};

/** Lines of a textarea, trimmed, blanks dropped. */
export function promptLines(text: string): string[] {
  return text.split('\n').map((l) => l.trim()).filter(Boolean);
}

/** "0.5, 1" -> [0.5, 1]; null when a part is not a number in -10..10. */
export function parseMultipliers(text: string): number[] | null {
  const parts = text.split(/[,\s]+/).filter(Boolean);
  const out = parts.map(Number);
  return out.length && out.every((m) => Number.isFinite(m) && m >= -10 && m <= 10) ? out : null;
}

/** The job's own sample prompts (its training config's), else the form's prompt. */
export function defaultPrompts(job: GridJob | null, formPrompt: string): string[] {
  const own = job?.sample?.prompts ?? [];
  return own.length ? own : formPrompt.trim() ? [formPrompt.trim()] : [];
}

/**
 * The `POST /grid` body: the form's request as the base, the checkpoints as columns, the prompts as rows (when
 * more than one), the strengths as pages (when more than one; one strength is the base's). The form's other
 * LoRAs stay on every cell (a style LoRA beside the one compared). Latents stream for every cell, as for the main
 * preview.
 */
export function gridBody(base: { model: Record<string, unknown>; sample: Record<string, unknown>; stream?: Record<string, unknown> }, picks: GridPicks) {
  const model: Record<string, unknown> = { ...base.model, lora_multiplier: picks.multipliers[0] ?? 1 };
  delete model.lora_path;
  // a checkpoint also picked in the form's LoRA list would apply twice: the axis's copy is the one compared
  const others = ((base.model.loras ?? []) as { path: string }[]).filter((l) => !picks.checkpoints.includes(l.path));
  if (others.length) model.loras = others;
  else delete model.loras;
  const sample = { ...base.sample, prompt: picks.prompts[0] ?? String(base.sample.prompt ?? ''), batch_count: 1 };
  const axes: { name: string; values: unknown[] }[] = [{ name: 'lora', values: picks.checkpoints }];
  if (picks.prompts.length > 1) axes.push({ name: 'prompt', values: picks.prompts });
  if (picks.multipliers.length > 1) axes.push({ name: 'lora_multiplier', values: picks.multipliers });
  return { model, sample, stream: { ...(base.stream ?? {}), latents: base.stream?.latents === 'none' ? 'none' : 'raw' }, axes };
}

function emptyCell(c: { cell: number; coords: number[]; labels: Record<string, string>; request_id: string | null }): GridCell {
  return {
    index: c.cell, coords: c.coords, labels: c.labels, requestId: c.request_id, status: 'queued', stage: 'queued', step: 0,
    total: 0, spec: null, picture: null, latents: 0, result: null, config: null, error: null,
  };
}

/** The state after one frame of the grid stream. */
export function gridReduce(state: GridState, frame: Frame): GridState {
  const h = frame.header;
  if (typeof h.cell !== 'number') return gridFrame(state, frame);
  const index = h.cell;
  const cell = state.cells[index];
  if (!cell) return state;
  let next: GridCell = cell;
  switch (frame.type) {
    case 'start':
      next = { ...cell, spec: (h.latent as LatentSpec) ?? null, config: (h.config as Record<string, unknown>) ?? null, requestId: h.request_id };
      break;
    case 'status':
      if (h.heartbeat) return state;
      next = { ...cell, stage: String(h.stage), status: h.stage === 'queued' ? 'queued' : 'running' };
      break;
    case 'progress':
      next = { ...cell, status: 'running', step: Number(h.step), total: Number(h.total) };
      break;
    case 'latent':
      try {
        next = { ...cell, picture: projectLatent(latentOf(frame), cell.spec), latents: cell.latents + 1 };
      } catch {
        return state; // a latent this page cannot draw: the result still comes
      }
      break;
    case 'result':
      next = { ...cell, status: 'done', stage: 'done', result: { path: String(h.path), url: String(h.url), width: h.width as number, height: h.height as number, seed: h.seed as number } };
      break;
    case 'error':
      next = { ...cell, status: 'failed', stage: String(h.code), error: { code: String(h.code), message: String(h.message) } };
      break;
    default:
      return state;
  }
  const cells = state.cells.slice();
  cells[index] = next;
  return { ...state, cells };
}

function gridFrame(state: GridState, frame: Frame): GridState {
  const h = frame.header;
  switch (frame.type) {
    case 'start': {
      const plan = h.grid as { shape: number[]; axes: GridAxisView[]; cells: Parameters<typeof emptyCell>[0][] };
      return { ...EMPTY_GRID, gridId: h.request_id, shape: plan.shape, axes: plan.axes, cells: plan.cells.map(emptyCell) };
    }
    case 'result':
      return { ...state, pages: (h.pages as GridState['pages']) ?? [], replay: h.replay ?? null };
    case 'error':
      return { ...state, error: String(h.message) };
    case 'end':
      return { ...state, ended: true, ok: Boolean(h.ok) };
    default:
      return state;
  }
}

/** Cells of one page (a value of the third axis) as rows of columns. */
export function pageRows(state: GridState, page: number): GridCell[][] {
  const [cols = 1, rows = 1] = state.shape;
  return Array.from({ length: rows }, (_, y) => Array.from({ length: cols }, (_, x) => state.cells[x + y * cols + page * cols * rows]));
}

export function pageCount(state: GridState): number {
  return state.shape[2] ?? 1;
}

/** Cells done so far, for the status line. */
export function doneCount(state: GridState): number {
  return state.cells.filter((c) => c.status === 'done').length;
}
