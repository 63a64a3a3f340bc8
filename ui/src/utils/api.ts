'use client';
/**
 * Browser-side API access. With AI_TOOLKIT_AUTH set on the server, every /api call carries
 * `Authorization: Bearer <token>`; the token lives in localStorage under AI Toolkit's key, and a 401 clears
 * it and asks again (AuthGate).
 */

export const TOKEN_KEY = 'AI_TOOLKIT_AUTH';
export const AUTH_EVENT = 'aitk-auth-required';

export function getToken(): string {
  try {
    return localStorage.getItem(TOKEN_KEY) ?? '';
  } catch {
    return '';
  }
}

export function setToken(token: string) {
  localStorage.setItem(TOKEN_KEY, token);
}

export class ApiError extends Error {
  constructor(
    readonly status: number,
    message: string,
    readonly body?: unknown,
  ) {
    super(message);
  }
}

export async function apiFetch(url: string, init: RequestInit = {}): Promise<Response> {
  const headers = new Headers(init.headers);
  const token = getToken();
  if (token) headers.set('authorization', `Bearer ${token}`);
  const res = await fetch(url, { ...init, headers, cache: 'no-store' });
  if (res.status === 401) window.dispatchEvent(new Event(AUTH_EVENT));
  return res;
}

/** Fetch JSON; non-2xx becomes an ApiError carrying the server's `error`/`detail` message. */
export async function apiJson<T>(url: string, init: RequestInit = {}): Promise<T> {
  const res = await apiFetch(url, init);
  const text = await res.text();
  let body: unknown = null;
  try {
    body = text ? JSON.parse(text) : null;
  } catch {
    body = text;
  }
  if (!res.ok) throw new ApiError(res.status, errorMessage(body) || `HTTP ${res.status}`, body);
  return body as T;
}

/** FastAPI's `detail` (string or list of {loc, msg}) or our `{error}` as one readable line. */
export function errorMessage(body: unknown): string {
  if (!body || typeof body !== 'object') return typeof body === 'string' ? body : '';
  const b = body as { error?: unknown; detail?: unknown };
  if (typeof b.error === 'string') return b.error;
  if (typeof b.detail === 'string') return b.detail;
  if (Array.isArray(b.detail))
    return b.detail
      .map((d: { loc?: unknown[]; msg?: string }) => `${(d.loc ?? []).filter((x) => x !== 'body').join('.')}: ${d.msg}`)
      .join('; ');
  return '';
}

/** A failed response's message as one line: its JSON's (errorMessage), else its text, else the status. */
export async function responseError(res: Response): Promise<string> {
  const text = await res.text();
  try {
    return errorMessage(JSON.parse(text)) || `HTTP ${res.status}`;
  } catch {
    return text || `HTTP ${res.status}`;
  }
}

export const postJson = (body: unknown): RequestInit => ({
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify(body),
});

/** A POST without a body: how the job and queue actions (start, stop, …) are sent; they answer no GET. */
export const POST: RequestInit = { method: 'POST' };
