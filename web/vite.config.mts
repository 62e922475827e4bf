// The web front end's build: `npm run build` runs `vite build --config web/vite.config.mts`, writing dist/web
// (index.html and content-hashed files under assets/), which the gateway serves (lib/web/public-page.ts) at
// /public/<hash> and /web/assets/. JSX is Preact's automatic runtime, set here for oxc (no preset plugin).
import { defineConfig } from "vite";
import { fileURLToPath } from "node:url";

const here = fileURLToPath(new URL(".", import.meta.url));

export default defineConfig({
	root: here,
	base: "/web/",
	publicDir: false,
	logLevel: "warn",
	oxc: { jsx: { runtime: "automatic", importSource: "preact" } },
	build: {
		outDir: fileURLToPath(new URL("../dist/web", import.meta.url)),
		emptyOutDir: true,
		assetsDir: "assets",
		// Every file is a separate, hashed asset: the page's Content-Security-Policy allows no inline script or style.
		assetsInlineLimit: 0,
		modulePreload: { polyfill: false },
		target: "es2020",
		sourcemap: false,
	},
});
