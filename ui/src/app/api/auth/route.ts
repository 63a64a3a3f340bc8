/** Reachable only with a valid token (proxy.ts checks it): lets the page test a token the user typed. */
export const dynamic = 'force-dynamic';

export async function GET() {
  return Response.json({ isAuthenticated: true });
}
