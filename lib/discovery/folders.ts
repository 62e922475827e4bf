// Folders of one node's file system, for the folder picker of a LOCAL datasource (POST/PUT /a/config/peers/{Peer}):
// confined to the node's allowed roots (DATA_DIR and ALLOWED_LOCAL_FOLDERS). A path is resolved with its symbolic
// links before the check, so neither ".." nor a link pointing elsewhere leads out of the roots.
import { lstat, mkdir, readdir, realpath, stat } from "node:fs/promises";
import { basename, dirname, isAbsolute, join, relative, resolve, sep } from "node:path";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../errors";

export interface FolderNode {
	Path: string;
	Type: "COLLECTION";
	MTime?: number;
	MetaStore?: Record<string, string>;
}

export interface FolderListing {
	Parent: FolderNode;
	Children: FolderNode[];
}

const MAX_CHILDREN = 2000;
const NAME = /^[^/\\\0]{1,255}$/;

function inside(root: string, p: string): boolean {
	const rel = relative(root, p);
	return rel === "" || (!rel.startsWith("..") && !isAbsolute(rel) && rel.split(sep)[0] !== "..");
}

export class PeerFolders {
	constructor(private readonly roots: string[]) {}

	/** The roots themselves, resolved (those that exist). */
	private async realRoots(): Promise<string[]> {
		const out: string[] = [];
		for (const r of this.roots) {
			const real = await realpath(r).catch(() => null);
			if (real && !out.includes(real)) out.push(real);
		}
		return out;
	}

	/** The real path of `raw`, which must exist (404 otherwise) and be in a root (403 otherwise). */
	private async confine(raw: string): Promise<string> {
		if (raw.includes("\0")) throw new BadRequestError("Invalid path");
		if (!isAbsolute(raw)) throw new BadRequestError(`Path must be absolute (one of the allowed roots or below): ${raw.slice(0, 256)}`);
		const roots = await this.realRoots();
		const lexical = resolve(raw);
		const real = await realpath(lexical).catch((e: NodeJS.ErrnoException) => {
			if (e.code === "ENOENT") throw new NotFoundError(`No folder ${lexical} on this node`, "peer.folder.notfound");
			throw e;
		});
		if (!roots.some((r) => inside(r, real))) throw new ForbiddenError(`${lexical} is outside the folders this node allows (${roots.join(", ")})`, "peer.folder.forbidden");
		return real;
	}

	/** The sub-folders of `path` ("" or "/": the roots). */
	async list(path: string): Promise<FolderListing> {
		if (path === "" || path === "/") {
			const roots = await this.realRoots();
			return { Parent: { Path: "/", Type: "COLLECTION" }, Children: await Promise.all(roots.map((r) => this.node(r))) };
		}
		const dir = await this.confine(path);
		if (!(await stat(dir)).isDirectory()) throw new BadRequestError(`${path} is not a folder`);
		const roots = await this.realRoots();
		const children: FolderNode[] = [];
		for (const e of await readdir(dir, { withFileTypes: true })) {
			if (children.length >= MAX_CHILDREN) break;
			const full = join(dir, e.name);
			if (e.isSymbolicLink()) {
				// A link is listed only when where it leads is a folder inside the roots.
				const target = await realpath(full).catch(() => null);
				if (!target || !roots.some((r) => inside(r, target)) || !(await stat(target).then((s) => s.isDirectory(), () => false))) continue;
			} else if (!e.isDirectory()) continue;
			children.push(await this.node(full));
		}
		children.sort((a, b) => (a.Path < b.Path ? -1 : a.Path > b.Path ? 1 : 0));
		return { Parent: await this.node(dir), Children: children };
	}

	/** Creates the folder `path` (its parent must exist, inside a root). */
	async create(path: string): Promise<FolderNode> {
		if (!isAbsolute(path)) throw new BadRequestError(`Path must be absolute: ${path.slice(0, 256)}`);
		const lexical = resolve(path);
		const name = basename(lexical);
		if (!NAME.test(name) || name === "." || name === "..") throw new BadRequestError(`Invalid folder name "${name.slice(0, 64)}"`);
		const parent = await this.confine(dirname(lexical));
		const target = join(parent, name);
		const existing = await lstat(target).catch(() => null);
		if (existing) throw new ConflictError(`${lexical} already exists`, "peer.folder.exists");
		await mkdir(target);
		return this.node(target);
	}

	private async node(p: string): Promise<FolderNode> {
		const s = await stat(p).catch(() => null);
		const n: FolderNode = { Path: p, Type: "COLLECTION" };
		if (s) n.MTime = Math.floor(s.mtimeMs / 1000);
		return n;
	}
}
