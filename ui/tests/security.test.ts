/**
 * The security review's attacks on the UI, as units: a foreign Host (DNS rebinding), cross-site and
 * cross-origin requests, form content types, engine.json and other private files through the public
 * /api/files (also through links), settings that point at system folders, secrets read back, and a log read
 * from offset 0. The e2e run checks the same guard on the real server.
 */
import { mkdirSync, mkdtempSync, symlinkSync, writeFileSync } from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { NextRequest } from 'next/server';
import { afterEach, describe, expect, it } from 'vitest';
import { GET as serveRoute } from '@/app/api/files/[...filePath]/route';
import { isPrivate, resolveServable } from '@/server/files';
import { MAX_TAIL_BYTES, readLogTail } from '@/server/logFile';
import { checkRequest, hostName } from '@/server/requestGuard';
import { folderProblem, settingsUpdate } from '@/server/settingsPolicy';

const h = (headers: Record<string, string>) => new Headers(headers);
const LOCAL = { host: '127.0.0.1:8675' };

describe('requestGuard', () => {
  afterEach(() => {
    delete process.env.AITK_ALLOWED_HOSTS;
  });

  it('reads host names out of Host headers', () => {
    expect(hostName('127.0.0.1:8675')).toBe('127.0.0.1');
    expect(hostName('[::1]:8675')).toBe('[::1]');
    expect(hostName('LocalHost')).toBe('localhost');
  });

  it('lets the UI itself and scripts through', () => {
    for (const host of ['127.0.0.1:8675', 'localhost:3000', '[::1]:8675', 'localhost']) {
      expect(checkRequest('GET', '/api/jobs', h({ host }))).toBeNull();
    }
    const same = { ...LOCAL, origin: 'http://127.0.0.1:8675', 'sec-fetch-site': 'same-origin' };
    expect(checkRequest('POST', '/api/jobs', h({ ...same, 'content-type': 'application/json', 'content-length': '2' }))).toBeNull();
    expect(checkRequest('POST', '/api/jobs/x/stop', h(same))).toBeNull(); // no body, no type needed
    expect(checkRequest('POST', '/api/jobs', h({ ...LOCAL, 'content-type': 'application/json; charset=utf-8', 'content-length': '2' }))).toBeNull(); // curl
    expect(checkRequest('POST', '/api/inference/assets', h({ ...same, 'content-type': 'multipart/form-data; boundary=x', 'transfer-encoding': 'chunked' }))).toBeNull();
    expect(checkRequest('GET', '/generate', h({ ...LOCAL, 'sec-fetch-site': 'none' }))).toBeNull(); // typed into the address bar
  });

  it('refuses a foreign Host (DNS rebinding) unless the user allowed it', () => {
    for (const host of ['evil.example', 'evil.example:8675', '127.0.0.1.evil.example', '']) {
      expect(checkRequest('GET', '/api/settings', h(host ? { host } : {}))?.status).toBe(403);
    }
    process.env.AITK_ALLOWED_HOSTS = 'gpu-box.lan, other.lan';
    expect(checkRequest('GET', '/api/settings', h({ host: 'gpu-box.lan:8675' }))).toBeNull();
    expect(checkRequest('GET', '/api/settings', h({ host: 'evil.example' }))?.status).toBe(403);
  });

  it('refuses cross-site requests of every method, GETs too', () => {
    for (const site of ['cross-site', 'same-site']) {
      expect(checkRequest('GET', '/api/jobs/x/stop', h({ ...LOCAL, 'sec-fetch-site': site }))?.status).toBe(403);
      expect(checkRequest('POST', '/api/jobs', h({ ...LOCAL, 'sec-fetch-site': site }))?.status).toBe(403);
    }
  });

  it('refuses a state change from another origin', () => {
    for (const origin of ['http://evil.example', 'http://127.0.0.1:9999', 'null', 'http://localhost:8675']) {
      const refused = checkRequest('POST', '/api/settings', h({ ...LOCAL, origin, 'content-type': 'application/json', 'content-length': '2' }));
      expect(refused?.status).toBe(403);
      expect(refused?.error).toContain('cross-origin');
    }
  });

  it('refuses bodies an HTML form can send without a preflight', () => {
    for (const type of ['text/plain', 'application/x-www-form-urlencoded', 'multipart/form-data; boundary=x', '']) {
      const headers = h({ ...LOCAL, 'content-length': '10', ...(type ? { 'content-type': type } : {}) });
      expect(checkRequest('POST', '/api/inference/generate', headers)?.status).toBe(415);
    }
    const json = h({ ...LOCAL, 'content-type': 'application/json', 'content-length': '10' });
    expect(checkRequest('POST', '/api/inference/assets', json)?.status).toBe(415); // uploads are multipart
    expect(checkRequest('POST', '/api/inference/v1/images/edits', json)?.status).toBe(415);
  });

  it("takes OpenAI's image edits as uploads and its generations as JSON", () => {
    const form = h({ ...LOCAL, 'content-type': 'multipart/form-data; boundary=x', 'content-length': '10' });
    const json = h({ ...LOCAL, 'content-type': 'application/json', 'content-length': '10' });
    expect(checkRequest('POST', '/api/inference/v1/images/edits', form)).toBeNull();
    expect(checkRequest('POST', '/api/inference/v1/images/generations', json)).toBeNull();
    expect(checkRequest('POST', '/api/inference/v1/images/generations', form)?.status).toBe(415);
  });
});

