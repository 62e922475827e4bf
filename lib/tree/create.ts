// Creating nodes as users do it (POST /a/tree/create): folders (with their missing parents when asked) and
// files, empty or with a document template's content, files and folder trees from an admin's node template
// (lib/templates/nodes), never a workspace root nor anything in the recycle bin, which the server manages.
import { lookup as mimeLookup } from "mime-types";
import { BadRequestError, NotFoundError } from "../errors";
import type { Identity } from "../auth/identity";
import { getTemplate } from "../templates";
import { materialize } from "../templates/nodes";
import { usableBy, type NodeTemplate, type NodeTemplateEntry } from "../templates/model";
import type { RecycleDeps } from "./recycle";
import { presentNode } from "./present";
import { checkUserWritable, type TreeNode } from "./model";

/** The node templates admins made (lib/db TemplatesRepo). */
export interface NodeTemplateSource {
	nodeTemplate(uuid: string): Promise<NodeTemplate | null>;
	nodeTemplateEntries(uuid: string, withData: boolean): Promise<NodeTemplateEntry[]>;
}

export async function createNodes(
	deps: RecycleDeps,
	user: Identity,
	nodes: { Path?: string; Type?: string }[],
	recursive: boolean,
	templateUuid?: string,
	nodeTemplates?: NodeTemplateSource,
): Promise<TreeNode[]> {
	// An unknown template fails the request before anything is created; folders ignore a document template, a
	// file cannot be made from a folder template.
	const template = templateUuid ? getTemplate(templateUuid) : undefined;
	const found = templateUuid && !template && nodeTemplates ? await nodeTemplates.nodeTemplate(templateUuid) : null;
	// A template the caller may not use is one they do not know of.
	const nodeTemplate = found && usableBy(found.policies, user) ? found : null;
	if (templateUuid && !template && !nodeTemplate) throw new NotFoundError(`template ${templateUuid} not found`, "template.notfound");
	if (nodeTemplate?.type === "COLLECTION" && nodes.some((n) => n.Type === "LEAF")) throw new BadRequestError(`Template ${nodeTemplate.label} is a folder: create a COLLECTION node from it`);
	const entries = nodeTemplate ? await nodeTemplates!.nodeTemplateEntries(nodeTemplate.uuid, true) : [];
	const seen = new Set<string>();
	const out: TreeNode[] = [];
	for (const n of nodes) {
		if (!n.Path) throw new BadRequestError("Every node needs a Path");
		const path = n.Path.replace(/\/$/, "");
		if (seen.has(path)) continue;
		seen.add(path);
		const loc = await deps.resolver.require(path, user, "write");
		checkUserWritable(loc.rel);
		if (nodeTemplate && (nodeTemplate.type === "COLLECTION" || n.Type === "LEAF")) {
			const created = await materialize(deps.ops, loc.ds, loc.path, nodeTemplate, entries);
			for (const c of created) if (c.type === "LEAF") deps.changed("create", c);
			out.push(presentNode(created[0], loc));
			continue;
		}
		// Folders announce themselves (with their missing parents) through the operations' hook.
		const doc =
			n.Type !== "LEAF"
				? await deps.ops.mkdir(loc.ds, loc.path, recursive)
				: template
					? await deps.ops.createFileWith(loc.ds, loc.path, template.content, mimeLookup(loc.path) || "application/octet-stream")
					: await deps.ops.createEmptyFile(loc.ds, loc.path);
		if (doc.type === "LEAF") deps.changed("create", doc);
		out.push(presentNode(doc, loc));
	}
	return out;
}
