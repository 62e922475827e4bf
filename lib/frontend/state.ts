// `GET /a/frontend/state`: the legacy XML "registry" a Cells web client loads after boot (behaviour.md 1.8).
// Cellar ships no front-end plugins, so the registry carries the login/logout actions and, for a logged
// caller, the `<user>` node: active workspace, the workspaces it may open with their rights, preferences,
// admin flag.
import type { Identity } from "../auth/identity";
import { BadRequestError } from "../errors";
import { DEFAULT_LANGUAGE, MESSAGES_EN } from "./messages";
import { resolveLanguage } from "./i18n";
import { xmlDocument, type XmlElement } from "./xml";

/** One entry of `workspaces.accessible`. */
export interface AccessibleWorkspace {
	UUID: string;
	Slug: string;
	Label: string;
	Description?: string;
	/** Cells' idmWorkspaceScope: ADMIN (a workspace), ROOM (a cell), LINK (a public link's). */
	Scope?: string;
	Access: "r" | "rw" | "w";
}

export interface StateOptions {
	user: Identity | null | undefined;
	workspaces: AccessibleWorkspace[];
	/** `ws` query parameter: a workspace uuid or slug to open. */
	ws?: string;
	lang?: string;
	/** The user's GUI preferences (Cells' `preferences` user attribute), when known. */
	preferences?: Record<string, unknown>;
	/** `XPath` query parameter: only return the elements at this path (`user/repositories`). */
	xPath?: string;
}

interface Repo {
	id: string;
	slug: string;
	label: string;
	description: string;
	acl: string;
	accessType: string;
	type: string;
	cell: boolean;
}

function repositoryType(ws: AccessibleWorkspace): string {
	if (ws.Scope === "ROOM") return "cell";
	if (ws.Slug === "personal-files") return "workspace-personal";
	return "workspace";
}

/** The workspaces as the client lists them: pseudo workspaces included for the users who get them. */
export function repositoriesFor(user: Identity, workspaces: AccessibleWorkspace[]): Repo[] {
	const repos: Repo[] = [];
	if (user.Profile !== "shared") {
		repos.push({ id: "homepage", slug: "welcome", label: MESSAGES_EN["ajax_gui.workspace.homepage"], description: "", acl: "r", accessType: "homepage", type: "workspace", cell: false });
	}
	for (const ws of workspaces) {
		if (!ws || typeof ws.UUID !== "string" || !["r", "rw", "w"].includes(ws.Access)) continue;
		// A public link's workspace is only reached through its link: its visitor (a hidden user) sees only that.
		if ((ws.Scope === "LINK") !== !!user.Hidden) continue;
		repos.push({
			id: ws.UUID,
			slug: ws.Slug ?? "",
			label: ws.Label ?? ws.Slug ?? "",
			description: ws.Description ?? "",
			acl: ws.Access,
			accessType: "gateway",
			type: repositoryType(ws),
			cell: ws.Scope === "ROOM",
		});
	}
	if (user.Profile === "admin") {
		repos.push({ id: "settings", slug: "settings", label: MESSAGES_EN["ajax_gui.workspace.settings"], description: "", acl: "rw", accessType: "settings", type: "workspace", cell: false });
	}
	return repos;
}

/** The `ws` parameter by uuid, then slug; else the home page; else the first workspace. */
export function pickActive(repos: Repo[], ws?: string): Repo | undefined {
	if (ws) {
		const hit = repos.find((r) => r.id === ws) ?? repos.find((r) => r.slug === ws);
		if (hit) return hit;
	}
	return repos.find((r) => r.id === "homepage") ?? repos[0];
}

function repoElement(r: Repo): XmlElement {
	const writable = r.acl.includes("w");
	return {
		name: "repo",
		attrs: {
			id: r.id,
			access_type: r.accessType,
			repositorySlug: r.slug,
			acl: r.acl,
			repository_type: r.type,
			owner: r.cell ? "shared" : undefined,
			user_editable_repository: r.cell ? "true" : undefined,
			allowCrossRepositoryCopy: writable ? "true" : undefined,
		},
		children: [
			{ name: "label", children: [r.label] },
			{ name: "description", children: [r.description] },
			{ name: "client_settings" },
		],
	};
}

function prefElement(name: string, value: unknown): XmlElement {
	if (typeof value === "string" && !/[\r\n<>&]/.test(value) && value.length < 256) return { name: "pref", attrs: { name, value } };
	return { name: "pref", attrs: { name }, cdata: typeof value === "string" ? value : JSON.stringify(value) };
}

export function normalizeLanguage(lang: string | undefined): string {
	if (lang === undefined || lang === "") return DEFAULT_LANGUAGE;
	if (!/^[A-Za-z]{2,3}([-_][A-Za-z0-9]{2,8})?$/.test(lang)) throw new BadRequestError(`Invalid language code "${lang}"`);
	// "fr-FR" and "fr_ca" select "fr", "en-GB" English: the dictionaries' own resolution (lib/frontend/i18n).
	return resolveLanguage(lang);
}

export function buildRegistry(opts: StateOptions): XmlElement {
	const lang = normalizeLanguage(opts.lang);
	const user = opts.user ?? null;
	const children: XmlElement[] = [
		{ name: "actions", children: [user ? { name: "action", attrs: { name: "logout" } } : { name: "action", attrs: { name: "login" } }] },
		{ name: "client_configs" },
		{ name: "plugins" },
	];
	if (user) {
		const repos = repositoriesFor(user, opts.workspaces);
		const active = pickActive(repos, opts.ws);
		const prefs: XmlElement[] = [prefElement("lang", lang)];
		for (const [k, v] of Object.entries(opts.preferences ?? {})) {
			if (k === "lang" || v === undefined || v === null || !/^[A-Za-z0-9_.:-]{1,128}$/.test(k)) continue;
			prefs.push(prefElement(k, v));
		}
		const userChildren: XmlElement[] = [];
		if (active) userChildren.push({ name: "active_repo", attrs: { id: active.id, write: active.acl.includes("w") ? "1" : "0", read: active.acl.includes("r") ? "1" : "0" } });
		userChildren.push({ name: "repositories", children: repos.map(repoElement) });
		userChildren.push({ name: "preferences", children: prefs });
		if (user.Profile === "admin") userChildren.push({ name: "special_rights", attrs: { is_admin: "1" } });
		children.push({ name: "user", attrs: { id: user.Login }, children: userChildren });
	}
	return { name: "pydio_registry", children };
}

/** Elements under the registry root along a plain `a/b/c` path (the only XPath form accepted). */
export function selectPath(root: XmlElement, xPath: string): XmlElement[] {
	const path = xPath.trim().replace(/^\/+/, "");
	if (!/^[A-Za-z_][A-Za-z0-9_]*(\/[A-Za-z_][A-Za-z0-9_]*)*$/.test(path) || path.length > 256) {
		throw new BadRequestError(`Unsupported XPath "${xPath}": only element paths such as "user/repositories" are supported`);
	}
	let current: XmlElement[] = [root];
	const segments = path.split("/");
	if (segments[0] === root.name) segments.shift();
	for (const seg of segments) {
		const next: XmlElement[] = [];
		for (const el of current) for (const c of el.children ?? []) if (typeof c !== "string" && c.name === seg) next.push(c);
		current = next;
	}
	return current;
}

export function buildStateXml(opts: StateOptions): string {
	const registry = buildRegistry(opts);
	if (opts.xPath) return xmlDocument({ name: "pydio_registry_part", attrs: { xPath: opts.xPath }, children: selectPath(registry, opts.xPath) });
	return xmlDocument(registry);
}
