// ACLs as Cells models them (idm.ACL) and as we store them: one flat document per ACL so that every
// criterion is a plain field query on both NeDB and MongoDB. Plain functions, unit-testable.
import { BadRequestError } from "../errors";

export interface ACLAction {
	Name: string;
	Value?: string;
}

export interface ACL {
	ID?: string;
	Action?: ACLAction;
	RoleID?: string;
	WorkspaceID?: string;
	NodeID?: string;
}

/** Stored form. Empty strings (never missing fields) so that `$nin`/`$ne` behave the same on both adapters. */
export interface ACLDoc {
	_id: string;
	RoleID: string;
	WorkspaceID: string;
	NodeID: string;
	ActionName: string;
	ActionValue: string;
	/** Milliseconds at creation, for a stable listing order. */
	Created: number;
	[key: string]: unknown;
}

export interface ACLSingleQuery {
	Actions?: ACLAction[];
	RoleIDs?: string[];
	WorkspaceIDs?: string[];
	NodeIDs?: string[];
	not?: boolean;
}

/** Actions ACLs may carry. `parameter:<plugin>:<name>` and `action:<plugin>:<name>` are open families. */
export const KNOWN_ACTIONS = ["read", "write", "deny", "policy", "quota", "workspace-path", "recycle_root", "content_lock", "default-cells-policy"];
export const ACTION_PREFIXES = ["parameter:", "action:"];
/** ACLs that describe a workspace's roots: they belong to no role. */
export const ROOT_ACTIONS = ["workspace-path", "recycle_root"];

export const MAX_ID = 255;
export const MAX_VALUE = 64 * 1024;

export function isKnownAction(name: string): boolean {
	if (KNOWN_ACTIONS.includes(name)) return true;
	const prefix = ACTION_PREFIXES.find((p) => name.startsWith(p));
	if (!prefix) return false;
	const rest = name.slice(prefix.length);
	return rest.length > 0 && rest.length <= 200 && /^[A-Za-z0-9_.:\-]+$/.test(rest);
}

// Control characters (NUL included), separators and traversal never appear in ids.
const BAD_ID = /[\u0000-\u001f\u007f\\/]/;

/** A role, workspace or node id: optional, but when present a safe single token. */
export function checkId(kind: string, value: unknown): string {
	if (value === undefined || value === null || value === "") return "";
	if (typeof value !== "string") throw new BadRequestError(`${kind} must be a string`);
	if (value.length > MAX_ID) throw new BadRequestError(`${kind} is too long (at most ${MAX_ID} characters)`);
	if (BAD_ID.test(value) || value.includes("..")) throw new BadRequestError(`${kind} contains forbidden characters`);
	return value;
}

export function checkValue(value: unknown): string {
	if (value === undefined || value === null) return "";
	if (typeof value !== "string") throw new BadRequestError("Action.Value must be a string");
	if (value.length > MAX_VALUE) throw new BadRequestError(`Action.Value is too long (at most ${MAX_VALUE} characters)`);
	if (value.includes("\u0000")) throw new BadRequestError("Action.Value contains a NUL character");
	return value;
}

/** Checks an ACL to be stored and returns its normalised fields. */
export type ACLFields = Pick<ACLDoc, "RoleID" | "WorkspaceID" | "NodeID" | "ActionName" | "ActionValue">;

export function validateACL(acl: ACL): ACLFields {
	const name = acl.Action?.Name;
	if (typeof name !== "string" || name === "") throw new BadRequestError("Action.Name is required");
	if (!isKnownAction(name)) throw new BadRequestError(`Unknown ACL action "${name}"`);
	const out = {
		RoleID: checkId("RoleID", acl.RoleID),
		WorkspaceID: checkId("WorkspaceID", acl.WorkspaceID),
		NodeID: checkId("NodeID", acl.NodeID),
		ActionName: name,
		ActionValue: checkValue(acl.Action?.Value),
	};
	if (ROOT_ACTIONS.includes(name)) {
		// Root ACLs tie a node to a workspace; Cells writes them without a role.
		if (!out.WorkspaceID || !out.NodeID) throw new BadRequestError(`A ${name} ACL needs a WorkspaceID and a NodeID`);
	} else if (!out.RoleID) {
		throw new BadRequestError("RoleID is required");
	}
	return out;
}

