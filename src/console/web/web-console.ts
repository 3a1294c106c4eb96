import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import path from "node:path";
import type { HttpRoute } from "../../gateway/node-http.js";
import { projectRoot } from "../../shared/project-root.js";

const require = createRequire(import.meta.url);

/** Files of the web console, read once at start-up: path → file and content type. */
const own = (name: string) => path.join(projectRoot, "src", "console", "web", name);
const files: [path: string, file: string, type: string][] = [
  ["/", own("index.html"), "text/html; charset=utf-8"],
  ["/console.js", own("console.js"), "text/javascript; charset=utf-8"],
  ["/opt-outs.js", own("opt-outs.js"), "text/javascript; charset=utf-8"],
  ["/sender.js", own("sender.js"), "text/javascript; charset=utf-8"],
  ["/console.css", own("console.css"), "text/css; charset=utf-8"],
  ["/favicon.svg", own("favicon.svg"), "image/svg+xml"],
  // Browsers ask for /favicon.ico whatever the page links; an SVG answers it too.
  ["/favicon.ico", own("favicon.svg"), "image/svg+xml"],
  // uPlot (the refusals chart), served from its npm package as published: no build step.
  ["/vendor/uPlot.esm.js", require.resolve("uplot/dist/uPlot.esm.js"), "text/javascript; charset=utf-8"],
  ["/vendor/uPlot.min.css", require.resolve("uplot/dist/uPlot.min.css"), "text/css; charset=utf-8"],
];

/** Security headers of every web console file: no framing, no inline script, no referrer. */
const SECURITY_HEADERS = {
  "content-security-policy": "default-src 'self'; img-src 'self' data:; frame-ancestors 'none'; base-uri 'none'; form-action 'self'",
  "x-content-type-options": "nosniff",
  "referrer-policy": "no-referrer",
  "cache-control": "no-cache",
};

/**
 * The web console's routes on the console port: GET / (the page),
 * /console.js (and the Opt-outs page's /opt-outs.js, a sender's page's /sender.js), /console.css, the favicon and uPlot's two files under
 * /vendor/. The page talks to the console REST API (/console/v1) with a
 * session token from sign-in (or the console token), kept in the tab's
 * sessionStorage and sent as a bearer header, so no cookie (and no CSRF)
 * is involved.
 */
export function webConsoleRoutes(): HttpRoute[] {
  return files.map(([path, file, type]) => {
    const body = readFileSync(file);
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
