// The administrators' view of the index (POST /a/tree/admin/list and /stat): datasource paths
// (`<datasource>/<path>`), hidden files included, no workspace in between.
import { BadRequestError, NotFoundError } from "../errors";
import type { TreeIndex } from "./index";
import { rootUuid, type TreeNode } from "./model";
import { splitPath } from "./paths";
import { presentAdminNode } from "./present";

export interface AdminListParams {
	Node: { Path?: string };
	Limit?: number;
	Offset?: number;
	FilterType?: string;
}

export async function adminList(index: TreeIndex, datasources: () => Promise<{ Name: string }[]>, p: AdminListParams): Promise<{ Parent: TreeNode; Children: TreeNode[] }> {
	const segs = splitPath(p.Node.Path ?? "");
	if (!segs.length) {
		const list = await datasources();
		return { Parent: { Uuid: "ROOT", Path: "/", Type: "COLLECTION" }, Children: list.map((d) => ({ Uuid: rootUuid(d.Name), Path: d.Name, Type: "COLLECTION" })) };
	}
	const [ds, ...rest] = segs;
	const parent = await index.get(ds, rest.join("/"));
	if (!parent) throw new NotFoundError(`${segs.join("/")} not found`, "node.notfound");
	const type = p.FilterType === "LEAF" || p.FilterType === "COLLECTION" ? p.FilterType : undefined;
	const { nodes } = await index.children(ds, parent.path, { offset: p.Offset, limit: p.Limit, type, includeHidden: true });
	return { Parent: presentAdminNode(parent), Children: nodes.map(presentAdminNode) };
}

export async function adminStat(index: TreeIndex, path: string | undefined): Promise<{ Success: true; Node: TreeNode }> {
	const [ds, ...rest] = splitPath(path ?? "");
	if (!ds) throw new BadRequestError("Node.Path must start with a datasource name");
	const doc = await index.get(ds, rest.join("/"));
	if (!doc) throw new NotFoundError(`${path} not found`, "node.notfound");
	return { Success: true, Node: presentAdminNode(doc) };
}
