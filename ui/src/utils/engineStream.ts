/**
 * The engine's binary frame stream (README "Frames"), mirrored from
 * extensions_built_in/inference_engine/protocol.py, plus the latent -> picture projection
 * (mirrored from latent_preview.py `project_rgb`).
 *
 * Each frame: `u32 header_len | header (UTF-8 JSON object) | u64 payload_len | payload`, little-endian.
 *
 * Like the Python reader, this parser is strict about the envelope only (lengths, JSON object, type /
 * request_id / seq / t) so a newer engine that adds header fields keeps working. It is tested against byte
 * vectors written by the Python encoder (testing/fixtures/protocol_vectors.json).
 *
 * No DOM or Node APIs here: the same code runs in the browser, in vitest and in Playwright.
 */

export const MEDIA_TYPE = 'application/x-aitk-frames';
export const FRAME_TYPES = ['start', 'status', 'progress', 'latent', 'result', 'error', 'end'] as const;
export type FrameType = (typeof FRAME_TYPES)[number];
// The wire's words are defined once, in Python (protocol.py); ui/tests/engineStream.test.ts checks these copies
// against the vectors file the Python side writes.
export const STAGES = ['queued', 'loading', 'encoding', 'sampling', 'decoding', 'saving'] as const;
export type Stage = (typeof STAGES)[number];
export const LAYOUTS = ['BCHW', 'BCFHW', 'BLC'] as const;
export type Layout = (typeof LAYOUTS)[number];
export const ERROR_CODES = ['bad_request', 'cancelled', 'oom', 'load_failed', 'too_large', 'internal'] as const;
export type ErrorCode = (typeof ERROR_CODES)[number];

/** Same limits as the Python FrameDecoder: a hostile length is refused before anything is buffered for it. */
export const DEFAULT_MAX_HEADER = 1 << 20;
export const DEFAULT_MAX_PAYLOAD = 2 ** 31;

export interface FrameHeader {
  type: FrameType;
  request_id: string;
  seq: number;
  t: number;
  [field: string]: unknown;
}

export interface Frame {
  type: FrameType;
  header: FrameHeader;
  /** Own copy of the payload bytes (empty for every type but `latent`). */
  payload: Uint8Array;
}

/** The latent description sent in the `start` frame (`latent` field). */
export interface LatentSpec {
  layout: Layout;
  channels: number;
  rgb_factors: number[][] | null;
  rgb_bias: number[] | null;
  shape?: number[];
  scale?: number;
  shift?: number;
  [field: string]: unknown;
}

export class FrameError extends Error {
  /** Stream byte offset of the problem, when known. */
  readonly offset?: number;
  constructor(message: string, offset?: number) {
    super(offset === undefined ? message : `${message} (at byte offset ${offset})`);
    this.name = 'FrameError';
    this.offset = offset;
  }
}

const utf8 = new TextDecoder('utf-8', { fatal: true });

/**
 * Incremental reader: `push` chunks as they arrive (split anywhere), call `end()` when the stream closes.
 * After an error the parser refuses further input: resynchronising a length-prefixed stream is guesswork.
 */
export class FrameParser {
  private buf = new Uint8Array(0);
  private start = 0; // read position in buf
  private end_ = 0; // bytes of buf in use
  private base = 0; // stream offset of buf[0]
  private frameStart = 0; // stream offset of the frame being read
  private headerLen: number | null = null;
  private header: FrameHeader | null = null;
  private payloadLen: number | null = null;
  private error: FrameError | null = null;
  private closed = false;

  constructor(
    private readonly maxHeader = DEFAULT_MAX_HEADER,
    private readonly maxPayload = DEFAULT_MAX_PAYLOAD,
  ) {}

  /** Every frame completed by `chunk` (possibly none). Throws FrameError on corrupt input. */
  push(chunk: Uint8Array): Frame[] {
    this.checkUsable();
    this.append(chunk);
    const frames: Frame[] = [];
    try {
      for (let f = this.next(); f; f = this.next()) frames.push(f);
    } catch (e) {
      this.error = e instanceof FrameError ? e : new FrameError(String(e));
      throw this.error;
    }
    return frames;
  }

