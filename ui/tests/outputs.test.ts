import { existsSync, mkdirSync, mkdtempSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { afterEach, beforeEach, describe, expect, it } from 'vitest';
import {
  confineFolder, deleteOutput, facetsOf, isResultName, outputsFolderOf, pageOutputs, pageParams, readOutputs, sidecarOf,
} from '@/server/outputs';
import type { Job } from '@/server/jobs';
import { captionParts, downloadName, filenameFromDisposition } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

function sidecar(arch: string, model: string, seed: number, prompt = 'a red fox') {
  return JSON.stringify({
    seed,
    config: { model: { arch, name_or_path: model }, sample: { prompt, seed, num_inference_steps: 20, guidance_scale: 7.5, width: 64, height: 64 } },
  });
}

describe('readOutputs', () => {
  let folder: string;
  beforeEach(() => {
    folder = mkdtempSync(path.join(os.tmpdir(), 'aitk-outputs-'));
  });

  /** A result and its sidecar, `age` seconds old. */
  function result(name: string, age: number, meta: string | null) {
    const file = path.join(folder, name);
    writeFileSync(file, 'x');
    const t = Date.now() / 1000 - age;
    utimesSync(file, t, t);
    if (meta !== null) writeFileSync(sidecarOf(file), meta);
  }

  it('lists results newest first with their sidecars, skipping sidecars, temp and hidden files, folders', () => {
    result('old.png', 300, sidecar('sd1', 'tiny:sd1', 1));
    result('new.png', 10, sidecar('flux', 'black-forest-labs/FLUX.1-dev', 2));
    result('mid.mp4', 100, null);
    writeFileSync(path.join(folder, 'half.png.tmp'), 'x');
    writeFileSync(path.join(folder, '.hidden.png'), 'x');
    mkdirSync(path.join(folder, '.thumbs'));
    mkdirSync(path.join(folder, 'sub.png'));
    const list = readOutputs(folder);
    expect(list.map((e) => e.name)).toEqual(['new.png', 'mid.mp4', 'old.png']);
    expect(list[0].meta?.config?.model?.arch).toBe('flux');
    expect(list[1].meta).toBeNull();
    expect(list[0].url).toBe(`/api/files/${encodeURIComponent(path.join(folder, 'new.png'))}`);
    expect(list[0].bytes).toBe(1);
  });

  it('keeps a result whose sidecar is broken, and is empty for a missing folder', () => {
    result('a.png', 5, '{not json');
    expect(readOutputs(folder)[0].meta).toBeNull();
    expect(readOutputs(path.join(folder, 'nope'))).toEqual([]);
  });

  it('pages and filters by arch and model; facets count the whole folder', () => {
    for (let i = 0; i < 30; i++) result(`r${String(i).padStart(2, '0')}.png`, 1000 - i, sidecar(i % 3 ? 'sd1' : 'flux', i % 2 ? 'tiny:sd1' : 'other', i));
    const all = readOutputs(folder);
    const first = pageOutputs(all, {}, 0, 24);
    expect(first.items).toHaveLength(24);
    expect(first.total).toBe(30);
    expect(first.items[0].name).toBe('r29.png');
    const second = pageOutputs(all, {}, 24, 24);
    expect(second.items.map((e) => e.name)).toEqual(['r05.png', 'r04.png', 'r03.png', 'r02.png', 'r01.png', 'r00.png']);
    const flux = pageOutputs(all, { arch: 'flux' }, 0, 100);
    expect(flux.total).toBe(10);
    expect(flux.items.every((e) => e.meta?.config?.model?.arch === 'flux')).toBe(true);
    const sd1Tiny = pageOutputs(all, { arch: 'sd1', model: 'tiny:sd1' }, 0, 100);
    expect(sd1Tiny.items.map((e) => e.meta?.seed)).toEqual([29, 25, 23, 19, 17, 13, 11, 7, 5, 1]);
    expect(flux.facets).toEqual(first.facets);
    expect(facetsOf(all)).toEqual([
      { arch: 'flux', model: 'other', count: 5 },
      { arch: 'flux', model: 'tiny:sd1', count: 5 },
      { arch: 'sd1', model: 'other', count: 10 },
      { arch: 'sd1', model: 'tiny:sd1', count: 10 },
    ]);
  });

  it('deletes a result, its thumbnail and its sidecar, nothing else', () => {
    result('a.png', 5, sidecar('sd1', 'tiny:sd1', 1));
    result('b.png', 5, sidecar('sd1', 'tiny:sd1', 2));
    mkdirSync(path.join(folder, '.thumbs'));
    writeFileSync(path.join(folder, '.thumbs', 'a.png.jpg'), 'x');
    expect(deleteOutput(folder, 'a.png')).toHaveLength(3);
    expect(existsSync(path.join(folder, 'a.png'))).toBe(false);
    expect(existsSync(path.join(folder, 'a.json'))).toBe(false);
    expect(existsSync(path.join(folder, '.thumbs', 'a.png.jpg'))).toBe(false);
    expect(readOutputs(folder).map((e) => e.name)).toEqual(['b.png']);
    expect(existsSync(path.join(folder, 'b.json'))).toBe(true);
  });

  it('refuses names that are not results of this folder', () => {
    const outside = mkdtempSync(path.join(os.tmpdir(), 'aitk-outside-'));
    writeFileSync(path.join(outside, 'secret.png'), 'x');
    symlinkSync(path.join(outside, 'secret.png'), path.join(folder, 'link.png'));
    result('a.png', 5, sidecar('sd1', 'tiny:sd1', 1));
    for (const name of ['../a.png', 'a.json', '.hidden', '', '..', `..${path.sep}..${path.sep}etc${path.sep}passwd`, 'nope.png']) {
      expect(() => deleteOutput(folder, name), name).toThrow(/no output named/);
    }
    expect(() => deleteOutput(folder, 'link.png')).toThrow(/no output named/);
    expect(existsSync(path.join(outside, 'secret.png'))).toBe(true);
    expect(existsSync(path.join(folder, 'a.json'))).toBe(true);
  });
});

describe('folder confinement', () => {
  let root: string;
  beforeEach(() => {
    root = mkdtempSync(path.join(os.tmpdir(), 'aitk-root-'));
  });
  afterEach(() => {
    delete process.env.AITK_TRAINING_FOLDER;
  });

  it('keeps folders under the training folder, refuses the folder itself, outside ones and links out', () => {
    expect(confineFolder(path.join(root, 'job', 'outputs'), root)).toBe(path.join(root, 'job', 'outputs'));
    expect(confineFolder(root, root)).toBeNull();
    expect(confineFolder(path.join(root, '..', 'elsewhere'), root)).toBeNull();
    expect(confineFolder('/etc', root)).toBeNull();
    const outside = mkdtempSync(path.join(os.tmpdir(), 'aitk-out-'));
    symlinkSync(outside, path.join(root, 'escape'));
    expect(confineFolder(path.join(root, 'escape'), root)).toBeNull();
  });

  it('finds the outputs folder where startJob tells the engine to write, whatever the row says', () => {
    process.env.AITK_TRAINING_FOLDER = '/data/output';
    const job = (engine: Record<string, unknown>) =>
      ({ name: 'eng', job_config: JSON.stringify({ config: { process: [{ type: 'InferenceEngine', engine }] } }) }) as Job;
    expect(outputsFolderOf(job({}))).toBe('/data/output/eng/outputs');
    expect(outputsFolderOf(job({ job_folder: '/data/output/other', output_folder: '/data/elsewhere' }))).toBe('/data/output/eng/outputs');
  });
});

describe('names and paging parameters', () => {
  it('isResultName', () => {
    expect(isResultName('abc.png')).toBe(true);
    expect(isResultName('abc.json')).toBe(false);
    expect(isResultName('abc.png.tmp')).toBe(false);
    expect(isResultName('a/b.png')).toBe(false);
    expect(isResultName('.thumbs')).toBe(false);
  });

  it('pageParams clamps', () => {
    expect(pageParams(null, null)).toEqual({ offset: 0, limit: 48 });
    expect(pageParams('-5', '0')).toEqual({ offset: 0, limit: 48 });
    expect(pageParams('24', '100000')).toEqual({ offset: 24, limit: 500 });
    expect(pageParams('x', '1.5')).toEqual({ offset: 0, limit: 48 });
  });
});

describe('captions and download names', () => {
  const entry = (meta: OutputEntry['meta'], name = '0f3a9c.png') => ({ name, meta });

  it('names a download from the prompt and seed as the engine does', () => {
    const meta = JSON.parse(sidecar('sd1', 'tiny:sd1', 42, '  A red fox, in the snow! ')) as OutputEntry['meta'];
    expect(downloadName(entry(meta))).toBe('A_red_fox_in_the_snow_42.png');
    expect(downloadName(entry(null))).toBe('0f3a9c.png');
    const long = JSON.parse(sidecar('sd1', 'tiny:sd1', 7, `${'word '.repeat(20)}`)) as OutputEntry['meta'];
    expect(downloadName(entry(long, 'x.mp4'))).toBe(`${'word_'.repeat(12).slice(0, 59)}_7.mp4`);
  });

  it('captions model, size, steps, CFG and seed', () => {
    const meta = JSON.parse(sidecar('sd1', 'tiny:sd1', 42)) as OutputEntry['meta'];
    expect(captionParts(meta)).toEqual(['sd1 · tiny:sd1', '64×64', '20 steps', 'CFG 7.5', 'seed 42']);
    expect(captionParts(null)).toEqual([]);
  });

  it('reads the filename of Content-Disposition', () => {
    expect(filenameFromDisposition('attachment; filename="a_red_fox_42.png"')).toBe('a_red_fox_42.png');
    expect(filenameFromDisposition("attachment; filename*=utf-8''caf%C3%A9_1.png")).toBe('café_1.png');
    expect(filenameFromDisposition(null)).toBeNull();
  });
});
