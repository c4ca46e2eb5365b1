// A tiny React app that embeds the preview through the wrapper, as a
// customer's front end would (bundled by test/pages.mjs reactBundle).
import { createElement, StrictMode, useState } from "react";
import { createRoot } from "react-dom/client";
import { SandmanPreview } from "@sandmanhq/web/react";

function App() {
  const [state, setState] = useState("none");
  const tokenUrl = new URLSearchParams(location.search).get("token-url");
  return createElement(
    "main",
    null,
    createElement("h1", { style: { position: "absolute", left: "-9999px" } }, "Your preview"),
    createElement("p", { id: "react-state" }, "Preview: " + state),
    createElement(SandmanPreview, {
      tokenUrl,
      label: "The app",
      onStateChange: (s) => {
        (window.reactStates ??= []).push(s);
        setState(s);
      },
    }),
  );
}

createRoot(document.getElementById("root")).render(createElement(StrictMode, null, createElement(App)));