  /** End of stream: anything still buffered is a truncated frame. */
  end(): void {
    if (this.closed && !this.error) return;
    this.checkUsable();
    this.closed = true;
    const pending = this.end_ - this.start;
    if (pending || this.headerLen !== null) {
      this.error = new FrameError(`stream ended inside a frame (${this.missingPart()} incomplete)`, this.frameStart);
      throw this.error;
    }
  }

  private checkUsable() {
    if (this.error) throw new FrameError(`parser is unusable after an earlier error: ${this.error.message}`);
    if (this.closed) throw new FrameError('parser is closed');
  }

  private append(chunk: Uint8Array) {
    if (!chunk.length) return;
    if (this.end_ + chunk.length > this.buf.length) {
      // Compact in place while live data is small, else grow to twice what is needed: appends stay
      // amortised O(1) per byte however the stream is chunked (every-byte splits included).
      const live = this.end_ - this.start;
      const need = live + chunk.length;
      if (need <= this.buf.length / 2) {
        this.buf.copyWithin(0, this.start, this.end_);
      } else {
        const grown = new Uint8Array(Math.max(need * 2, 4096));
        grown.set(this.buf.subarray(this.start, this.end_));
        this.buf = grown;
      }
      this.base += this.start;
      this.start = 0;
      this.end_ = live;
    }
    this.buf.set(chunk, this.end_);
    this.end_ += chunk.length;
  }

  private take(n: number): Uint8Array | null {
    if (this.end_ - this.start < n) return null;
    const out = this.buf.slice(this.start, this.start + n); // a copy: buf is reused
    this.start += n;
    return out;
  }

  private offset() {
    return this.base + this.start;
  }

  private next(): Frame | null {
    if (this.headerLen === null) {
      const raw = this.take(4);
      if (!raw) return null;
      const n = new DataView(raw.buffer).getUint32(0, true);
      if (n === 0 || n > this.maxHeader)
        throw new FrameError(`header_len ${n} is outside 1..${this.maxHeader}`, this.frameStart);
      this.headerLen = n;
    }
    if (this.header === null) {
      const raw = this.take(this.headerLen);
      if (!raw) return null;
      this.header = parseHeader(raw, this.frameStart + 4);
    }
    if (this.payloadLen === null) {
      const raw = this.take(8);
      if (!raw) return null;
      const view = new DataView(raw.buffer);
      // u64 as two u32 halves: exact up to 2^53, and anything that large is over the limit anyway.
      const n = view.getUint32(4, true) * 2 ** 32 + view.getUint32(0, true);
      if (n > this.maxPayload)
        throw new FrameError(`payload_len ${n} exceeds the ${this.maxPayload} limit`, this.offset() - 8);
      this.payloadLen = n;
    }
    const payload = this.take(this.payloadLen);
    if (!payload) return null;
    const frame: Frame = { type: this.header.type, header: this.header, payload };
    this.headerLen = this.header = this.payloadLen = null;
    this.frameStart = this.offset();
    return frame;
  }

  private missingPart(): string {
    if (this.headerLen === null) return 'header_len';
    if (this.header === null) return `header of ${this.headerLen} bytes`;
    if (this.payloadLen === null) return 'payload_len';
    return `payload of ${this.payloadLen} bytes`;
  }
}

function parseHeader(raw: Uint8Array, offset: number): FrameHeader {
  let text: string;
  try {
    text = utf8.decode(raw);
  } catch {
    throw new FrameError('header is not UTF-8', offset);
  }
  let value: unknown;
  try {
    value = JSON.parse(text);
  } catch (e) {
    throw new FrameError(`header is not valid JSON: ${(e as Error).message}`, offset);
  }
  if (typeof value !== 'object' || value === null || Array.isArray(value))
    throw new FrameError('header must be a JSON object', offset);
  const h = value as Record<string, unknown>;
  const missing = ['type', 'request_id', 'seq', 't'].filter((k) => !(k in h));
  if (missing.length) throw new FrameError(`header is missing required key(s) ${missing.join(', ')}`, offset);
  if (!FRAME_TYPES.includes(h.type as FrameType))
    throw new FrameError(`unknown frame type ${JSON.stringify(h.type)}`, offset);
  if (typeof h.request_id !== 'string') throw new FrameError('request_id must be a string', offset);
  if (!Number.isInteger(h.seq) || (h.seq as number) < 0)
    throw new FrameError(`seq must be a non-negative integer, got ${JSON.stringify(h.seq)}`, offset);
  if (!Number.isInteger(h.t)) throw new FrameError(`t must be an integer (ms), got ${JSON.stringify(h.t)}`, offset);
  return h as FrameHeader;
}

