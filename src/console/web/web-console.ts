import { readFileSync } from "node:fs";
import type { HttpRoute } from "../../gateway/rpc-server.js";

/** Files of the web console, read once at start-up: path → content type and bytes. */
const files: [string, string, string][] = [
  ["/", "index.html", "text/html; charset=utf-8"],
  ["/console.js", "console.js", "text/javascript; charset=utf-8"],
  ["/console.css", "console.css", "text/css; charset=utf-8"],
];

/** Security headers of every web console file: no framing, no inline script, no referrer. */
const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

/**
 * The web console's routes on the console port: GET / (the page), /console.js
 * and /console.css. The page talks to the console REST API (/console/v1) with
 * a session token from sign-in (or the console token), kept in the tab's
 * sessionStorage and sent as a bearer header, so no cookie (and no CSRF)
 * is involved.
 */
export function webConsoleRoutes(): HttpRoute[] {
  return files.map(([path, file, type]) => {
    const body = readFileSync(new URL(file, import.meta.url));
    return {
      method: "GET",
      path,
      async handler(_req, res) {
        res.writeHead(200, { ...SECURITY_HEADERS, "content-type": type, "content-length": body.length });
        res.end(body);
      },
    };
  });
}
