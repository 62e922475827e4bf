// ActivityStreams 2.0 objects as Cells' REST API gives them (swagger `activityObject`: lower-case fields,
// `@context`, enum names as types), built from the tree's changes, and the collections a stream answers.
import type { TreeChange } from "../contracts/tree";

export const AS_CONTEXT = "https://www.w3.org/ns/activitystreams";

export interface ActivityObject {
	"@context"?: string;
	type?: string;
	id?: string;
	name?: string;
	summary?: string;
	markdown?: string;
	rel?: string;
	actor?: ActivityObject;
	object?: ActivityObject;
	origin?: ActivityObject;
	target?: ActivityObject;
	partOf?: ActivityObject;
	items?: ActivityObject[];
	totalItems?: number;
	/** RFC 3339 */
	updated?: string;
}

/** A datasource node an activity names: mapped to the reader's workspace paths when the activity is read. */
export interface NodeRef {
	ds: string;
	path: string;
}

/** What a box row holds: the activity, and where its nodes are in the datasources. */
export interface StoredActivity {
	activity: ActivityObject;
	refs: { object?: NodeRef; origin?: NodeRef; target?: NodeRef };
}

export type ActivityKind = "Create" | "Update" | "Delete" | "Move" | "UpdateMeta" | "Read" | "Share";

/**
 * The activity of a tree change, as Cells' DocumentActivity makes it: Create/Update/Delete/Move/UpdateMeta of a
 * Document or a Folder, the actor a Person. Undefined for the server's own changes (no author): Cells ignores
 * those too (its initial sync, resyncs).
 */
export function treeActivity(change: TreeChange, at: Date): StoredActivity | undefined {
	if (!change.by) return undefined;
	const n = change.node;
	const kind = n.type === "LEAF" ? "Document" : "Folder";
	const type: ActivityKind = change.type === "create" ? "Create" : change.type === "content" ? "Update" : change.type === "delete" ? "Delete" : change.type === "move" ? "Move" : "UpdateMeta";
	const object: ActivityObject = { type: kind, id: n.Uuid, name: n.path };
	const activity: ActivityObject = {
		"@context": AS_CONTEXT,
		type,
		name: "File Event",
		actor: { type: "Person", id: change.by, name: change.by },
		object,
		updated: at.toISOString(),
	};
	const refs: StoredActivity["refs"] = { object: { ds: n.ds, path: n.path } };
	if (change.type === "move" && change.from) {
		activity.origin = { type: kind, id: n.Uuid, name: change.from.path };
		activity.target = { type: kind, id: n.Uuid, name: n.path };
		refs.origin = change.from;
		refs.target = { ds: n.ds, path: n.path };
	}
	return { activity, refs };
}

/** A Share activity: `actor` gave the target access to a workspace or a cell (Cells' AclActivity). */
export function shareActivity(actor: string, ws: { UUID: string; Label: string; cell: boolean }, at: Date): StoredActivity {
	return {
		activity: {
			"@context": AS_CONTEXT,
			type: "Share",
			actor: { type: "Person", id: actor, name: actor },
			object: { type: ws.cell ? "Cell" : "Workspace", id: ws.UUID, name: ws.Label },
			updated: at.toISOString(),
		},
		refs: {},
	};
}

export function collection(items: ActivityObject[]): ActivityObject {
	return items.length ? { "@context": AS_CONTEXT, type: "Collection", items, totalItems: items.length } : { "@context": AS_CONTEXT, type: "Collection" };
}

export function countCollection(n: number): ActivityObject {
	return n ? { "@context": AS_CONTEXT, type: "Collection", totalItems: n } : { "@context": AS_CONTEXT, type: "Collection" };
}

const VERBS: Record<string, [string, string]> = {
	Create: ["created", "create"],
	Update: ["modified", "modify"],
	Delete: ["deleted", "delete"],
	Move: ["moved", "move"],
	UpdateMeta: ["updated the metadata of", "update the metadata of"],
	UpdateComment: ["commented on", "comment on"],
	Read: ["read", "read"],
	Share: ["shared", "share"],
};

function baseName(p: string | undefined): string {
	const s = (p ?? "").replace(/\/+$/, "");
	return s.slice(s.lastIndexOf("/") + 1) || s;
}

function link(o: ActivityObject | undefined): string {
	if (!o) return "";
	if (o.type === "Workspace" || o.type === "Cell") return `[${o.name ?? o.id}](workspaces://${o.id ?? ""})`;
	return `[${baseName(o.name) || o.id}](doc://${o.id ?? ""})`;
}

/**
 * The markdown summary Cells renders for a reader (links `user://`, `doc://`, `workspaces://`): GENERIC names the
 * actor, ACTOR speaks to the actor ("You created…"), SUBJECT leaves the actor out ("Created…").
 */
export function summary(a: ActivityObject, pov: string | undefined): string {
	const [past] = VERBS[a.type ?? ""] ?? ["changed", "change"];
	const actor = a.actor?.id ? `[${a.actor.name ?? a.actor.id}](user://${a.actor.id})` : "Someone";
	let what = link(a.object);
	if (a.type === "Move" && a.target) what = `${link(a.object)} to ${a.target.name ?? ""}`;
	if (a.type === "Share") what = `${link(a.object)} with you`;
	if (pov === "ACTOR") return `You ${past} ${what}`;
	if (pov === "SUBJECT") return `${past.charAt(0).toUpperCase()}${past.slice(1)} ${what}`;
	return `User ${actor} ${past} ${what}`;
}