describe('/api/files never serves private files', () => {
  const root = mkdtempSync(path.join(os.tmpdir(), 'aitk-private-'));
  const job = path.join(root, 'inference_engine_gpu0');
  mkdirSync(path.join(job, 'outputs', '.thumbs'), { recursive: true });
  mkdirSync(path.join(job, '.tmp'), { recursive: true });
  const outside = mkdtempSync(path.join(os.tmpdir(), 'aitk-outside-'));
  writeFileSync(path.join(outside, 'secret.png'), 'x');
  // The engine writes engine.json as a temp file first (`.engine.json.<random>.tmp`; before, `engine.json.tmp`)
  const BEING_WRITTEN = ['engine.json.tmp', '.engine.json.k3Jx9q.tmp', 'Engine.Json.TMP', 'engine.json.bak', 'outputs/a.png.tmp'];
  for (const f of ['engine.json', 'pid.txt', '.job_config.json', 'config.yaml', 'log.txt', 'outputs/a.png',
    'outputs/a.json', 'outputs/.thumbs/a.png.jpg', '.tmp/b.png', ...BEING_WRITTEN]) writeFileSync(path.join(job, f), 'x');
  symlinkSync(path.join(job, 'engine.json'), path.join(job, 'outputs', 'token.png')); // a media name for a secret
  symlinkSync(path.join(outside, 'secret.png'), path.join(job, 'outputs', 'escape.png')); // a link out of the root

  const serves = (rel: string) => resolveServable([path.join(job, rel)], [root]) !== null;

  it('serves results and logs', () => {
    expect(serves('outputs/a.png')).toBe(true);
    expect(serves('log.txt')).toBe(true);
    expect(resolveServable(['inference_engine_gpu0/outputs/a.png'], [root])).toBe(path.join(job, 'outputs', 'a.png'));
  });

  it('refuses engine.json, pid files, configs, sidecars and anything under a dot-name', () => {
    for (const rel of ['engine.json', 'pid.txt', '.job_config.json', 'config.yaml', 'outputs/a.json',
      'outputs/.thumbs/a.png.jpg', '.tmp/b.png', 'missing.png']) {
      expect(serves(rel), rel).toBe(false);
    }
    expect(isPrivate(path.join(job, 'ENGINE.JSON'), root)).toBe(true);
  });

  it("refuses engine.json's temp files and copies, and any file being written (*.tmp)", () => {
    for (const rel of BEING_WRITTEN) expect(serves(rel), rel).toBe(false);
  });

  it('answers 404 for them through the real /api/files route, and serves a result', async () => {
    process.env.AITK_TRAINING_FOLDER = root;
    try {
      const get = async (rel: string) => {
        const file = path.join(job, rel);
        const req = new NextRequest(`http://127.0.0.1:8675/api/files/${encodeURIComponent(file)}`);
        return (await serveRoute(req, { params: Promise.resolve({ filePath: [file] }) })).status;
      };
      expect(await get('outputs/a.png')).toBe(200);
      for (const rel of ['engine.json', ...BEING_WRITTEN]) expect(await get(rel), rel).toBe(404);
    } finally {
      delete process.env.AITK_TRAINING_FOLDER;
    }
  });

  it('follows links before deciding', () => {
    expect(serves('outputs/token.png')).toBe(false);
    expect(serves('outputs/escape.png')).toBe(false);
    expect(resolveServable([path.join(outside, 'secret.png')], [root])).toBeNull();
  });
});

