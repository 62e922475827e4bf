// Node templates: a copy of a file or a folder tree taken when an admin makes the template (POST
// /a/templates/node), so that later edits of the source leave it unchanged, and the nodes created from it
// (POST /a/tree/create with its TemplateUUID). The copy is bounded: a template is meant to be a skeleton, and
// its bytes are held in the store and in memory while it is copied.
import { randomUUID } from "node:crypto";
import { lookup as mimeLookup } from "mime-types";
import { BadRequestError, ConflictError, NotFoundError } from "../errors";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { TreeIndex } from "../tree/index";
import type { DatasourceHandle, TreeOperations } from "../tree/operations";
import type { NodeDoc } from "../tree/model";
import type { NodeTemplate, NodeTemplateEntry } from "./model";

/** Bytes of all files of one template. */
export const MAX_TEMPLATE_BYTES = 64 * 1024 * 1024;
/** Files and folders of one template. */
export const MAX_TEMPLATE_ENTRIES = 2000;

export interface SnapshotDeps {
	index: TreeIndex;
	/** The datasource's store, and its configuration (an encrypted one's content never leaves it in clear). */
	datasource: (name: string) => Promise<DatasourceHandle & { config?: { EncryptionMode?: string } }>;
}

async function readAll(stream: NodeJS.ReadableStream): Promise<Buffer> {
	const chunks: Buffer[] = [];
	for await (const c of stream as AsyncIterable<Buffer>) chunks.push(Buffer.isBuffer(c) ? c : Buffer.from(c));
	return Buffer.concat(chunks);
}

/** Copies the node of that uuid (a file, or a folder with everything in it) into a template's entries. */
export async function snapshotNode(
	deps: SnapshotDeps,
	refNodeUuid: string,
	label: string,
	policies: ResourcePolicy[],
	by: string,
	now = Date.now(),
): Promise<{ template: NodeTemplate; entries: NodeTemplateEntry[] }> {
	const root = await deps.index.byUuid(refNodeUuid);
	if (!root) throw new NotFoundError(`node ${refNodeUuid} not found`, "node.notfound");
	if (root.path === "") throw new BadRequestError("A datasource root cannot be a template: choose a file or a folder in it");
	const docs: NodeDoc[] = root.type === "COLLECTION" ? (await deps.index.subtree(root.ds, root.path)).sort((a, b) => (a.path < b.path ? -1 : 1)) : [root];
	if (docs.length > MAX_TEMPLATE_ENTRIES) throw new BadRequestError(`A template holds at most ${MAX_TEMPLATE_ENTRIES} files and folders (${docs.length} under ${root.name})`);
	const total = docs.reduce((n, d) => n + (d.type === "LEAF" ? d.size : 0), 0);
	if (total > MAX_TEMPLATE_BYTES) throw new BadRequestError(`A template holds at most ${MAX_TEMPLATE_BYTES} bytes (${total} under ${root.name})`);
	const ds = await deps.datasource(root.ds);
	// A template's bytes are kept in the SQL store as they are: content encrypted at rest is not copied out clear.
	if ((ds.config?.EncryptionMode ?? "CLEAR") !== "CLEAR") throw new BadRequestError(`${root.name} is in an encrypted datasource: node templates are kept unencrypted, so they cannot be made from it`);
	const entries: NodeTemplateEntry[] = [];
	let size = 0;
	for (const d of docs) {
		const path = d === root || d.path === root.path ? "" : d.path.slice(root.path.length + 1);
		if (d.type === "COLLECTION") {
			entries.push({ path, type: "COLLECTION", size: 0, etag: "" });
			continue;
		}
		const data = d.key ? await readAll(await ds.store.get(d.key)) : Buffer.alloc(0);
		size += data.length;
		if (size > MAX_TEMPLATE_BYTES) throw new BadRequestError(`A template holds at most ${MAX_TEMPLATE_BYTES} bytes`);
		entries.push({ path, type: "LEAF", size: data.length, etag: d.etag ?? "", data });
	}
	const template: NodeTemplate = { uuid: randomUUID(), label: label || root.name, type: root.type, name: root.name, size, policies, createdBy: by, createdAt: now };
	return { template, entries };
}

/**
 * Creates `path` from a template: a file with the template's bytes, or a folder holding a copy of the template's
 * tree. Like any new node, refused over an existing one. Returns the created nodes, top first.
 */
export async function materialize(ops: TreeOperations, ds: string, path: string, template: NodeTemplate, entries: NodeTemplateEntry[]): Promise<NodeDoc[]> {
	if (await ops.index.get(ds, path)) throw new ConflictError(`${path} already exists`, "node.exists");
	if (template.type === "LEAF") {
		const data = entries.find((e) => e.path === "")?.data ?? Buffer.alloc(0);
		return [await ops.createFileWith(ds, path, data, mimeLookup(path) || "application/octet-stream")];
	}
	const created: NodeDoc[] = [await ops.mkdir(ds, path, true)];
	for (const e of entries) {
		if (e.path === "") continue;
		const target = `${path}/${e.path}`;
		created.push(e.type === "COLLECTION" ? await ops.mkdir(ds, target, true) : await ops.createFileWith(ds, target, e.data ?? Buffer.alloc(0), mimeLookup(target) || "application/octet-stream"));
	}
	return created;
}
