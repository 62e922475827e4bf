// User metadata on nodes, as Cells' idm/meta REST handlers do it: administrators declare namespaces (with the
// policies saying who reads and writes their values), users put values on nodes they may reach, bookmarks are
// per-user values. Reads are filtered by the values' policies for the caller; writes need the node (through the
// tree's rights) and the namespace's WRITE policy.
import { BadRequestError, ForbiddenError, NotFoundError, NotSupportedError } from "../errors";
import { isAdmin, type Identity } from "../auth/identity";
import { hasPolicy, type ResourcePolicy } from "../identity/resource-policy";
import type { UserMetaRepo } from "../db/user-meta";
import type { TreeNode } from "../tree/model";
import type { UserMetaChange } from "../contracts/usermeta";
import { BOOKMARK, checkJsonDefinition, checkJsonValue, checkNamespaceName, checkTag, fieldType, tagsOf, type UserMetaNamespace, type UserMetaValue } from "./model";

/** idmUserMeta as the wire has it (before Cells encoding). */
export interface UserMetaIn {
	Uuid?: string;
	NodeUuid?: string;
	Namespace?: string;
	JsonValue?: string;
	Policies?: ResourcePolicy[];
}
export interface UserMetaOut {
	Uuid: string;
	NodeUuid: string;
	Namespace: string;
	JsonValue: string;
	Policies: ResourcePolicy[];
	PoliciesContextEditable: boolean;
	ResolvedNode?: TreeNode;
}
export type NamespaceIn = Partial<UserMetaNamespace> & { Namespace?: string };
export type NamespaceOut = UserMetaNamespace & { PoliciesContextEditable: boolean };

export interface SearchQuery {
	MetaUuids?: string[];
	NodeUuids?: string[];
	Namespace?: string;
	ResourceSubjectOwner?: string;
	ResourceQuery?: { Any?: boolean; Empty?: boolean; Subjects?: string[] };
}

export interface UserMetaDeps {
	repo: UserMetaRepo;
	/** The nodes of these uuids the user may read (node_readonly set where they may not write); others left out. */
	nodes(uuids: string[], user: Identity): Promise<TreeNode[]>;
	changed(change: UserMetaChange): Promise<void>;
	/** The nodes among these that may have values (lib/usermeta/valued); absent: all of them are looked up. */
	valued?(uuids: readonly string[]): readonly string[];
	now?: () => number;
}

/** At most this many values per answer (search, bookmarks). */
export const MAX_RESULTS = 1000;

/** A namespace declared without policies: everyone reads its values, administrators write them. */
export function defaultNamespacePolicies(ns: string): ResourcePolicy[] {
	return [
		{ Resource: ns, Action: "READ", Subject: "*", Effect: "allow" },
		{ Resource: ns, Action: "WRITE", Subject: "profile:admin", Effect: "allow" },
	];
}

/** Bookmarks belong to their user only (administrators may clean them up). */
function bookmarkPolicies(user: Identity): ResourcePolicy[] {
	return [
		{ Resource: BOOKMARK, Action: "OWNER", Subject: `user:${user.Uuid}`, Effect: "allow" },
		{ Resource: BOOKMARK, Action: "READ", Subject: `user:${user.Uuid}`, Effect: "allow" },
		{ Resource: BOOKMARK, Action: "WRITE", Subject: `user:${user.Uuid}`, Effect: "allow" },
		{ Resource: BOOKMARK, Action: "WRITE", Subject: "profile:admin", Effect: "allow" },
	];
}

function checkPolicies(ns: string, list: unknown): ResourcePolicy[] {
	if (list === undefined || list === null) return [];
	if (!Array.isArray(list)) throw new BadRequestError("Policies must be an array");
	return list.map((p: ResourcePolicy) => {
		if (!p || typeof p !== "object" || typeof p.Subject !== "string" || !p.Subject) throw new BadRequestError("Every policy needs a Subject");
		const action = p.Action ?? "ANY";
		if (!["ANY", "OWNER", "READ", "WRITE", "EDIT_RULES"].includes(action)) throw new BadRequestError(`Unknown policy Action ${String(action)}`);
		const effect = p.Effect ?? "allow";
		if (effect !== "allow" && effect !== "deny") throw new BadRequestError(`Unknown policy Effect ${String(effect)}`);
		return { Resource: ns, Action: action, Subject: p.Subject, Effect: effect, ...(p.JsonConditions ? { JsonConditions: p.JsonConditions } : {}) };
	});
}