// ------------------------------------------------------------------------------------------ float16 latents

let f16Table: Float32Array | null = null;

/** All 65536 half-precision values, built once (256 KB): decoding is then one lookup per element. */
function halfTable(): Float32Array {
  if (f16Table) return f16Table;
  const table = new Float32Array(65536);
  for (let h = 0; h < 65536; h++) {
    const sign = h & 0x8000 ? -1 : 1;
    const exp = (h >> 10) & 0x1f;
    const frac = h & 0x3ff;
    if (exp === 0) table[h] = sign * frac * 2 ** -24; // zero and subnormals
    else if (exp === 31) table[h] = frac ? NaN : sign * Infinity;
    else table[h] = sign * (1 + frac / 1024) * 2 ** (exp - 15);
  }
  f16Table = table;
  return table;
}

/** Little-endian float16 bytes -> Float32Array. */
export function decodeFloat16(bytes: Uint8Array): Float32Array {
  if (bytes.length % 2) throw new FrameError(`float16 data has an odd byte count (${bytes.length})`);
  const table = halfTable();
  const out = new Float32Array(bytes.length / 2);
  for (let i = 0, j = 0; i < out.length; i++, j += 2) out[i] = table[bytes[j] | (bytes[j + 1] << 8)];
  return out;
}

export interface Latent {
  step: number;
  layout: Layout;
  shape: number[];
  data: Float32Array;
}

/** A `latent` frame's tensor, checked against its shape. */
export function latentOf(frame: Frame): Latent {
  const h = frame.header;
  if (frame.type !== 'latent') throw new FrameError(`only latent frames carry a tensor, this one is ${frame.type}`);
  if (h.dtype !== 'float16') throw new FrameError(`latent dtype ${JSON.stringify(h.dtype)} is not float16`);
  const shape = h.shape as number[];
  const layout = h.layout as Layout;
  if (!Array.isArray(shape) || !shape.every((d) => Number.isInteger(d) && d >= 0))
    throw new FrameError(`latent shape must be a list of non-negative integers`);
  if (shape.length !== layout.length) throw new FrameError(`latent layout ${layout} does not fit shape [${shape}]`);
  const expected = shape.reduce((a, b) => a * b, 1) * 2;
  if (frame.payload.length !== expected)
    throw new FrameError(`latent payload is ${frame.payload.length} bytes but shape [${shape}] needs ${expected}`);
  return { step: h.step as number, layout, shape, data: decodeFloat16(frame.payload) };
}

// ------------------------------------------------------------------------------------------ projection

/** What `new ImageData(data, width, height)` takes. */
export interface Picture {
  width: number;
  height: number;
  data: Uint8ClampedArray<ArrayBuffer>;
}

/** How many pictures a latent holds: video frames for BCFHW, one otherwise. */
export function frameCount(latent: Pick<Latent, 'layout' | 'shape'>): number {
  return latent.layout === 'BCFHW' ? latent.shape[2] : 1;
}

/**
 * Latent -> RGBA picture. Images and video frames use the family's factors like ComfyUI's previews
 * (`rgb = clamp(((x·F + bias) + 1) / 2, 0, 1) * 255`); without factors the first three channels are
 * min-max scaled. Audio (BLC) becomes a time x channel heatmap. Batch 0 only.
 */
export function projectLatent(
  latent: Pick<Latent, 'layout' | 'shape' | 'data'>,
  spec: Pick<LatentSpec, 'rgb_factors' | 'rgb_bias'> | null,
  frame = 0,
): Picture {
  if (latent.layout === 'BLC') return heatmap(latent.data, latent.shape[1], latent.shape[2]);
  const [, c, ...rest] = latent.shape;
  const [f, h, w] = latent.layout === 'BCFHW' ? rest : [1, rest[0], rest[1]];
  const fi = Math.min(Math.max(0, frame | 0), f - 1);
  // Channel ch of frame fi starts at (ch * f + fi) * h * w in a C-order [1, C, F, H, W] (or [1, C, H, W]) tensor.
  const plane = (ch: number) => (ch * f + fi) * h * w;
  return spec?.rgb_factors
    ? projectWithFactors(latent.data, c, h * w, plane, spec.rgb_factors, spec.rgb_bias, w, h)
    : projectMinMax(latent.data, c, h * w, plane, w, h);
}

