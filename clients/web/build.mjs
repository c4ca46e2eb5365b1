// Builds dist/: the element (index.js, with sandman.js bundled in), the
// React wrapper (react.js, which imports react and ./index.js at run
// time), the bare client module (sandman.js), and every .d.ts (tsc).
// sandman.js is the one in internal/webclient/static, which the API also
// serves at /v1/sandman.js: it is copied into src/ (git-ignored) first.
import { copyFileSync, rmSync } from "node:fs";
import { execFileSync } from "node:child_process";
import { build } from "esbuild";

const here = new URL(".", import.meta.url).pathname;
copyFileSync(new URL("../../internal/webclient/static/sandman.js", import.meta.url), new URL("src/sandman.js", import.meta.url));
rmSync(new URL("dist", import.meta.url), { recursive: true, force: true });

const common = { bundle: true, format: "esm", platform: "browser", target: "es2022", logLevel: "warning", absWorkingDir: here };
await build({ ...common, entryPoints: ["src/index.ts"], outfile: "dist/index.js" });
await build({ ...common, entryPoints: ["src/react.ts"], outfile: "dist/react.js", external: ["react", "./index.js"] });
await build({ ...common, entryPoints: ["src/sandman.js"], outfile: "dist/sandman.js" });
execFileSync(process.execPath, [new URL("node_modules/typescript/bin/tsc", import.meta.url).pathname, "-p", "tsconfig.json"], {
  cwd: here,
  stdio: "inherit",
});
