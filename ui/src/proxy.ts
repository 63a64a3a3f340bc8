/**
 * Next 16's proxy (formerly middleware), on every /api/* route but /api/inference:
 *  1. requestGuard: the Host allowlist, same-origin state changes, declared content types;
 *  2. AI_TOOLKIT_AUTH bearer auth, except /api/files and /api/img (public, as in AI Toolkit: <img>/<video>
 *     cannot send headers; what they serve is limited in server/files.ts).
 * /api/inference runs both checks in its route handler, so request bodies stream to the engine without the
 * proxy's clone-and-cap (see next.config.ts).
 */
import { NextResponse, type NextRequest } from 'next/server';
import { PUBLIC_API_PREFIXES, isAuthorized, unauthorized } from '@/server/auth';
import { checkRequest, refuse } from '@/server/requestGuard';

export function proxy(req: NextRequest) {
  const refusal = checkRequest(req.method, req.nextUrl.pathname, req.headers);
  if (refusal) return refuse(refusal);
  if (PUBLIC_API_PREFIXES.some((p) => req.nextUrl.pathname.startsWith(p))) return NextResponse.next();
  if (isAuthorized(req.headers.get('authorization'))) return NextResponse.next();
  return unauthorized();
}

export const config = {
  matcher: ['/api/((?!inference/).*)'],
};