/** numpy's `round` is half-to-even; match it so the TS and Python projections agree byte for byte. */
function roundHalfEven(x: number): number {
  const r = Math.round(x);
  return Math.abs(x % 1) === 0.5 && r % 2 !== 0 ? r - 1 : r;
}

const fr = Math.fround; // Python computes in float32; rounding each step the same way keeps results equal

function projectWithFactors(
  data: Float32Array,
  c: number,
  hw: number,
  plane: (ch: number) => number,
  factors: number[][],
  bias: number[] | null,
  w: number,
  h: number,
): Picture {
  const out = new Uint8ClampedArray(hw * 4);
  const offsets = Array.from({ length: c }, (_, ch) => plane(ch));
  const F = factors.map((row) => row.map(fr));
  const B = bias ? bias.map(fr) : null;
  for (let p = 0; p < hw; p++) {
    for (let k = 0; k < 3; k++) {
      let acc = 0;
      for (let ch = 0; ch < c; ch++) acc = fr(acc + fr(data[offsets[ch] + p] * F[ch][k]));
      if (B) acc = fr(acc + B[k]);
      const v = fr(fr(acc + 1) / 2);
      out[p * 4 + k] = roundHalfEven(fr(Math.min(1, Math.max(0, v)) * 255));
    }
    out[p * 4 + 3] = 255;
  }
  return { width: w, height: h, data: out };
}

function projectMinMax(
  data: Float32Array,
  c: number,
  hw: number,
  plane: (ch: number) => number,
  w: number,
  h: number,
): Picture {
  const offsets = [0, 1, 2].map((k) => plane(k % c));
  let lo = Infinity;
  let hi = -Infinity;
  for (const o of offsets)
    for (let p = 0; p < hw; p++) {
      const v = data[o + p];
      if (v < lo) lo = v;
      if (v > hi) hi = v;
    }
  const range = hi > lo ? fr(hi - lo) : 1;
  const out = new Uint8ClampedArray(hw * 4);
  for (let p = 0; p < hw; p++) {
    for (let k = 0; k < 3; k++) {
      const v = fr(fr(data[offsets[k] + p] - lo) / range);
      out[p * 4 + k] = roundHalfEven(fr(Math.min(1, Math.max(0, v)) * 255));
    }
    out[p * 4 + 3] = 255;
  }
  return { width: w, height: h, data: out };
}

/** A small perceptual colour ramp (dark blue -> purple -> orange -> pale yellow), like matplotlib's magma. */
const RAMP: [number, number, number][] = [
  [0, 0, 4],
  [59, 15, 112],
  [140, 41, 129],
  [222, 73, 104],
  [254, 159, 109],
  [252, 253, 191],
];

function ramp(t: number): [number, number, number] {
  const x = Math.min(1, Math.max(0, t)) * (RAMP.length - 1);
  const i = Math.min(RAMP.length - 2, Math.floor(x));
  const u = x - i;
  const a = RAMP[i];
  const b = RAMP[i + 1];
  return [a[0] + (b[0] - a[0]) * u, a[1] + (b[1] - a[1]) * u, a[2] + (b[2] - a[2]) * u];
}

/**
 * Audio latents (B, L, C): time runs left to right, channels top to bottom, min-max scaled over the
 * whole tensor. No factors exist for audio latent spaces; this at least shows structure forming.
 */
export function heatmap(data: Float32Array, length: number, channels: number): Picture {
  let lo = Infinity;
  let hi = -Infinity;
  const n = length * channels;
  for (let i = 0; i < n; i++) {
    if (data[i] < lo) lo = data[i];
    if (data[i] > hi) hi = data[i];
  }
  const range = hi > lo ? hi - lo : 1;
  const out = new Uint8ClampedArray(n * 4);
  for (let t = 0; t < length; t++) {
    for (let ch = 0; ch < channels; ch++) {
      const [r, g, b] = ramp((data[t * channels + ch] - lo) / range);
      const p = (ch * length + t) * 4;
      out[p] = r;
      out[p + 1] = g;
      out[p + 2] = b;
      out[p + 3] = 255;
    }
  }
  return { width: length, height: channels, data: out };
}
