/** The gallery's server side: search, sort, favourites kept in the outputs folder, bulk names, the zip download. */
import { spawnSync } from 'node:child_process';
import { mkdirSync, mkdtempSync, readFileSync, symlinkSync, utimesSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { beforeEach, describe, expect, it } from 'vitest';
import { FAVOURITES_FILE, readFavourites, setFavourites } from '@/server/favourites';
import { bulkNames, isFieldError, outputQuery, pageOutputs, readOutputs, resultNames, sidecarOf } from '@/server/outputs';
import { zipArchive } from '@/server/zip';
import { matchesSearch, searchTerms, sortOutputs, zipNames } from '@/utils/outputs';
import type { OutputEntry } from '@/utils/types';

let folder: string;
beforeEach(() => {
  folder = mkdtempSync(path.join(os.tmpdir(), 'aitk-gallery-'));
});

function result(name: string, age: number, prompt: string, seed: number | null) {
  const file = path.join(folder, name);
  writeFileSync(file, `data of ${name}`);
  const t = Date.now() / 1000 - age;
  utimesSync(file, t, t);
  const sample: Record<string, unknown> = { prompt };
  if (seed !== null) sample.seed = seed;
  writeFileSync(sidecarOf(file), JSON.stringify({ ...(seed !== null ? { seed } : {}), config: { model: { arch: 'sd1', name_or_path: 'tiny:sd1' }, sample } }));
}

const names = (entries: OutputEntry[]) => entries.map((e) => e.name);

describe('search and sort', () => {
  beforeEach(() => {
    result('a.png', 40, 'A red circle on a blue background', 7);
    result('b.png', 30, 'a green square', 3);
    result('c.png', 20, 'Red triangle, BLUE sky', 12);
    result('d.png', 10, 'no seed here', null);
  });

  it('keeps results whose prompt holds every word, in any case', () => {
    const all = readOutputs(folder);
    expect(names(all.filter((e) => matchesSearch(e.meta, searchTerms('red  BLUE'))))).toEqual(['c.png', 'a.png']);
    expect(names(all.filter((e) => matchesSearch(e.meta, searchTerms('red square'))))).toEqual([]);
    expect(all.filter((e) => matchesSearch(e.meta, searchTerms('   ')))).toHaveLength(4);
    expect(pageOutputs(all, { q: 'circle' }, 0, 10).total).toBe(1);
  });

  it('orders by date either way and by seed either way, seedless last', () => {
    const all = readOutputs(folder);
    expect(names(sortOutputs(all, 'newest'))).toEqual(['d.png', 'c.png', 'b.png', 'a.png']);
    expect(names(sortOutputs(all, 'oldest'))).toEqual(['a.png', 'b.png', 'c.png', 'd.png']);
    expect(names(sortOutputs(all, 'seed'))).toEqual(['b.png', 'a.png', 'c.png', 'd.png']);
    expect(names(sortOutputs(all, 'seed_desc'))).toEqual(['c.png', 'a.png', 'b.png', 'd.png']);
    expect(names(pageOutputs(all, {}, 1, 2, 'seed').items)).toEqual(['a.png', 'c.png']); // sorted, then paged
  });

  it('reads its query, naming the parameter that is wrong', () => {
    expect(outputQuery(new URLSearchParams('q=red&sort=seed&favourites=1&arch=sd1'))).toEqual({
      filter: { arch: 'sd1', model: null, q: 'red', favourites: true },
      sort: 'seed',
    });
    expect(outputQuery(new URLSearchParams(''))).toMatchObject({ sort: 'newest', filter: { q: null, favourites: false } });
    expect(outputQuery(new URLSearchParams('sort=random'))).toMatchObject({ field: 'sort' });
    expect(outputQuery(new URLSearchParams('favourites=yes'))).toMatchObject({ field: 'favourites' });
    expect(outputQuery(new URLSearchParams(`q=${'x'.repeat(501)}`))).toMatchObject({ field: 'q' });
  });
});

describe('favourites', () => {
  it('are kept in the outputs folder, survive a new read, and drop results that are gone', () => {
    result('a.png', 3, 'one', 1);
    result('b.png', 2, 'two', 2);
    expect(readFavourites(folder).size).toBe(0);
    setFavourites(folder, ['a.png', 'b.png'], true, resultNames(folder));
    expect(JSON.parse(readFileSync(path.join(folder, FAVOURITES_FILE), 'utf8'))).toEqual({ names: ['a.png', 'b.png'] });
    const listed = readOutputs(folder);
    expect(listed.map((e) => [e.name, e.favourite])).toEqual([['b.png', true], ['a.png', true]]);
    expect(readOutputs(folder).some((e) => e.name === FAVOURITES_FILE)).toBe(false); // a dotfile: never a result
    expect(pageOutputs(listed, { favourites: true }, 0, 10)).toMatchObject({ total: 2, favourites: 2 });
    setFavourites(folder, ['b.png'], false, resultNames(folder));
    expect(names(pageOutputs(readOutputs(folder), { favourites: true }, 0, 10).items)).toEqual(['a.png']);
    // a.png deleted meanwhile: the next write forgets it
    setFavourites(folder, ['b.png'], true, new Set(['b.png']));
    expect([...readFavourites(folder)]).toEqual(['b.png']);
  });

  it('read as none when the file is broken', () => {
    writeFileSync(path.join(folder, FAVOURITES_FILE), '{not json');
    expect(readFavourites(folder).size).toBe(0);
    writeFileSync(path.join(folder, FAVOURITES_FILE), JSON.stringify({ names: ['a.png', 3, null] }));
    expect([...readFavourites(folder)]).toEqual(['a.png']);
  });
});

describe('bulk names', () => {
  it('takes result files of the folder only, naming the first bad entry', () => {
    result('a.png', 2, 'one', 1);
    writeFileSync(path.join(folder, 'outside.png'), 'x');
    symlinkSync(path.join(folder, 'outside.png'), path.join(folder, 'link.png'));
    mkdirSync(path.join(folder, 'dir.png'));
    expect(bulkNames({ names: ['a.png', 'a.png'] }, folder)).toEqual(['a.png']);
    expect(bulkNames({ names: [] }, folder)).toMatchObject({ field: 'names' });
    expect(bulkNames({}, folder)).toMatchObject({ field: 'names' });
    expect(bulkNames(null, folder)).toMatchObject({ field: 'names' });
    expect(bulkNames({ names: ['a.png', 5] }, folder)).toMatchObject({ field: 'names[1]' });
    expect(bulkNames({ names: ['../a.png'] }, folder)).toMatchObject({ field: 'names[0]' });
    expect(bulkNames({ names: ['a.json'] }, folder)).toMatchObject({ field: 'names[0]' });
    expect(bulkNames({ names: ['a.png', 'gone.png'] }, folder)).toMatchObject({ field: 'names[1]', status: 404 });
    expect(bulkNames({ names: ['link.png'] }, folder)).toMatchObject({ field: 'names[0]', status: 404 });
    expect(bulkNames({ names: ['dir.png'] }, folder)).toMatchObject({ field: 'names[0]' });
    expect(isFieldError(bulkNames({ names: Array(1001).fill('a.png') }, folder))).toBe(true);
  });
});

describe('the zip', () => {
  it('names each file from its prompt and seed, unique', () => {
    const entry = (name: string, prompt: string, seed: number) => ({ name, meta: { config: { sample: { prompt, seed } } } });
    expect(zipNames([entry('1.png', 'a cat', 1), entry('2.png', 'a cat', 1), entry('3.png', 'A CAT', 1), entry('4.jpg', 'a cat', 1)])).toEqual([
      'a_cat_1.png',
      'a_cat_1-2.png',
      'A_CAT_1-3.png',
      'a_cat_1.jpg',
    ]);
  });

  it('is an archive Python zipfile reads back byte for byte', () => {
    const files = [
      { name: 'a_cat_1.png', data: Buffer.from('first file'), mtime: new Date(2024, 0, 2, 3, 4, 6) },
      { name: 'ünïcode_2.png', data: Buffer.alloc(70_000, 7), mtime: new Date(2024, 5, 6) },
      { name: 'empty.wav', data: Buffer.alloc(0), mtime: new Date(2024, 5, 6) },
    ];
    const zip = path.join(folder, 'out.zip');
    writeFileSync(zip, zipArchive(files));
    const check = spawnSync('python3', ['-c', `
import json, sys, zipfile
z = zipfile.ZipFile(sys.argv[1])
assert z.testzip() is None
print(json.dumps([[i.filename, i.file_size, z.read(i).hex()[:8], list(i.date_time)] for i in z.infolist()]))
`, zip], { encoding: 'utf8' });
    expect(check.stderr).toBe('');
    expect(JSON.parse(check.stdout)).toEqual([
      ['a_cat_1.png', 10, Buffer.from('firs').toString('hex'), [2024, 1, 2, 3, 4, 6]],
      ['ünïcode_2.png', 70_000, '07070707', [2024, 6, 6, 0, 0, 0]],
      ['empty.wav', 0, '', [2024, 6, 6, 0, 0, 0]],
    ]);
  });
});
