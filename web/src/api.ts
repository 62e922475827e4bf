// The calls a public link's page makes, all to this server: the minisite login (/a/frontend/session with
// X-Pydio-Minisite), the tree reads (/a/tree/stats), selections for a folder's zip (/a/tree/selection), and the
// bytes through the /io gateway (pydio_jwt in the URL for downloads and previews, X-Pydio-Bearer for uploads).

export interface TreeNode {
	Path: string;
	Name: string;
	IsFolder: boolean;
	Size: number;
	/** Unix seconds. */
	MTime: number;
	Mime: string;
}

export class ApiError extends Error {
	constructor(
		message: string,
		readonly status: number,
		/** Cells' `restError.Code` (S3's `<Code>`): what the page decides on; the message is only shown. */
		readonly code = "",
	) {
		super(message);
	}
}

/** A failed answer: Cells' `{Code, Title, Detail}` JSON, an S3 `<Code>` and `<Message>`, or the status text. */
async function failure(r: Response): Promise<ApiError> {
	const text = await r.text().catch(() => "");
	let message = "";
	let code = "";
	try {
		const body = JSON.parse(text) as { Code?: unknown; Title?: string; Detail?: string };
		message = body.Title || body.Detail || "";
		code = typeof body.Code === "string" ? body.Code : "";
	} catch {
		message = /<Message>([^<]*)<\/Message>/.exec(text)?.[1] ?? "";
		code = /<Code>([^<]*)<\/Code>/.exec(text)?.[1] ?? "";
	}
	return new ApiError(message || `${r.status} ${r.statusText}`, r.status, code);
}

async function postJson<T>(path: string, body: unknown, headers: Record<string, string>): Promise<T> {
	const r = await fetch(path, { method: "POST", headers: { "Content-Type": "application/json", ...headers }, body: JSON.stringify(body) });
	if (!r.ok) throw await failure(r);
	return (await r.json()) as T;
}

/** `a/b c` → `a/b%20c`: each segment encoded, the slashes kept. */
export function encodePath(path: string): string {
	return path.split("/").map(encodeURIComponent).join("/");
}

export function baseName(path: string): string {
	return path.slice(path.lastIndexOf("/") + 1);
}

/** MetaStore values are JSON-encoded strings (`"\"image/png\""`). */
function metaString(meta: Record<string, string> | undefined, key: string): string | undefined {
	const raw = meta?.[key];
	if (raw === undefined) return undefined;
	try {
		const v = JSON.parse(raw) as unknown;
		return typeof v === "string" ? v : undefined;
	} catch {
		return raw;
	}
}

interface WireNode {
	Path?: string;
	Type?: string;
	Size?: string | number;
	MTime?: string | number;
	MetaStore?: Record<string, string>;
}

function toNode(n: WireNode): TreeNode {
	const path = n.Path ?? "";
	return {
		Path: path,
		Name: metaString(n.MetaStore, "name") ?? baseName(path),
		IsFolder: n.Type === "COLLECTION",
		Size: Number(n.Size ?? 0) || 0,
		MTime: Number(n.MTime ?? 0) || 0,
		Mime: metaString(n.MetaStore, "mime") ?? "",
	};
}

