/**
 * Who may talk to the UI's API at all, before auth: the UI runs on the user's machine, usually without
 * AI_TOOLKIT_AUTH, so any web page the user opens could otherwise drive it from the browser.
 *
 * - `Host` must name this machine (localhost, 127.0.0.1, [::1]) or a host the user added to
 *   `AITK_ALLOWED_HOSTS` (comma-separated): a DNS-rebinding page reaches us under its own name and is refused.
 * - A browser request must come from the UI's own pages: `Sec-Fetch-Site`, when sent, is `same-origin` or
 *   `none` (on every method: a GET from another site is refused too, though no GET here changes anything); a
 *   state-changing one's `Origin`, when sent, is this very host. Scripts and curl send neither and pass (they are
 *   no web page acting for the user). Where a browser sends neither header on a GET (an <img> in an older
 *   browser), nothing changes because every state change is a POST (AI Toolkit's start/stop are GETs; ours not).
 * - A state-changing request with a body must say what it is: `application/json`, or `multipart/form-data`
 *   for uploads (`/assets` and OpenAI's `/v1/images/edits`). The content types a cross-site HTML form can send
 *   without a preflight (text/plain, urlencoded) are refused even where the JSON would parse.
 */
export type Refusal = { status: number; error: string };

const LOOPBACK = ['localhost', '127.0.0.1', '[::1]', '::1'];
const SAFE_METHODS = new Set(['GET', 'HEAD', 'OPTIONS']);
const UPLOAD_PATHS = [/^\/api\/inference\/assets\/?$/, /^\/api\/inference\/v1\/images\/edits\/?$/];

export function allowedHosts(): string[] {
  const extra = (process.env.AITK_ALLOWED_HOSTS ?? '').split(',').map((h) => h.trim().toLowerCase()).filter(Boolean);
  return [...LOOPBACK, ...extra];
}

/** `host[:port]` -> host, lower-cased; `[::1]:8675` -> `[::1]`. */
export function hostName(hostHeader: string): string {
  const h = hostHeader.trim().toLowerCase();
  if (h.startsWith('[')) return h.slice(0, h.indexOf(']') + 1);
  return h.split(':')[0];
}

function hasBody(headers: Headers): boolean {
  const length = headers.get('content-length');
  return (length !== null && length !== '0') || headers.has('transfer-encoding');
}

export function checkRequest(method: string, pathname: string, headers: Headers): Refusal | null {
  const host = headers.get('host') ?? '';
  if (!host || !allowedHosts().includes(hostName(host))) {
    return { status: 403, error: `host ${JSON.stringify(host)} is not allowed; add it to AITK_ALLOWED_HOSTS` };
  }
  // Every method: an <img> on another site can send a GET, and what a GET answers is no other site's to read.
  const site = headers.get('sec-fetch-site');
  if (site !== null && site !== 'same-origin' && site !== 'none') {
    return { status: 403, error: `cross-site request refused (Sec-Fetch-Site: ${site})` };
  }
  if (SAFE_METHODS.has(method.toUpperCase())) return null;
  const origin = headers.get('origin');
  if (origin !== null) {
    let originHost = '';
    try {
      originHost = new URL(origin).host.toLowerCase();
    } catch {
      /* "null" and other opaque origins */
    }
    if (originHost !== host.trim().toLowerCase()) {
      return { status: 403, error: `cross-origin request refused (Origin: ${origin})` };
    }
  }
  if (hasBody(headers)) {
    const type = (headers.get('content-type') ?? '').split(';')[0].trim().toLowerCase();
    const wanted = UPLOAD_PATHS.some((p) => p.test(pathname)) ? 'multipart/form-data' : 'application/json';
    if (type !== wanted) return { status: 415, error: `expected Content-Type ${wanted}, got ${type || 'none'}` };
  }
  return null;
}

export function refuse(refusal: Refusal): Response {
  return Response.json({ error: refusal.error }, { status: refusal.status });
}
