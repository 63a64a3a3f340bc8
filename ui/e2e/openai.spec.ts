/**
 * OpenAI's Images API through the UI's proxy (`/api/inference/v1/...`) on the real stack: an engine job with an
 * `engine.models` alias, started the way the UI starts jobs; its Server-Sent Events reach the client as the
 * engine writes them; and the official `openai` Python SDK, pointed at the proxy with the UI token as its API
 * key, passes the same checks it passes against the engine directly (testing/openai_checks.py).
 */
import { expect, test } from '@playwright/test';
import { spawnSync } from 'node:child_process';
import path from 'node:path';
import { TOKEN, authHeaders, startEngineJob, stopEngineJob } from './helpers';

test.describe.configure({ mode: 'serial' });

const ROOT = path.resolve(__dirname, '..', '..');
const PYTHON = process.env.AITK_PYTHON ?? path.join(ROOT, '.venv', 'bin', 'python');
const NAME = 'openai_engine';
let jobId = '';

function jobConfig() {
  const tiny = { arch: 'sd1', name_or_path: 'tiny:sd1', dtype: 'float32', sample: { width: 64, height: 64, num_inference_steps: 4 } };
  const engine = { warm_up: false, models: { tiny } };
  return { job: 'extension', config: { name: NAME, process: [{ type: 'InferenceEngine', device: 'auto', engine }] } };
}

test.beforeAll(async ({ request }) => {
  jobId = await startEngineJob(request, NAME, jobConfig());
  await expect
    .poll(async () => (await request.get(`/api/inference/health?job=${jobId}`, { headers: authHeaders() })).status(), { timeout: 120_000 })
    .toBe(200);
});

test.afterAll(async ({ request }) => {
  if (jobId) await stopEngineJob(request, jobId, NAME);
});

test('a streamed generation arrives through the proxy event by event, as the engine sends it', async ({ baseURL }) => {
  const body = JSON.stringify({ model: 'tiny', prompt: 'a red circle', stream: true, partial_images: 3, num_inference_steps: 60 });
  const url = `${baseURL}/api/inference/v1/images/generations?job=${jobId}`;
  const json = { 'content-type': 'application/json' };
  const refused = await fetch(url, { method: 'POST', headers: json, body });
  expect(refused.status).toBe(401);
  expect((await refused.json()).error).toMatchObject({ code: 'invalid_api_key', type: 'invalid_request_error' });

  const t0 = performance.now();
  const res = await fetch(url, { method: 'POST', headers: { ...json, ...authHeaders() }, body });
  expect(res.status).toBe(200);
  expect(res.headers.get('content-type')).toMatch(/^text\/event-stream/);
  expect(res.headers.get('content-encoding')).toBeNull();
  const reader = res.body!.getReader();
  const decoder = new TextDecoder();
  const events: { event: string; read: number; ms: number; data: Record<string, unknown> }[] = [];
  let buffer = '';
  for (let read = 0; ; read++) {
    const { value, done } = await reader.read();
    if (done) break;
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf('\n\n')) >= 0) {
      const block = buffer.slice(0, end);
      buffer = buffer.slice(end + 2);
      const event = /^event: (.*)$/m.exec(block)?.[1];
      const data = /^data: (.*)$/m.exec(block)?.[1];
      if (event && data) events.push({ event, read, ms: performance.now() - t0, data: JSON.parse(data) });
    }
  }
  console.log(events.map((e) => `${e.event} at ${e.ms.toFixed(0)} ms (read ${e.read})`).join(', '));
  expect(events.map((e) => e.event)).toEqual([
    'image_generation.partial_image', 'image_generation.partial_image', 'image_generation.partial_image', 'image_generation.completed',
  ]);
  expect(events.map((e) => e.data.partial_image_index ?? null)).toEqual([0, 1, 2, null]);
  // each event in its own read, spread over the run: nothing held back until the end
  expect(new Set(events.map((e) => e.read)).size).toBe(4);
  expect(events[3].ms - events[0].ms).toBeGreaterThan(100);
});

test('the official openai SDK passes the same checks through the proxy as against the engine', async ({ baseURL }) => {
  const run = spawnSync(
    PYTHON,
    [
      'testing/openai_checks.py', '--base-url', `${baseURL}/api/inference/v1`, '--api-key', TOKEN,
      '--model', 'tiny', '--edit-model', 'flux_kontext:tiny:flux_kontext', '--job', jobId,
    ],
    { cwd: ROOT, encoding: 'utf8', timeout: 240_000, env: { ...process.env, HF_HUB_OFFLINE: '1' } },
  );
  if (run.status !== 0) console.log(run.stdout, run.stderr);
  expect(run.status).toBe(0);
  const report = JSON.parse(run.stdout.trim().split('\n').at(-1)!);
  expect(Object.keys(report)).toEqual([
    'generate_n2_b64_json', 'url', 'output_format_png', 'output_format_jpeg', 'output_format_webp', 'edit',
    'stream_partial_images_2', 'unknown_model', 'bad_size', 'refused_video_arch',
  ]);
});

test('result URLs lead back through the proxy to the engine job that made them', async ({ request }) => {
  const res = await request.post(`/api/inference/v1/images/generations?job=${jobId}`, {
    headers: authHeaders(),
    data: { model: 'tiny', prompt: 'a blue square', response_format: 'url' },
  });
  expect(res.status()).toBe(200);
  const url = new URL((await res.json()).data[0].url);
  expect(url.pathname).toMatch(/^\/api\/inference\/outputs\/[0-9a-f]{32}\.png$/);
  expect(url.searchParams.get('job')).toBe(jobId);
  const image = await request.get(url.toString(), { headers: authHeaders() });
  expect(image.status()).toBe(200);
  expect(image.headers()['content-type']).toBe('image/png');
  expect((await request.get(url.toString())).status()).toBe(401);
});