/** A file name as RFC 5987 wants it in `filename*=`: percent-encoded UTF-8, `'()*` included. */
function rfc5987(name: string): string {
	return encodeURIComponent(name).replace(/['()*]/g, (c) => `%${c.charCodeAt(0).toString(16).toUpperCase()}`);
}

/** A logged-in visitor of one link. */
export class LinkSession {
	constructor(
		readonly hash: string,
		readonly jwt: string,
		/** Unix seconds: the page logs in again before then (LinkPage). */
		readonly expiresAt: number,
	) {}

	/** Logs in as the link's hidden user: the typed password, or the preset one of a link without password. */
	static async login(hash: string, login: string, password: string): Promise<LinkSession> {
		// `?u=<key>`: the identification key of a link sent by mail to chosen users (TargetUsers); a link restricted
		// to them opens only with one.
		const u = new URLSearchParams(typeof location === "undefined" ? "" : location.search).get("u");
		const r = await postJson<{ JWT?: string; ExpireTime?: number | string }>("/a/frontend/session", { AuthInfo: { type: "credentials", login, password, ...(u ? { u } : {}) } }, { "X-Pydio-Minisite": hash });
		if (!r.JWT) throw new ApiError("The server did not open a session", 500);
		return new LinkSession(hash, r.JWT, Number(r.ExpireTime ?? 0) || 0);
	}

	private auth(): Record<string, string> {
		return { Authorization: `Bearer ${this.jwt}` };
	}

	async stats(paths: string[]): Promise<TreeNode[]> {
		const r = await postJson<{ Nodes?: WireNode[] }>("/a/tree/stats", { NodePaths: paths }, this.auth());
		return (r.Nodes ?? []).map(toNode);
	}

	/** The children of a folder, folders first, then by name. */
	async list(folder: string): Promise<TreeNode[]> {
		const nodes = await this.stats([`${folder}/*`]);
		return nodes.filter((n) => !n.Name.startsWith(".")).sort((a, b) => Number(b.IsFolder) - Number(a.IsFolder) || a.Name.localeCompare(b.Name));
	}

	/** A URL that reads a file through /io; `download` names the saved file (Content-Disposition: attachment). */
	fileUrl(path: string, download?: string): string {
		const q = new URLSearchParams({ pydio_jwt: this.jwt });
		if (download !== undefined) q.set("response-content-disposition", `attachment; filename*=UTF-8''${rfc5987(download)}`);
		return `/io/${encodePath(path)}?${q.toString()}`;
	}

	/** A URL that streams these nodes as one zip (a saved selection), saved as `<name>.zip`. */
	async zipUrl(paths: string[], name: string): Promise<string> {
		const r = await postJson<{ SelectionUUID?: string }>("/a/tree/selection", { Nodes: paths.map((Path) => ({ Path })) }, this.auth());
		if (!r.SelectionUUID) throw new ApiError("The server did not save the selection", 500);
		const slug = paths[0].split("/")[0];
		return `/io/${encodeURIComponent(slug)}/${encodeURIComponent(name.replace(/\//g, "_") || "download")}-${r.SelectionUUID}.zip?${new URLSearchParams({ pydio_jwt: this.jwt }).toString()}`;
	}

	async readText(path: string, max: number): Promise<string> {
		const r = await fetch(`/io/${encodePath(path)}`, { headers: { "X-Pydio-Bearer": this.jwt, Range: `bytes=0-${max - 1}` } });
		if (!r.ok) throw await failure(r);
		return r.text();
	}

	/** PUT /io/<folder>/<name> with upload progress (fetch reports none): resolves when stored. */
	upload(folder: string, file: File, progress: (sent: number, total: number) => void): Promise<void> {
		return new Promise((resolve, reject) => {
			const xhr = new XMLHttpRequest();
			xhr.open("PUT", `/io/${encodePath(`${folder}/${file.name}`)}`);
			xhr.setRequestHeader("X-Pydio-Bearer", this.jwt);
			xhr.setRequestHeader("Content-Type", file.type || "application/octet-stream");
			xhr.upload.onprogress = (e) => progress(e.loaded, e.lengthComputable ? e.total : file.size);
			xhr.onload = () => {
				if (xhr.status >= 200 && xhr.status < 300) return resolve();
				const message = /<Message>([^<]*)<\/Message>/.exec(xhr.responseText)?.[1];
				reject(new ApiError(message || `Upload failed (${xhr.status})`, xhr.status));
			};
			xhr.onerror = () => reject(new ApiError("The upload was interrupted", 0));
			xhr.send(file);
		});
	}
}

export function formatSize(bytes: number): string {
	if (bytes < 1024) return `${bytes} B`;
	const units = ["KB", "MB", "GB", "TB"];
	let v = bytes / 1024;
	let i = 0;
	while (v >= 1024 && i < units.length - 1) {
		v /= 1024;
		i++;
	}
	return `${v < 10 ? v.toFixed(1) : Math.round(v)} ${units[i]}`;
}

export function formatDate(unix: number): string {
	if (!unix) return "";
	return new Date(unix * 1000).toLocaleString(undefined, { dateStyle: "medium", timeStyle: "short" });
}
