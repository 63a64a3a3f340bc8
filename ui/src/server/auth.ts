/**
 * AI Toolkit's API auth: when AI_TOOLKIT_AUTH is set, every /api/* request except /api/files and /api/img
 * (loaded by <img>/<video>, which cannot send headers) needs `Authorization: Bearer <AI_TOOLKIT_AUTH>`.
 * Unset or empty: everything is open (the UI binds to 127.0.0.1 by default).
 */
import { timingSafeEqual } from 'node:crypto';

export const PUBLIC_API_PREFIXES = ['/api/files/', '/api/img/'];

export function authToken(): string {
  return process.env.AI_TOOLKIT_AUTH?.trim() ?? '';
}

export function isAuthorized(authorization: string | null): boolean {
  const token = authToken();
  if (!token) return true;
  const given = (authorization ?? '').trim().split(/\s+/);
  if (given.length !== 2 || given[0].toLowerCase() !== 'bearer') return false;
  const a = Buffer.from(given[1]);
  const b = Buffer.from(token);
  return a.length === b.length && timingSafeEqual(a, b);
}

export function unauthorized(): Response {
  return Response.json({ error: 'Unauthorized' }, { status: 401 });
}
