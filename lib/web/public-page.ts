// The web front end's side of the gateway: `GET /public/<hash>` (a public link's page) and `GET /web/assets/…`
// (the built application's files, from `dist/web`, made by `npm run build`). The page is the built index.html
// with what the share service says about the link (`share.publicLink`) injected as JSON in a script tag, so the
// browser knows, before any call, whether to ask a password, list a folder or offer an upload. A link that cannot
// be used (unknown, expired, not started, exhausted) is still a page, with a 4xx status and the reason written in
// the HTML itself (readable without JavaScript). Nothing here is fetched from elsewhere: the page works offline.
import { readFile, stat } from "node:fs/promises";
import { existsSync } from "node:fs";
import { dirname, join } from "node:path";
import type { IncomingMessage, ServerResponse } from "node:http";
import { lookup as mimeLookup } from "mime-types";
import type { PublicLinkInfo, PublicLinkStatus } from "../contracts/share";
import { REFUSALS } from "./texts";
import { escapeHtml } from "../strings";

export interface PublicPagesDeps {
	/** What the share service says about a link (never throws for an unknown hash). */
	publicLink(hash: string): Promise<PublicLinkInfo>;
	/** The folder holding the built front end (index.html, assets/). */
	root?: string;
	log?: (line: string) => void;
}

/** Hashes are hex (generated) or custom ones, letters, digits, `-` and `_`: anything else is unknown, unasked. */
const HASH = /^[A-Za-z0-9_-]{1,128}$/;
const ASSET = /^[A-Za-z0-9][A-Za-z0-9._-]{0,200}$/;
const MARKER = "<!--cellar:boot-->";

/** The status a refused link is served with. */
export const REFUSAL_STATUS: Record<Exclude<PublicLinkStatus, "ok">, number> = {
	unknown: 404,
	"not-started": 403,
	expired: 410,
	exhausted: 410,
};

/** The folder `npm run build` writes the front end to: `<project>/dist/web`, from the sources or from dist/. */
export function defaultWebRoot(from = __dirname): string {
	let dir = from;
	for (;;) {
		if (existsSync(join(dir, "package.json"))) return join(dir, "dist", "web");
		const up = dirname(dir);
		if (up === dir) return join(from, "web");
		dir = up;
	}
}

/** JSON that can sit inside a `<script>` element: no `</script>`, no `<!--`, no line separators JS would choke on. */
export function scriptJson(value: unknown): string {
	return JSON.stringify(value)
		.replace(/</g, "\\u003c")
		.replace(/>/g, "\\u003e")
		.replace(/&/g, "\\u0026")
		.replace(/\u2028/g, "\\u2028")
		.replace(/\u2029/g, "\\u2029");
}

/** Only what the scripts of the page itself and its own files may do; no framing by other sites. */
const CSP = "default-src 'self'; img-src 'self' blob: data:; media-src 'self' blob:; style-src 'self'; script-src 'self'; connect-src 'self'; object-src 'none'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/**
 * Renders the page of a link: `index` is the built index.html (with its `<!--cellar:boot-->` marker), `info`
 * what the share service answered. Returns the status and the HTML.
 */
export function renderPublicPage(index: string, info: PublicLinkInfo): { status: number; html: string } {
	const status = info.Status === "ok" ? 200 : REFUSAL_STATUS[info.Status] ?? 404;
	const title = info.Status === "ok" ? info.Label || "Shared with you" : REFUSALS[info.Status]?.title ?? "Link unavailable";
	const boot = `<script id="cellar-boot" type="application/json">${scriptJson(info)}</script>`;
	// The refusal is in the HTML: the app replaces it, a browser without JavaScript still reads it.
	const fallback =
		info.Status === "ok"
			? `<p class="loading">Loading…</p>`
			: `<section class="refusal" data-status="${info.Status}"><h1>${escapeHtml(title)}</h1><p>${escapeHtml(REFUSALS[info.Status]?.detail ?? "")}</p></section>`;
	let html = index.replace(/<title>[^<]*<\/title>/, `<title>${escapeHtml(title)} · Cellar</title>`);
	html = html.replace(/<div id="app">\s*<\/div>/, `<div id="app">${fallback}</div>`);
	html = html.includes(MARKER) ? html.replace(MARKER, boot) : html.replace("</head>", `${boot}</head>`);
	return { status, html };
}

export class PublicPages {
	private readonly root: string;
	private index?: { html: string; mtimeMs: number };

	constructor(private readonly deps: PublicPagesDeps) {
		this.root = deps.root ?? defaultWebRoot();
	}

