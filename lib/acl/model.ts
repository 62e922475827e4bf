// ACLs as Cells models them (idm.ACL) and as we store them (lib/db/acls: one row per ACL), and the checks of
// what clients send: ACLs to store, searches, deletes by example. Plain functions, unit-testable.
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

/** Stored form. Empty strings, never missing fields: the unique key (role, workspace, node, action) compares them. */
export interface ACLDoc {
	ID: string;
	RoleID: string;
	WorkspaceID: string;
	NodeID: string;
	ActionName: string;
	ActionValue: string;
	/** Microseconds at creation, for a stable listing order. */
	Created: number;
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
	const acl: ACL = { ID: doc.ID, Action: { Name: doc.ActionName, Value: doc.ActionValue } };
	if (doc.RoleID) acl.RoleID = doc.RoleID;
	if (doc.WorkspaceID) acl.WorkspaceID = doc.WorkspaceID;
	if (doc.NodeID) acl.NodeID = doc.NodeID;
	return acl;
}

function strings(kind: string, list: unknown): string[] | undefined {
	if (list === undefined || list === null) return undefined;
	if (!Array.isArray(list)) throw new BadRequestError(`${kind} must be an array`);
	return list.map((v) => {
		if (typeof v !== "string") throw new BadRequestError(`${kind} must contain strings`);
		return v;
	});
}

/** One ACLSingleQuery, checked: its criteria are ANDed, `Actions` match any of their entries, `not` negates the whole. */
export interface ACLCriteria {
	RoleIDs?: string[];
	WorkspaceIDs?: string[];
	NodeIDs?: string[];
	Actions?: ACLAction[];
	not?: boolean;
}

/** A search: its criteria combined with OR (Cells' default) or AND; none at all means every ACL. */
export interface ACLSearch {
	queries: ACLCriteria[];
	operation: "OR" | "AND";
}

/** Checks one ACLSingleQuery. Empty lists and nameless actions are dropped, as Cells ignores them. */
export function checkCriteria(q: ACLSingleQuery): ACLCriteria {
	const out: ACLCriteria = {};
	const roles = strings("RoleIDs", q.RoleIDs);
	const workspaces = strings("WorkspaceIDs", q.WorkspaceIDs);
	const nodes = strings("NodeIDs", q.NodeIDs);
	if (roles?.length) out.RoleIDs = roles;
	if (workspaces?.length) out.WorkspaceIDs = workspaces;
	if (nodes?.length) out.NodeIDs = nodes;
	if (q.Actions !== undefined && !Array.isArray(q.Actions)) throw new BadRequestError("Actions must be an array");
	const actions = (q.Actions ?? []).filter((a) => a && typeof a.Name === "string" && a.Name !== "").map((a) => (a.Value ? { Name: a.Name, Value: String(a.Value) } : { Name: a.Name }));
	if (actions.length) out.Actions = actions;
	if (q.not) out.not = true;
	return out;
}

export function checkSearch(queries: ACLSingleQuery[] | undefined, operation: string | undefined): ACLSearch {
	if (queries !== undefined && !Array.isArray(queries)) throw new BadRequestError("Queries must be an array");
	return { queries: (queries ?? []).map(checkCriteria), operation: operation === "AND" ? "AND" : "OR" };
}

/** A delete by example (POST /acl/bulk/delete, acl.deleteWhere): every non-empty field is a criterion. */
export interface ACLFilter {
	ID?: string;
	RoleID?: string;
	WorkspaceID?: string;
	NodeID?: string;
	ActionName?: string;
	ActionValue?: string;
}

/** Checks a delete by example; one without any criterion would delete every ACL and is refused. */
export function checkFilter(f: ACLFilter): ACLFilter {
	const out: ACLFilter = {};
	if (f.ID) out.ID = checkId("ID", f.ID);
	if (f.RoleID) out.RoleID = checkId("RoleID", f.RoleID);
	if (f.WorkspaceID) out.WorkspaceID = checkId("WorkspaceID", f.WorkspaceID);
	if (f.NodeID) out.NodeID = checkId("NodeID", f.NodeID);
	if (f.ActionName) out.ActionName = f.ActionName;
	if (f.ActionValue) out.ActionValue = f.ActionValue;
	if (Object.keys(out).length === 0) throw new BadRequestError("Refusing to delete ACLs without any criterion (give a RoleID, WorkspaceID, NodeID or Action)");
	return out;
}
