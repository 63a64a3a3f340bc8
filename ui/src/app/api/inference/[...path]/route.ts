/**
 * Reverse proxy to the running inference engine: `/api/inference/<path>` -> `http://127.0.0.1:<port>/<path>`.
 *
 * - picks the engine (`?job=<id or name>` when several run; the parameter is not forwarded);
 * - runs requestGuard and checks AI_TOOLKIT_AUTH itself: this route is outside proxy.ts's matcher, because proxy.ts clones and
 *   caps request bodies (10 MB by default) and `/assets` uploads must stream through untouched;
 * - injects the engine's bearer token (the browser never sees it);
 * - streams both ways: `req.body` goes up with `duplex: 'half'`, `upstream.body` comes back as is, so each
 *   frame of `/generate` reaches the browser when the engine writes it;
 * - passes `req.signal`: a client that goes away aborts the upstream request and the engine cancels the
 *   generation (even one still queued, before any response byte);
 * - OpenAI's Images API (`/v1/...`): its own refusals in OpenAI's error shape, edits capped as uploads, and
 *   `x-aitk-public-base` / `x-aitk-engine-job` so that `response_format: url` links lead back through here.
 */
import type { NextRequest } from 'next/server';
import { isAuthorized, unauthorized } from '@/server/auth';
import { checkRequest, refuse } from '@/server/requestGuard';
import { findEngine } from '@/server/engines';

export const dynamic = 'force-dynamic';
export const runtime = 'nodejs';

// Hop-by-hop headers, plus: `host`/`content-length` (fetch sets them), the UI's own `authorization`
// (replaced by the engine token) and `expect` (undici throws on it; curl sends it for bodies over 1 MB).
// The engine's own caps (server.py MAX_JSON_BODY; assets.py MAX_UPLOAD_BYTES plus multipart framing).
const MAX_JSON_BYTES = 1024 * 1024;
const MAX_UPLOAD_BYTES = 32 * 1024 * 1024 + 64 * 1024;

const DROP_REQUEST = new Set([
  'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'proxy-authorization',
  'proxy-connection', 'host', 'content-length', 'authorization', 'expect', 'cookie',
]);
// `content-encoding`/`content-length`: fetch has already decoded a compressed body, so both would lie.
const DROP_RESPONSE = new Set([
  'connection', 'keep-alive', 'transfer-encoding', 'te', 'trailer', 'upgrade', 'content-length', 'content-encoding',
]);

const UPLOAD_ROUTES = new Set(['assets', 'v1/images/edits']);

/** OpenAI clients read `{error: {message, type, param, code}}`; the UI's own routes answer `{error: "..."}`. */
function openAIError(status: number, message: string, code: string | null = null): Response {
  const type = status >= 500 ? 'server_error' : 'invalid_request_error';
  return Response.json({ error: { message, type, param: null, code } }, { status });
}

async function forward(req: NextRequest, ctx: { params: Promise<{ path: string[] }> }): Promise<Response> {
  const { path } = await ctx.params;
  const openAI = path[0] === 'v1';
  const refusal = checkRequest(req.method, req.nextUrl.pathname, req.headers);
  if (refusal) return openAI ? openAIError(refusal.status, refusal.error) : refuse(refusal);
  if (!isAuthorized(req.headers.get('authorization'))) {
    return openAI ? openAIError(401, 'Unauthorized: send the UI token (AI_TOOLKIT_AUTH) as the API key', 'invalid_api_key') : unauthorized();
  }
  // Over the engine's own limits by the length alone: answer here without touching the body (Node then
  // discards it). Forwarded, the engine's early 413 aborted the upload mid-way and the client saw a reset.
  const length = Number(req.headers.get('content-length') ?? 0);
  const limit = UPLOAD_ROUTES.has(path.join('/')) ? MAX_UPLOAD_BYTES : MAX_JSON_BYTES;
  if (length > limit) {
    const message = `request body is over ${limit} bytes`;
    return openAI ? openAIError(413, message) : Response.json({ error: message }, { status: 413 });
  }
  const search = new URLSearchParams(req.nextUrl.searchParams);
  const engine = findEngine(search.get('job'));
  search.delete('job');
  if (!engine.ok) return openAI ? openAIError(engine.status, engine.error) : Response.json({ error: engine.error }, { status: engine.status });

  const query = search.toString();
  const url = `http://${engine.info.host}:${engine.info.port}/${path.map(encodeURIComponent).join('/')}${query ? `?${query}` : ''}`;
  const headers = new Headers();
  req.headers.forEach((value, key) => {
    if (!DROP_REQUEST.has(key)) headers.set(key, value);
  });
  headers.set('authorization', `Bearer ${engine.info.token}`);
  // Where result URLs must point (engine routes are reached through this proxy), set here and never taken
  // from the client.
  headers.set('x-aitk-public-base', `${req.nextUrl.protocol}//${req.headers.get('host') ?? req.nextUrl.host}/api/inference`);
  if (engine.job) headers.set('x-aitk-engine-job', engine.job.id);
  else headers.delete('x-aitk-engine-job');
  const hasBody = req.method !== 'GET' && req.method !== 'HEAD';

  let upstream: Response;
  try {
    const init: RequestInit & { duplex: 'half' } = {
      method: req.method,
      headers,
      body: hasBody ? req.body : undefined,
      duplex: 'half',
      redirect: 'manual',
      cache: 'no-store',
      signal: req.signal,
    };
    upstream = await fetch(url, init);
  } catch (e) {
    if (req.signal.aborted) return new Response(null, { status: 499 });
    return Response.json({ error: `engine unreachable: ${(e as Error).message}` }, { status: 502 });
  }
  const out = new Headers();
  upstream.headers.forEach((value, key) => {
    if (!DROP_RESPONSE.has(key)) out.set(key, value);
  });
  out.set('cache-control', 'no-store, no-transform');
  out.set('x-accel-buffering', 'no');
  if (engine.job) out.set('x-aitk-engine-job', engine.job.id);
  return new Response(upstream.body, { status: upstream.status, statusText: upstream.statusText, headers: out });
}

export { forward as GET, forward as POST, forward as PUT, forward as PATCH, forward as DELETE, forward as HEAD };