	/** Whether a request path is the front end's (the gateway asks before routing to /a or /io). */
	static handles(url: string): boolean {
		return url.startsWith("/public/") || url === "/public" || url.startsWith("/web/");
	}

	async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
		req.resume();
		try {
			const method = req.method ?? "GET";
			if (method !== "GET" && method !== "HEAD") {
				res.setHeader("Allow", "GET, HEAD");
				return this.send(res, method, 405, "text/plain; charset=utf-8", `${method} is not allowed here: pages and their files are read with GET`);
			}
			const path = (req.url ?? "/").split("?")[0];
			if (path.startsWith("/web/assets/")) return await this.asset(res, method, path.slice("/web/assets/".length));
			if (path.startsWith("/public/") || path === "/public") return await this.page(res, method, path.slice("/public/".length).replace(/\/+$/, ""));
			return this.send(res, method, 404, "text/plain; charset=utf-8", "Not found");
		} catch (err) {
			this.deps.log?.(`web ${req.method} ${req.url}: ${(err as Error).message}`);
			if (res.headersSent) return void res.end();
			return this.send(res, req.method ?? "GET", 503, "text/html; charset=utf-8", this.plainPage("This page cannot be shown right now", "Cellar could not read this link: try again in a moment."));
		}
	}

	private async page(res: ServerResponse, method: string, rawHash: string): Promise<void> {
		let hash = "";
		try {
			hash = decodeURIComponent(rawHash);
		} catch {
			hash = "";
		}
		const info: PublicLinkInfo = HASH.test(hash) ? await this.deps.publicLink(hash) : { Status: "unknown", Hash: "" };
		const index = await this.indexHtml();
		if (index === undefined) {
			return this.send(res, method, 503, "text/html; charset=utf-8", this.plainPage("The web front end is not built", "This server has no built web front end: run `npm run build` (npm start does it) and reload."));
		}
		const { status, html } = renderPublicPage(index, info);
		res.setHeader("Content-Security-Policy", CSP);
		res.setHeader("X-Content-Type-Options", "nosniff");
		res.setHeader("Referrer-Policy", "no-referrer");
		// The page carries the link's state (downloads left, expiry): never kept by a browser or a proxy.
		res.setHeader("Cache-Control", "no-store");
		this.send(res, method, status, "text/html; charset=utf-8", html);
	}

	private async asset(res: ServerResponse, method: string, name: string): Promise<void> {
		if (!ASSET.test(name)) return this.send(res, method, 404, "text/plain; charset=utf-8", "Not found");
		const file = join(this.root, "assets", name);
		let body: Buffer;
		try {
			body = await readFile(file);
		} catch {
			return this.send(res, method, 404, "text/plain; charset=utf-8", "Not found");
		}
		const type = mimeLookup(name) || "application/octet-stream";
		res.setHeader("X-Content-Type-Options", "nosniff");
		// Vite names every built file after its content hash: a name never changes meaning.
		res.setHeader("Cache-Control", "public, max-age=31536000, immutable");
		this.send(res, method, 200, /^(text\/|application\/(javascript|json))/.test(type) ? `${type}; charset=utf-8` : type, body);
	}

	/** The built index.html, read again only when the file changed (a rebuild under a running node). */
	private async indexHtml(): Promise<string | undefined> {
		const file = join(this.root, "index.html");
		let mtimeMs: number;
		try {
			mtimeMs = (await stat(file)).mtimeMs;
		} catch {
			return undefined;
		}
		if (this.index?.mtimeMs !== mtimeMs) this.index = { html: await readFile(file, "utf8"), mtimeMs };
		return this.index.html;
	}

	private plainPage(title: string, detail: string): string {
		return `<!doctype html><html lang="en"><head><meta charset="utf-8"><meta name="viewport" content="width=device-width, initial-scale=1"><title>${escapeHtml(title)} · Cellar</title></head><body><h1>${escapeHtml(title)}</h1><p>${escapeHtml(detail)}</p></body></html>`;
	}

	private send(res: ServerResponse, method: string, status: number, type: string, body: string | Buffer): void {
		const bytes = typeof body === "string" ? Buffer.from(body) : body;
		res.statusCode = status;
		res.setHeader("Content-Type", type);
		res.setHeader("Content-Length", String(bytes.length));
		if (!res.hasHeader("Cache-Control")) res.setHeader("Cache-Control", "no-store");
		res.end(method === "HEAD" ? undefined : bytes);
	}
}
