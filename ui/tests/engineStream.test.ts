/**
 * The TS frame parser against byte vectors written by the Python encoder
 * (testing/fixtures/protocol_vectors.json, made by testing/fixtures/make_protocol_vectors.py).
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { describe, expect, it } from 'vitest';
import {
  ERROR_CODES, FRAME_TYPES, LAYOUTS, STAGES, decodeFloat16, type Frame, FrameError, FrameParser, latentOf,
} from '@/utils/engineStream';

interface ExpectedFrame {
  type: string;
  header: Record<string, unknown>;
  payload_hex: string;
  array: { shape: number[]; dtype: string; values: number[] } | null;
}
interface Vectors {
  vectors: { name: string; hex: string; frames: ExpectedFrame[] }[];
  invalid: { reason: string; hex: string }[];
  vocabulary: { frame_types: string[]; stages: string[]; layouts: string[]; error_http_status: Record<string, number> };
}

const FIXTURE = path.resolve(__dirname, '../../testing/fixtures/protocol_vectors.json');
const fixture: Vectors = JSON.parse(readFileSync(FIXTURE, 'utf8'));
const bytes = (hex: string) => Uint8Array.from(Buffer.from(hex, 'hex'));
const hexOf = (b: Uint8Array) => Buffer.from(b).toString('hex');

/** Feed `data` cut at the given offsets; returns every frame and checks the stream closes cleanly. */
function parseSplit(data: Uint8Array, cuts: number[]): Frame[] {
  const parser = new FrameParser();
  const frames: Frame[] = [];
  let from = 0;
  for (const cut of [...cuts, data.length]) {
    frames.push(...parser.push(data.subarray(from, cut)));
    from = cut;
  }
  parser.end();
  return frames;
}

function expectFrames(frames: Frame[], expected: ExpectedFrame[]) {
  expect(frames.map((f) => f.type)).toEqual(expected.map((e) => e.type));
  frames.forEach((frame, i) => {
    const want = expected[i];
    expect(frame.header).toEqual(want.header);
    expect(hexOf(frame.payload)).toBe(want.payload_hex);
    if (want.array) {
      const latent = latentOf(frame);
      expect(latent.shape).toEqual(want.array.shape);
      // Exact: the fixture holds the extremes (±65504), a subnormal (2^-24) and -0.0.
      want.array.values.forEach((v, j) => expect(Object.is(latent.data[j], v) || latent.data[j] === v).toBe(true));
      expect(Object.is(latent.data[want.array.values.length - 1], -0)).toBe(true);
    }
  });
}

describe('FrameParser on the Python vectors', () => {
  it.each(fixture.vectors.map((v) => [v.name, v] as const))('decodes %s in one chunk', (_, v) => {
    expectFrames(parseSplit(bytes(v.hex), []), v.frames);
  });

  it.each(fixture.vectors.map((v) => [v.name, v] as const))('decodes %s split at every byte boundary', (_, v) => {
    const data = bytes(v.hex);
    for (let cut = 0; cut <= data.length; cut++) expectFrames(parseSplit(data, [cut]), v.frames);
  });

  it('decodes the whole stream fed one byte at a time', () => {
    const all = fixture.vectors.find((v) => v.name === 'all')!;
    const data = bytes(all.hex);
    const cuts = Array.from({ length: data.length }, (_, i) => i);
    expectFrames(parseSplit(data, cuts), all.frames);
  });

  it('decodes the whole stream cut into three pieces at many places', () => {
    const all = fixture.vectors.find((v) => v.name === 'all')!;
    const data = bytes(all.hex);
    for (let a = 0; a < data.length; a += 11)
      for (let b = a; b < data.length; b += 97) expectFrames(parseSplit(data, [a, b]), all.frames);
  });

  it('returns frames as soon as they are complete, not at the end of the stream', () => {
    const all = fixture.vectors.find((v) => v.name === 'all')!;
    const first = bytes(fixture.vectors[0].hex);
    const parser = new FrameParser();
    const frames = parser.push(bytes(all.hex).subarray(0, first.length + 3));
    expect(frames.map((f) => f.type)).toEqual(['start']);
  });
});

describe('FrameParser rejects corrupt input', () => {
  it.each(fixture.invalid.map((v) => [v.reason, v] as const))('%s', (_, v) => {
    const data = bytes(v.hex);
    const parser = new FrameParser();
    expect(() => {
      parser.push(data);
      parser.end();
    }).toThrow(FrameError);
    // and it stays broken: no silent resynchronisation
    expect(() => parser.push(new Uint8Array([0]))).toThrow(FrameError);
  });

  it.each(fixture.invalid.map((v) => [v.reason, v] as const))('%s, fed byte by byte', (_, v) => {
    const data = bytes(v.hex);
    const parser = new FrameParser();
    expect(() => {
      for (let i = 0; i < data.length; i++) parser.push(data.subarray(i, i + 1));
      parser.end();
    }).toThrow(FrameError);
  });

  it('rejects a latent payload that does not fit its shape', () => {
    const latent = fixture.vectors.find((v) => v.name === 'latent')!;
    const [frame] = parseSplit(bytes(latent.hex), []);
    const short = { ...frame, payload: frame.payload.subarray(2) };
    expect(() => latentOf(short)).toThrow(/needs/);
  });

  it('rejects a header over the configured limit before buffering it', () => {
    const parser = new FrameParser(16);
    expect(() => parser.push(Uint8Array.of(17, 0, 0, 0))).toThrow(/header_len 17/);
  });
});

describe('decodeFloat16', () => {
  it('handles specials', () => {
    const b = new Uint8Array(new Uint16Array([0x3c00, 0xc000, 0x7c00, 0xfc00, 0x0001, 0x8000, 0x7e00]).buffer);
    const v = decodeFloat16(b);
    expect(Array.from(v.subarray(0, 5))).toEqual([1, -2, Infinity, -Infinity, 2 ** -24]);
    expect(Object.is(v[5], -0)).toBe(true);
    expect(Number.isNaN(v[6])).toBe(true);
  });
});

describe('the wire vocabulary', () => {
  it('is the one protocol.py defines: frame types, stages, layouts and error codes', () => {
    const v = fixture.vocabulary;
    expect([...FRAME_TYPES]).toEqual(v.frame_types);
    expect([...STAGES]).toEqual(v.stages);
    expect([...LAYOUTS]).toEqual(v.layouts);
    expect([...ERROR_CODES]).toEqual(Object.keys(v.error_http_status));
  });
});
