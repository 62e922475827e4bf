// User metadata as Cells' idm service has it: namespaces declared by administrators (idmUserMetaNamespace) and the
// values users put on nodes (idmUserMeta). Plain types and checks, no I/O.
import { BadRequestError } from "../errors";
import type { ResourcePolicy } from "../identity/resource-policy";

/** The per-user namespace of bookmarks: never listed, values owned by their user only. */
export const BOOKMARK = "bookmark";
/** User-declared namespaces start with this (Cells refuses others). */
export const USERMETA_PREFIX = "usermeta-";
/** A JsonValue is at most this long (bytes). */
export const MAX_VALUE_BYTES = 64 * 1024;
export const MAX_TAG_LENGTH = 255;

export interface UserMetaNamespace {
	Namespace: string;
	Label: string;
	Order: number;
	Indexable: boolean;
	JsonDefinition: string;
	Policies: ResourcePolicy[];
}

export interface UserMetaValue {
	Uuid: string;
	NodeUuid: string;
	Namespace: string;
	/** "" for a value every reader of the namespace shares; the user's uuid for a per-user one (bookmarks). */
	Owner: string;
	JsonValue: string;
	Policies: ResourcePolicy[];
	/** Unix seconds of the last write. */
	UpdatedAt: number;
}

/** What the namespace's field type is, from its JsonDefinition (`{"type":"tags",…}`); "" when not given. */
export function fieldType(ns: Pick<UserMetaNamespace, "JsonDefinition">): string {
	try {
		const d = JSON.parse(ns.JsonDefinition || "{}") as { type?: unknown };
		return typeof d.type === "string" ? d.type : "";
	} catch {
		return "";
	}
}

/** A namespace name an administrator may declare. */
export function checkNamespaceName(ns: unknown): string {
	if (typeof ns !== "string" || !ns) throw new BadRequestError("Namespace is required");
	if (ns.length > 128 || !/^[A-Za-z0-9_.:-]+$/.test(ns)) throw new BadRequestError(`Invalid namespace "${ns.slice(0, 64)}": letters, digits and _ . : - only, at most 128`);
	if (!ns.startsWith(USERMETA_PREFIX)) throw new BadRequestError(`Namespace "${ns}" must start with "${USERMETA_PREFIX}"`);
	return ns;
}

/** JsonDefinition, when given, must be a JSON object. */
export function checkJsonDefinition(def: unknown): string {
	if (def === undefined || def === null || def === "") return "";
	if (typeof def !== "string") throw new BadRequestError("JsonDefinition must be a string of JSON");
	if (def.length > MAX_VALUE_BYTES) throw new BadRequestError("JsonDefinition is too long");
	let parsed: unknown;
	try {
		parsed = JSON.parse(def);
	} catch {
		throw new BadRequestError("JsonDefinition is not valid JSON");
	}
	if (!parsed || typeof parsed !== "object" || Array.isArray(parsed)) throw new BadRequestError("JsonDefinition must be a JSON object");
	return def;
}

/** A value is JSON text (`"\"blue\""`, `"5"`, `"true"`). */
export function checkJsonValue(ns: string, v: unknown): string {
	if (typeof v !== "string" || v === "") throw new BadRequestError(`JsonValue of ${ns} must be a string of JSON`);
	if (Buffer.byteLength(v) > MAX_VALUE_BYTES) throw new BadRequestError(`JsonValue of ${ns} is larger than ${MAX_VALUE_BYTES} bytes`);
	try {
		JSON.parse(v);
	} catch {
		throw new BadRequestError(`JsonValue of ${ns} is not valid JSON`);
	}
	return v;
}

export function checkTag(tag: unknown): string {
	if (typeof tag !== "string" || !tag.trim()) throw new BadRequestError("Tag is required");
	const t = tag.trim();
	if (t.length > MAX_TAG_LENGTH || /[\u0000-\u001f\u007f]/.test(t)) throw new BadRequestError(`Invalid tag "${t.slice(0, 64)}"`);
	return t;
}

/** The tags a value of a `tags` namespace carries: its string, split on commas. */
export function tagsOf(jsonValue: string): string[] {
	let v: unknown;
	try {
		v = JSON.parse(jsonValue);
	} catch {
		return [];
	}
	const list = Array.isArray(v) ? v : typeof v === "string" ? v.split(",") : [];
	return [...new Set(list.filter((t): t is string => typeof t === "string").map((t) => t.trim()).filter((t) => t && t.length <= MAX_TAG_LENGTH))];
}
