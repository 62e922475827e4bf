// Admin-managed templates, as lib/db stores them and the templates and tree services use them.
import { hasPolicy, type ResourcePolicy } from "../identity/resource-policy";
import { isAdmin, type Identity } from "../auth/identity";

export type NodeType = "LEAF" | "COLLECTION";

/** A node template: what POST /a/templates/node copied from a file or a folder tree. */
export interface NodeTemplate {
	uuid: string;
	label: string;
	type: NodeType;
	/** The source's name when copied. */
	name: string;
	/** Bytes of all its files. */
	size: number;
	policies: ResourcePolicy[];
	createdBy: string;
	createdAt: number;
}

/** One file or folder of a node template; `path` is relative to its root ("" = the root). */
export interface NodeTemplateEntry {
	path: string;
	type: NodeType;
	size: number;
	etag: string;
	data?: Buffer;
}

/** Cells' entMetaTemplate. `Meta` is the template's definition, a JSON string. */
export interface MetaTemplate {
	Uuid: string;
	Label: string;
	Namespace: string;
	Meta: string;
	Policies: ResourcePolicy[];
}

/**
 * Who may see and use a template: everyone when it has no policies (Cells' default), else administrators and the
 * subjects its policies let READ.
 */
export function usableBy(policies: ResourcePolicy[], user: Identity): boolean {
	return !policies.length || isAdmin(user) || hasPolicy(policies, user, "READ");
}
