/**
 * Next 16's proxy (formerly middleware): AI_TOOLKIT_AUTH bearer auth on /api/*.
 * Not matched: /api/files and /api/img (public, as in AI Toolkit: <img>/<video> cannot send headers) and
 * /api/inference, which checks the token in its route handler so request bodies stream to the engine
 * without the proxy's clone-and-cap (see next.config.ts).
 */
import { NextResponse, type NextRequest } from 'next/server';
import { isAuthorized, unauthorized } from '@/server/auth';

export function proxy(req: NextRequest) {
  if (isAuthorized(req.headers.get('authorization'))) return NextResponse.next();
  return unauthorized();
}

export const config = {
  matcher: ['/api/((?!files/|img/|inference/).*)'],
};