describe('settings', () => {
  const mine = mkdtempSync(path.join(os.tmpdir(), 'aitk-settings-'));

  it('accepts a folder of the user, refuses the root, system folders, files and missing paths', () => {
    expect(folderProblem('TRAINING_FOLDER', mine)).toBeNull();
    for (const bad of ['/', '/etc', '/usr/lib', '/var/log', '/proc', '/root', '/tmp']) {
      expect(folderProblem('TRAINING_FOLDER', bad), bad).toMatch(/system folder/);
    }
    expect(folderProblem('TRAINING_FOLDER', 'relative/path')).toMatch(/absolute/);
    expect(folderProblem('TRAINING_FOLDER', path.join(mine, 'nope'))).toMatch(/does not exist/);
    writeFileSync(path.join(mine, 'file'), 'x');
    expect(folderProblem('TRAINING_FOLDER', path.join(mine, 'file'))).toMatch(/not a folder/);
    symlinkSync('/etc', path.join(mine, 'etc-link'));
    expect(folderProblem('TRAINING_FOLDER', path.join(mine, 'etc-link'))).toMatch(/system folder/); // links resolved
  });

  it('stores nothing it refused, keeps the token unless told to clear it', () => {
    const refused = settingsUpdate({ TRAINING_FOLDER: '/', HF_TOKEN: 'hf_x' });
    expect(Object.keys(refused.errors)).toEqual(['TRAINING_FOLDER']);
    const ok = settingsUpdate({ TRAINING_FOLDER: mine, HF_TOKEN: '', DATASETS_FOLDER: '' });
    expect(ok.set).toEqual({ TRAINING_FOLDER: mine });
    expect(ok.clear).toEqual(['DATASETS_FOLDER']); // an empty folder setting means "use the default"
    expect(settingsUpdate({ HF_TOKEN: ' hf_new ' }).set).toEqual({ HF_TOKEN: 'hf_new' });
    expect(settingsUpdate({ HF_TOKEN_CLEAR: true }).clear).toEqual(['HF_TOKEN']);
  });
});

describe('log reads', () => {
  it('reads at most MAX_TAIL_BYTES from an offset and says where to go on', () => {
    const dir = mkdtempSync(path.join(os.tmpdir(), 'aitk-log-'));
    const file = path.join(dir, 'log.txt');
    writeFileSync(file, 'a'.repeat(MAX_TAIL_BYTES + 100));
    const first = readLogTail(file, 0);
    expect(first.log.length).toBe(MAX_TAIL_BYTES);
    expect(first.offset).toBe(MAX_TAIL_BYTES);
    const rest = readLogTail(file, first.offset);
    expect(rest.log.length).toBe(100);
    expect(rest.offset).toBe(MAX_TAIL_BYTES + 100);
  });
});

describe('system folders', () => {
  it('are recognised after links are resolved, whatever was stored', async () => {
    const { isSystemFolder } = await import('@/server/settingsPolicy');
    for (const f of ['/', '/etc', '/etc/ssl', '/usr', '/var/lib', '/home', '/root']) expect(isSystemFolder(f), f).toBe(true);
    for (const f of ['/home/me/output', '/root/ai-toolkit/output', '/data/output', '/tmp/x']) expect(isSystemFolder(f), f).toBe(false);
  });
});
