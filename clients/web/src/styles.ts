// The shadow DOM's style of <sandman-preview>. Every colour, the radius and
// the font come from a CSS custom property the host page may set on the
// element (or any ancestor); each default has a light and a dark value
// (light-dark(), by the page's color-scheme and prefers-color-scheme, or
// the element's theme attribute) whose pairs read at 4.5:1 or more.
export const css = `
:host {
  --_accent: var(--sandman-accent, light-dark(#4f46e5, #7b74ec));
  --_on-accent: var(--sandman-accent-text, light-dark(#ffffff, #000000));
  --_bg: var(--sandman-background, light-dark(#f4f5f7, #0e1014));
  --_surface: var(--sandman-surface, light-dark(#ffffff, #171a20));
  --_text: var(--sandman-text, light-dark(#15181e, #eef0f3));
  --_muted: var(--sandman-muted, light-dark(#4a5160, #a8afbb));
  --_border: var(--sandman-border, light-dark(#d5d9e0, #2c313a));
  --_danger: var(--sandman-danger, light-dark(#b42318, #fda29b));
  --_radius: var(--sandman-radius, 12px);
  color-scheme: light dark;
  display: block;
  position: relative;
  min-height: 22rem;
  overflow: hidden;
  border-radius: var(--_radius);
  background: var(--_bg);
  color: var(--_text);
  font: 16px/1.5 var(--sandman-font, system-ui, -apple-system, "Segoe UI", Roboto, "Helvetica Neue", Arial, sans-serif);
}
:host([theme="light"]) { color-scheme: light; }
:host([theme="dark"]) { color-scheme: dark; }
:host([hidden]) { display: none; }
*, *::before, *::after { box-sizing: border-box; }
.frame { position: absolute; inset: 0; display: grid; place-items: center; padding: 1rem; overflow: auto; }
iframe { position: absolute; inset: 0; width: 100%; height: 100%; border: 0; background: #fff; }
iframe[hidden], [hidden] { display: none !important; }
.card {
  width: 100%; max-width: 28rem; padding: 1.75rem; overflow-wrap: anywhere;
  background: var(--_surface); border: 1px solid var(--_border); border-radius: var(--_radius);
  box-shadow: 0 1px 2px rgb(0 0 0 / 4%), 0 12px 32px rgb(0 0 0 / 6%);
}
.card:focus { outline: none; }
.card:focus-visible { outline: 3px solid var(--_accent); outline-offset: 3px; }
@media (max-width: 30rem) { .frame { padding: .75rem; } .card { padding: 1.25rem; } }
.icon {
  width: 44px; height: 44px; margin: 0 0 .875rem; border-radius: 12px; display: grid; place-items: center;
  color: var(--_accent); background: color-mix(in srgb, var(--_accent) 12%, var(--_surface));
}
.icon svg { width: 24px; height: 24px; }
:host([state="failed"]) .icon { color: var(--_danger); background: color-mix(in srgb, var(--_danger) 12%, var(--_surface)); }
.title { margin: 0 0 .375rem; font-size: 1.25rem; font-weight: 650; line-height: 1.3; }
.text { margin: 0; color: var(--_muted); }
.steps { list-style: none; margin: 1.25rem 0 0; padding: 0; display: grid; gap: .75rem; }
.steps li { display: flex; align-items: center; gap: .75rem; color: var(--_muted); }
.steps li.done { color: var(--_text); }
.steps li.current { color: var(--_text); font-weight: 600; }
.mark { flex: none; width: 1.375rem; height: 1.375rem; border-radius: 50%; border: 2px solid var(--_border); display: grid; place-items: center; }
li.done .mark { background: var(--_accent); border-color: var(--_accent); }
li.done .mark::after {
  content: ""; width: .35rem; height: .65rem; margin-top: -2px;
  border: solid var(--_on-accent); border-width: 0 2px 2px 0; transform: rotate(45deg);
}
li.current .mark, .spin { border-color: var(--_border); border-top-color: var(--_accent); border-right-color: var(--_accent); animation: spin .9s linear infinite; }
.spin { width: 24px; height: 24px; border-radius: 50%; border-width: 3px; border-style: solid; }
@keyframes spin { to { transform: rotate(360deg); } }
@media (prefers-reduced-motion: reduce) { li.current .mark, .spin { animation: none; border-color: var(--_accent); } }
.button {
  margin: 1.25rem 0 0; display: inline-flex; align-items: center; justify-content: center; min-height: 44px;
  padding: .625rem 1.25rem; border: 0; border-radius: 10px; cursor: pointer;
  background: var(--_accent); color: var(--_on-accent); font: inherit; font-weight: 600;
}
.button:hover { background: color-mix(in srgb, var(--_accent) 88%, var(--_text)); }
.button:focus-visible { outline: 3px solid var(--_accent); outline-offset: 3px; }
.note { margin: .875rem 0 0; color: var(--_danger); font-weight: 600; }
details { margin: 1rem 0 0; padding: .75rem 0 0; border-top: 1px solid var(--_border); }
summary { cursor: pointer; color: var(--_muted); font-weight: 600; }
summary:focus-visible, pre:focus-visible { outline: 3px solid var(--_accent); outline-offset: 3px; }
pre {
  margin: .5rem 0 0; max-height: 10rem; overflow: auto; padding: .625rem; white-space: pre-wrap; overflow-wrap: anywhere;
  background: var(--_bg); border: 1px solid var(--_border); border-radius: 8px;
  font: 13px/1.45 ui-monospace, SFMono-Regular, Menlo, Consolas, monospace;
}
.banner {
  position: absolute; top: .5rem; left: 50%; transform: translateX(-50%); margin: 0; padding: .25rem .75rem;
  border-radius: 999px; background: var(--_surface); color: var(--_text); border: 1px solid var(--_border);
  font-size: .875rem; font-weight: 600; box-shadow: 0 2px 8px rgb(0 0 0 / 10%);
}
.sr {
  position: absolute; width: 1px; height: 1px; margin: -1px; padding: 0; overflow: hidden;
  clip: rect(0 0 0 0); clip-path: inset(50%); white-space: nowrap; border: 0;
}
`;