export function toACL(doc: ACLDoc): ACL {
	const acl: ACL = { ID: doc._id, Action: { Name: doc.ActionName, Value: doc.ActionValue } };
	if (doc.RoleID) acl.RoleID = doc.RoleID;
	if (doc.WorkspaceID) acl.WorkspaceID = doc.WorkspaceID;
	if (doc.NodeID) acl.NodeID = doc.NodeID;
	return acl;
}

/** The identity of an ACL for idempotent writes: one value per role, workspace, node and action. */
export function aclKey(d: { RoleID: string; WorkspaceID: string; NodeID: string; ActionName: string }): Record<string, string> {
	return { RoleID: d.RoleID, WorkspaceID: d.WorkspaceID, NodeID: d.NodeID, ActionName: d.ActionName };
}

type Q = Record<string, unknown>;
const NOTHING: Q = { _id: { $in: [] } };

function strings(kind: string, list: unknown): string[] | undefined {
	if (list === undefined || list === null) return undefined;
	if (!Array.isArray(list)) throw new BadRequestError(`${kind} must be an array`);
	return list.map((v) => {
		if (typeof v !== "string") throw new BadRequestError(`${kind} must contain strings`);
		return v;
	});
}

/**
 * One ACLSingleQuery as a store query. Criteria of one query are ANDed; `Actions` match any of their entries
 * (Name, and Value when given). Negation is written with `$nin`/`$ne`/`$or` (De Morgan) so that the same
 * query runs on NeDB and MongoDB. Empty lists are ignored, like Cells does.
 */
export function singleQuery(q: ACLSingleQuery): Q {
	const parts: Q[] = [];
	const negs: Q[] = [];
	const fields: [string, string[] | undefined][] = [
		["RoleID", strings("RoleIDs", q.RoleIDs)],
		["WorkspaceID", strings("WorkspaceIDs", q.WorkspaceIDs)],
		["NodeID", strings("NodeIDs", q.NodeIDs)],
	];
	for (const [field, list] of fields) {
		if (!list?.length) continue;
		parts.push({ [field]: { $in: list } });
		negs.push({ [field]: { $nin: list } });
	}
	if (q.Actions !== undefined && !Array.isArray(q.Actions)) throw new BadRequestError("Actions must be an array");
	const actions = (q.Actions ?? []).filter((a) => a && typeof a.Name === "string" && a.Name !== "");
	if (actions.length) {
		const one = actions.map((a) => (a.Value ? { ActionName: a.Name, ActionValue: a.Value } : { ActionName: a.Name }));
		parts.push(one.length === 1 ? one[0] : { $or: one });
		// not (any action matches) = every action fails to match.
		negs.push({
			$and: actions.map((a) => (a.Value ? { $or: [{ ActionName: { $ne: a.Name } }, { ActionValue: { $ne: a.Value } }] } : { ActionName: { $ne: a.Name } })),
		});
	}
	if (!q.not) return parts.length === 0 ? {} : parts.length === 1 ? parts[0] : { $and: parts };
	if (negs.length === 0) return NOTHING; // not(everything)
	return negs.length === 1 ? negs[0] : { $or: negs };
}

/** Queries combined with OR (Cells' default) or AND. No query at all means every ACL. */
export function searchQuery(queries: ACLSingleQuery[] | undefined, operation: string | undefined): Q {
	const list = (queries ?? []).map(singleQuery);
	if (list.length === 0) return {};
	if (list.length === 1) return list[0];
	if (operation === "AND") return { $and: list };
	// OR with an unconstrained member matches everything.
	if (list.some((q) => Object.keys(q).length === 0)) return {};
	return { $or: list };
}

/** The store query of a delete-by-example (POST /acl/bulk/delete): every non-empty field is a criterion. */
export function filterQuery(f: { ID?: string; RoleID?: string; WorkspaceID?: string; NodeID?: string; ActionName?: string; ActionValue?: string }): Q {
	const q: Q = {};
	if (f.ID) q._id = checkId("ID", f.ID);
	if (f.RoleID) q.RoleID = checkId("RoleID", f.RoleID);
	if (f.WorkspaceID) q.WorkspaceID = checkId("WorkspaceID", f.WorkspaceID);
	if (f.NodeID) q.NodeID = checkId("NodeID", f.NodeID);
	if (f.ActionName) q.ActionName = f.ActionName;
	if (f.ActionValue) q.ActionValue = f.ActionValue;
	if (Object.keys(q).length === 0) throw new BadRequestError("Refusing to delete ACLs without any criterion (give a RoleID, WorkspaceID, NodeID or Action)");
	return q;
}
