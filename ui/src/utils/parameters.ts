/**
 * A1111's `parameters` text, the format every peer reads and writes: the prompt (any number of lines), an
 * optional `Negative prompt:` line (which may run over several lines), then one line of `Key: value` pairs.
 */

export interface ParsedParameters {
  prompt: string;
  negative_prompt: string;
  /** every `Key: value` pair as written (quoted values unquoted) */
  pairs: Record<string, string>;
}

// A1111's own pattern (modules/infotext_utils.py re_param): a key, a colon, then a quoted or comma-free value
const PAIR = /\s*(\w[\w \-/]+):\s*("(?:\\.|[^\\"])+"|[^,]*)(?:,|$)/g;

function parsePairs(line: string): Record<string, string> {
  const pairs: Record<string, string> = {};
  for (const m of line.matchAll(PAIR)) {
    let value = m[2].trim();
    if (value.startsWith('"') && value.endsWith('"')) {
      try {
        value = JSON.parse(value);
      } catch {
        value = value.slice(1, -1);
      }
    }
    pairs[m[1].trim()] = value;
  }
  return pairs;
}

/** The pairs line is the last line, when it holds at least three pairs (A1111's rule; a prompt line rarely does). */
export function parseParameters(text: string): ParsedParameters {
  const lines = text.replace(/\r\n?/g, '\n').trim().split('\n');
  let pairs: Record<string, string> = {};
  const last = lines.at(-1) ?? '';
  if (lines.length && [...last.matchAll(PAIR)].length >= 3) {
    pairs = parsePairs(last);
    lines.pop();
  }
  const prompt: string[] = [];
  const negative: string[] = [];
  let inNegative = false;
  for (const line of lines) {
    if (!inNegative && line.startsWith('Negative prompt:')) {
      inNegative = true;
      negative.push(line.slice('Negative prompt:'.length).trim());
    } else (inNegative ? negative : prompt).push(line);
  }
  return { prompt: prompt.join('\n').trim(), negative_prompt: negative.join('\n').trim(), pairs };
}

export interface ParametersSettings {
  prompt: string;
  negative_prompt: string;
  num_inference_steps?: number;
  guidance_scale?: number;
  seed?: number;
  width?: number;
  height?: number;
  num_frames?: number;
  model?: string;
  arch?: string;
  sampler?: string;
  /** the engine's schedule type ('karras'), from A1111's label ('Karras') */
  scheduler?: string;
  /** `Denoising strength` (image-to-image, inpainting) and `Mask blur` */
  strength?: number;
  mask_blur?: number;
  /** `Inpaint area: Only masked` and `Masked area padding` (A1111's "only masked" inpainting) */
  inpaint_area?: 'whole' | 'only_masked';
  inpaint_padding?: number;
}

/** A1111's "Schedule type" labels, and the names ComfyUI users type, as the engine's schedule types. */
const SCHEDULE_TYPES: Record<string, string> = {
  automatic: 'default',
  karras: 'karras',
  exponential: 'exponential',
  beta: 'beta',
  simple: 'simple',
  'sgm uniform': 'simple',
};

function num(value: string | undefined, integer: boolean): number | undefined {
  if (value === undefined || value.trim() === '') return undefined;
  const n = Number(value);
  return Number.isFinite(n) && (!integer || Number.isInteger(n)) ? n : undefined;
}

function inRange(n: number | undefined, lo: number, hi: number): number | undefined {
  return n !== undefined && n >= lo && n <= hi ? n : undefined;
}

/** The settings a generate form can take from the text (unknown or malformed values are left out). */
export function parametersSettings(text: string): ParametersSettings {
  const { prompt, negative_prompt, pairs } = parseParameters(text);
  const out: ParametersSettings = { prompt, negative_prompt };
  const size = /^(\d+)x(\d+)$/.exec(pairs.Size ?? '');
  const fields: [keyof ParametersSettings, number | undefined][] = [
    ['num_inference_steps', num(pairs.Steps, true)],
    ['guidance_scale', num(pairs['CFG scale'], false)],
    ['seed', num(pairs.Seed, true)],
    ['width', size ? Number(size[1]) : undefined],
    ['height', size ? Number(size[2]) : undefined],
    ['num_frames', num(pairs.Frames, true)],
    ['strength', inRange(num(pairs['Denoising strength'], false), 0, 1)],
    ['mask_blur', inRange(num(pairs['Mask blur'], true), 0, 64)],
    ['inpaint_padding', inRange(num(pairs['Masked area padding'], true), 0, 1024)],
  ];
  for (const [key, value] of fields) if (value !== undefined) (out as unknown as Record<string, unknown>)[key] = value;
  const area = (pairs['Inpaint area'] ?? '').trim().toLowerCase();
  if (area === 'only masked') out.inpaint_area = 'only_masked';
  else if (area === 'whole picture') out.inpaint_area = 'whole';
  if (pairs.Model) out.model = pairs.Model;
  if (pairs.Arch) out.arch = pairs.Arch;
  if (pairs.Sampler) out.sampler = pairs.Sampler;
  const schedule = SCHEDULE_TYPES[(pairs['Schedule type'] ?? '').trim().toLowerCase()];
  if (schedule) out.scheduler = schedule;
  return out;
}