export class UserMetadata {
	private readonly now: () => number;

	constructor(private readonly deps: UserMetaDeps) {
		this.now = deps.now ?? (() => Math.floor(Date.now() / 1000));
	}

	private readable(v: UserMetaValue, user: Identity): boolean {
		return v.Owner ? v.Owner === user.Uuid : hasPolicy(v.Policies, user, "READ");
	}

	private present(v: UserMetaValue, user: Identity, node?: TreeNode): UserMetaOut {
		const out: UserMetaOut = { Uuid: v.Uuid, NodeUuid: v.NodeUuid, Namespace: v.Namespace, JsonValue: v.JsonValue, Policies: v.Policies, PoliciesContextEditable: hasPolicy(v.Policies, user, "WRITE") };
		if (node) out.ResolvedNode = node;
		return out;
	}

	// ---- namespaces ----

	/** Every declared namespace (bookmark is built in and never listed), with whether the caller may edit it. */
	async namespaces(user: Identity): Promise<NamespaceOut[]> {
		return (await this.deps.repo.namespaces()).map((n) => ({ ...n, PoliciesContextEditable: isAdmin(user) }));
	}

	/** PUT declares or replaces namespaces, DELETE removes them with their values and tags: administrators only. */
	async updateNamespaces(user: Identity, operation: "PUT" | "DELETE", list: NamespaceIn[]): Promise<NamespaceOut[]> {
		if (!isAdmin(user)) throw new ForbiddenError("Only administrators can declare or remove metadata namespaces");
		if (!list.length) throw new BadRequestError("Namespaces is empty");
		const out: NamespaceOut[] = [];
		if (operation === "DELETE") {
			for (const n of list) {
				if (n.Namespace === BOOKMARK) throw new ForbiddenError("The bookmark namespace is built in");
				const existing = await this.deps.repo.namespace(String(n.Namespace ?? ""));
				if (!existing) throw new NotFoundError(`Namespace ${String(n.Namespace)} not found`, "namespace.notfound");
				const nodes = await this.deps.repo.deleteNamespace(existing.Namespace);
				if (nodes?.length) await this.deps.changed({ NodeUuids: nodes, Namespaces: [existing.Namespace], Indexable: existing.Indexable });
				out.push({ ...existing, PoliciesContextEditable: true });
			}
			return out;
		}
		// Every namespace is checked before any is written.
		const checked = list.map((n): UserMetaNamespace => {
			const name = checkNamespaceName(n.Namespace);
			const policies = checkPolicies(name, n.Policies);
			if (n.Order !== undefined && (!Number.isInteger(n.Order) || Math.abs(n.Order) > 2 ** 31 - 1)) throw new BadRequestError("Order must be an int32");
			if (n.Label !== undefined && (typeof n.Label !== "string" || n.Label.length > 500)) throw new BadRequestError("Label must be a string of at most 500 characters");
			return {
				Namespace: name,
				Label: n.Label || name,
				Order: n.Order ?? 0,
				Indexable: !!n.Indexable,
				JsonDefinition: checkJsonDefinition(n.JsonDefinition),
				Policies: policies.length ? policies : defaultNamespacePolicies(name),
			};
		});
		for (const n of checked) out.push({ ...(await this.deps.repo.putNamespace(n)), PoliciesContextEditable: true });
		return out;
	}

	private async namespaceFor(name: string): Promise<UserMetaNamespace | "bookmark"> {
		if (name === BOOKMARK) return BOOKMARK;
		if (name === "content_lock") throw new NotSupportedError("Content locks (namespace content_lock) are not supported by this server");
		const ns = await this.deps.repo.namespace(name);
		if (!ns) throw new NotFoundError(`Namespace ${name} not found`, "namespace.notfound");
		return ns;
	}

	// ---- values ----

