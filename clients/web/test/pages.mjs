// The host pages the component's browser tests embed <sandman-preview> in,
// served by Playwright's routing from the origin under test (the scripted
// channel's, or the local stack's): a plain HTML page and a React page.
import { readFileSync } from "node:fs";
import { build } from "esbuild";

const dist = new URL("../dist/", import.meta.url);

/** The built element module (dist/index.js, sandman.js bundled in). */
export const elementModule = () => readFileSync(new URL("index.js", dist), "utf8");

/** The host page's style: the element fills the viewport below a header. */
const style = `
body { margin: 0; font: 16px/1.5 system-ui, sans-serif; background: #fff; color: #111; }
header { padding: .75rem 1rem; border-bottom: 1px solid #ddd; font-weight: 600; }
main { padding: 1rem; }
sandman-preview { height: calc(100vh - 5.5rem); min-height: 24rem; }
@media (prefers-color-scheme: dark) { body { background: #000; color: #eee; } header { border-color: #333; } }
.acme { --sandman-accent: light-dark(#0f766e, #5eead4); --sandman-accent-text: light-dark(#ffffff, #042f2e); --sandman-radius: 6px; --sandman-font: Georgia, serif; }`;

/**
 * plainPage is an HTML page with one <sandman-preview> whose attributes are
 * attrs (escaped), importing the element from src; class "acme" themes it.
 */
export function plainPage(src, attrs, className = "") {
  const a = Object.entries(attrs)
    .map(([k, v]) => ` ${k}="${String(v).replaceAll("&", "&amp;").replaceAll('"', "&quot;")}"`)
    .join("");
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark">
<title>My app</title><style>${style}</style><script type="module" src="${src}"></script></head>
<body><header>My app</header><main><h1 style="position:absolute;left:-9999px">Your preview</h1>
<sandman-preview${a}${className ? ` class="${className}"` : ""}></sandman-preview></main></body></html>`;
}

/** reactPage is an HTML page that mounts the React app of reactBundle(). */
export function reactPage(src) {
  return `<!doctype html><html lang="en"><head><meta charset="utf-8">
<meta name="viewport" content="width=device-width,initial-scale=1"><meta name="color-scheme" content="light dark">
<title>My React app</title><style>${style}</style></head>
<body><div id="root"></div><script type="module" src="${src}"></script></body></html>`;
}

/**
 * reactBundle bundles test/react-app.mjs (React, react-dom and
 * dist/react.js, the wrapper, with the element) into one module, and
 * returns its text. The app renders <SandmanPreview tokenUrl=…> with the
 * token URL given as ?token-url= of its page, and records every state it
 * is told of in window.reactStates.
 */
export async function reactBundle() {
  const out = await build({
    entryPoints: [new URL("react-app.mjs", import.meta.url).pathname],
    bundle: true,
    format: "esm",
    write: false,
    logLevel: "warning",
    define: { "process.env.NODE_ENV": '"production"' },
    alias: { "@sandmanhq/web/react": new URL("react.js", dist).pathname },
  });
  return out.outputFiles[0].text;
}