	/**
	 * PUT or DELETE values. Every item is checked (node readable, and writable unless a bookmark; namespace known and
	 * writable; an existing value writable) before anything is written. DELETE of a value that is not there is a
	 * no-op. Answers the values written or removed.
	 */
	async update(user: Identity, operation: "PUT" | "DELETE", given: UserMetaIn[]): Promise<UserMetaOut[]> {
		if (!given.length) throw new BadRequestError("MetaDatas is empty");
		// A value named by its uuid alone (a DELETE usually) is that stored value's node and namespace.
		const metas: UserMetaIn[] = [];
		for (const m of given) {
			if (m.Uuid && (!m.NodeUuid || !m.Namespace)) {
				const stored = await this.deps.repo.byUuid(m.Uuid);
				if (!stored) throw new NotFoundError(`Meta ${m.Uuid} not found`, "meta.notfound");
				metas.push({ ...m, NodeUuid: m.NodeUuid || stored.NodeUuid, Namespace: m.Namespace || stored.Namespace });
			} else metas.push(m);
		}
		const nodes = new Map((await this.deps.nodes([...new Set(metas.map((m) => String(m.NodeUuid ?? "")).filter(Boolean))], user)).map((n) => [n.Uuid, n]));
		type Planned = { ns: UserMetaNamespace | "bookmark"; node: TreeNode; owner: string; existing: UserMetaValue | null; value?: string };
		const plan: Planned[] = [];
		for (const m of metas) {
			if (!m.NodeUuid) throw new BadRequestError("Every meta needs a NodeUuid");
			if (!m.Namespace) throw new BadRequestError("Every meta needs a Namespace");
			const ns = await this.namespaceFor(m.Namespace);
			const node = nodes.get(m.NodeUuid);
			if (!node) throw new NotFoundError(`Node ${m.NodeUuid} not found`, "node.notfound");
			const bookmark = ns === BOOKMARK;
			if (!bookmark) {
				if (node.MetaStore?.node_readonly === "true") throw new ForbiddenError(`You cannot write on node ${node.Path}`, "node.not.writeable");
				if (!hasPolicy(ns.Policies, user, "WRITE")) throw new ForbiddenError(`You are not allowed to write metadata ${ns.Namespace}`, "meta.not.writeable");
			}
			const owner = bookmark ? user.Uuid : "";
			let existing: UserMetaValue | null;
			if (m.Uuid) {
				existing = await this.deps.repo.byUuid(m.Uuid);
				if (!existing || existing.NodeUuid !== m.NodeUuid || existing.Namespace !== m.Namespace) throw new NotFoundError(`Meta ${m.Uuid} not found on this node and namespace`, "meta.notfound");
			} else existing = await this.deps.repo.at(m.NodeUuid, m.Namespace, owner);
			if (existing && (existing.Owner ? existing.Owner !== user.Uuid : !hasPolicy(existing.Policies, user, "WRITE"))) throw new ForbiddenError(`You are not allowed to modify meta ${existing.Uuid}`, "meta.not.writeable");
			plan.push({ ns, node, owner, existing, value: operation === "PUT" ? checkJsonValue(m.Namespace, m.JsonValue) : undefined });
		}
		const out: UserMetaOut[] = [];
		const now = this.now();
		for (const p of plan) {
			const name = p.ns === BOOKMARK ? BOOKMARK : p.ns.Namespace;
			if (operation === "DELETE") {
				if (p.existing && (await this.deps.repo.delete(p.existing.Uuid))) out.push(this.present(p.existing, user));
				continue;
			}
			const policies = p.ns === BOOKMARK ? bookmarkPolicies(user) : p.ns.Policies;
			const stored = await this.deps.repo.put({ NodeUuid: p.node.Uuid, Namespace: name, Owner: p.owner, JsonValue: p.value as string, Policies: policies, UpdatedAt: now });
			if (p.ns !== BOOKMARK && fieldType(p.ns) === "tags") await this.deps.repo.addTags(name, tagsOf(stored.JsonValue));
			out.push(this.present(stored, user));
		}
		if (out.length) {
			const names = [...new Set(plan.map((p) => (p.ns === BOOKMARK ? BOOKMARK : p.ns.Namespace)))];
			await this.deps.changed({ NodeUuids: [...new Set(out.map((v) => v.NodeUuid))], Namespaces: names, Indexable: plan.some((p) => p.ns !== BOOKMARK && p.ns.Indexable) });
		}
		return out;
	}

	/** The values the user may read on these nodes, as MetaStore entries by node uuid (one query). */
	async valuesFor(user: Identity, nodeUuids: string[]): Promise<Record<string, Record<string, string>>> {
		const out: Record<string, Record<string, string>> = {};
		const asked = [...new Set(nodeUuids)];
		const valued = this.deps.valued ? this.deps.valued(asked) : asked;
		if (!valued.length) return out;
		for (const v of await this.deps.repo.find({ nodeUuids: [...valued], owners: ["", user.Uuid] })) {
			if (!this.readable(v, user)) continue;
			(out[v.NodeUuid] ??= {})[v.Namespace] = v.JsonValue;
		}
		return out;
	}

	/**
	 * Values by uuid, node, namespace and owner, that the caller may read, on nodes the caller may read. Only an
	 * administrator may look at other users' own values (ResourceSubjectOwner, ResourceQuery.Any).
	 */
	async search(user: Identity, q: SearchQuery): Promise<UserMetaOut[]> {
		const admin = isAdmin(user);
		const otherOwner = q.ResourceSubjectOwner && q.ResourceSubjectOwner !== user.Uuid && q.ResourceSubjectOwner !== user.Login;
		if ((otherOwner || q.ResourceQuery?.Any) && !admin) throw new ForbiddenError("Only administrators can search other users' metadata");
		const owners = q.ResourceQuery?.Any ? undefined : q.ResourceSubjectOwner ? [otherOwner ? q.ResourceSubjectOwner : user.Uuid] : ["", user.Uuid];
		const found = await this.deps.repo.find({ uuids: q.MetaUuids?.length ? q.MetaUuids : undefined, nodeUuids: q.NodeUuids?.length ? q.NodeUuids : undefined, namespace: q.Namespace || undefined, owners, limit: MAX_RESULTS });
		const visible = admin ? found : found.filter((v) => this.readable(v, user));
		const nodes = new Set((await this.deps.nodes([...new Set(visible.map((v) => v.NodeUuid))], user)).map((n) => n.Uuid));
		return visible.filter((v) => admin || nodes.has(v.NodeUuid)).map((v) => this.present(v, user));
	}

	/** The caller's bookmarked node uuids, newest first. */
	async bookmarkedUuids(user: Identity, limit = MAX_RESULTS): Promise<string[]> {
		return (await this.deps.repo.find({ namespace: BOOKMARK, owners: [user.Uuid], limit })).map((v) => v.NodeUuid);
	}

	/** The caller's bookmarked nodes they may still read, in user paths, newest bookmark first. */
	async bookmarks(user: Identity): Promise<TreeNode[]> {
		return this.deps.nodes(await this.bookmarkedUuids(user), user);
	}

	/** Nodes whose value in a namespace matches, among the values the caller may read (for search). */
	async nodesMatching(user: Identity, namespace: string, match: { equals?: string; contains?: string }, limit: number): Promise<string[]> {
		if (match.equals === undefined && match.contains === undefined) throw new BadRequestError("Equals or Contains is required");
		const owner = namespace === BOOKMARK ? user.Uuid : "";
		const values = await this.deps.repo.matching(namespace, match, owner || user.Uuid, limit);
		return [...new Set(values.filter((v) => this.readable(v, user)).map((v) => v.NodeUuid))];
	}

	// ---- tags ----

	async tags(namespace: string): Promise<string[]> {
		const ns = await this.namespaceFor(namespace);
		if (ns === BOOKMARK) throw new BadRequestError("Bookmarks have no tags");
		return this.deps.repo.tags(ns.Namespace);
	}

	/** Adds a tag to a namespace's list: whoever may write values of the namespace. */
	async addTag(user: Identity, namespace: string, tag: unknown): Promise<void> {
		const ns = await this.namespaceFor(namespace);
		if (ns === BOOKMARK) throw new BadRequestError("Bookmarks have no tags");
		if (!hasPolicy(ns.Policies, user, "WRITE")) throw new ForbiddenError(`You are not allowed to write metadata ${ns.Namespace}`, "meta.not.writeable");
		await this.deps.repo.addTags(ns.Namespace, [checkTag(tag)]);
	}

	/** Clears a namespace's tag list (`*`, the only value Cells supports): administrators only. */
	async clearTags(user: Identity, namespace: string, tags: string): Promise<void> {
		if (!isAdmin(user)) throw new ForbiddenError("Only administrators can delete tags");
		const ns = await this.namespaceFor(namespace);
		if (ns === BOOKMARK) throw new BadRequestError("Bookmarks have no tags");
		if (tags !== "*") throw new BadRequestError('Only "*" (every tag of the namespace) can be deleted');
		await this.deps.repo.clearTags(ns.Namespace);
	}
}
