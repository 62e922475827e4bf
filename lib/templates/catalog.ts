// What GET /a/templates lists (the built-in document templates, then the node templates admins made) and the
// admin operations on templates: node templates made from a node and deleted, metadata templates put, listed
// and deleted. The built-ins live in code and cannot be deleted.
import { randomUUID } from "node:crypto";
import { BadRequestError, ForbiddenError, NotFoundError } from "../errors";
import type { ResourcePolicy } from "../identity/resource-policy";
import type { TemplatesRepo } from "../db/templates";
import { getTemplate, listTemplates, DOCUMENT, type RestTemplate } from "./index";
import { snapshotNode, type SnapshotDeps } from "./nodes";
import { usableBy, type MetaTemplate, type NodeTemplate, type NodeTemplateEntry } from "./model";
import type { Identity } from "../auth/identity";

/** A node template as Cells' restTemplate: its root node and, for a folder, the nodes right under it. */
export interface RestNodeTemplate {
	UUID: string;
	Label: string;
	Editable: boolean;
	Node: { Node: { Uuid: string; Path: string; Type: "LEAF" | "COLLECTION"; Size: string }; Children?: Record<string, { Path: string; Type: "LEAF" | "COLLECTION"; Size: string }> };
	Policies?: ResourcePolicy[];
}

export interface CatalogDeps {
	repo: TemplatesRepo;
	snapshot: SnapshotDeps;
	/** The user-metadata namespaces that exist. */
	namespaces: () => Promise<string[]>;
	now?: () => number;
}

export function present(t: NodeTemplate, entries: NodeTemplateEntry[]): RestNodeTemplate {
	const children = entries.filter((e) => e.path !== "" && !e.path.includes("/"));
	return {
		UUID: t.uuid,
		Label: t.label,
		Editable: true,
		Node: {
			Node: { Uuid: t.uuid, Path: t.name, Type: t.type, Size: String(t.size) },
			...(t.type === "COLLECTION" && children.length ? { Children: Object.fromEntries(children.map((c) => [c.path, { Path: `${t.name}/${c.path}`, Type: c.type, Size: String(c.size) }])) } : {}),
		},
		...(t.policies.length ? { Policies: t.policies } : {}),
	};
}

/** Cells' metadata template definition: a JSON value; when it is a list, of namespaces (names or {Namespace}). */
function namespacesOf(meta: string): string[] {
	let value: unknown;
	try {
		value = JSON.parse(meta);
	} catch {
		throw new BadRequestError("Template.Meta must be a JSON document");
	}
	if (!Array.isArray(value)) return [];
	return value.map((v) => {
		if (typeof v === "string") return v;
		if (v && typeof v === "object" && typeof (v as { Namespace?: unknown }).Namespace === "string") return (v as { Namespace: string }).Namespace;
		throw new BadRequestError("Template.Meta lists namespaces: names, or objects with a Namespace");
	});
}

export class TemplatesCatalog {
	constructor(private readonly deps: CatalogDeps) {}

	async list(user: Identity, type?: string): Promise<(RestTemplate | RestNodeTemplate)[]> {
		const builtIn = listTemplates(type);
		if (type && type.toUpperCase() !== DOCUMENT) return builtIn;
		const made = (await this.deps.repo.nodeTemplates()).filter((t) => usableBy(t.policies, user));
		const out: (RestTemplate | RestNodeTemplate)[] = [...builtIn];
		for (const t of made) out.push(present(t, t.type === "COLLECTION" ? await this.deps.repo.nodeTemplateEntries(t.uuid, false) : []));
		return out;
	}

	async createNodeTemplate(refNodeUuid: string, label: string | undefined, policies: ResourcePolicy[], by: string): Promise<string> {
		if (!refNodeUuid) throw new BadRequestError("RefNodeUuid is required");
		const { template, entries } = await snapshotNode(this.deps.snapshot, refNodeUuid, (label ?? "").trim(), policies, by, this.now());
		await this.deps.repo.createNodeTemplate(template, entries);
		return template.uuid;
	}

	async deleteNodeTemplate(uuid: string): Promise<void> {
		if (getTemplate(uuid)) throw new ForbiddenError(`Template ${uuid} is built in and cannot be deleted`, "template.builtin");
		if (!(await this.deps.repo.deleteNodeTemplate(uuid))) throw new NotFoundError(`template ${uuid} not found`, "template.notfound");
	}

	async metaTemplates(user: Identity, namespace?: string): Promise<MetaTemplate[]> {
		return (await this.deps.repo.metaTemplates(namespace || undefined)).filter((t) => usableBy(t.Policies, user));
	}

	async putMetaTemplate(input: Partial<MetaTemplate>, uuid?: string): Promise<MetaTemplate> {
		const label = (input.Label ?? "").trim();
		if (!label) throw new BadRequestError("Template.Label is required");
		const meta = input.Meta ?? "";
		const named = meta ? namespacesOf(meta) : [];
		const ns = (input.Namespace ?? "").trim();
		if (named.length || ns) {
			const known = new Set(await this.deps.namespaces());
			const unknown = [...named, ...(ns ? [ns] : [])].filter((n) => !known.has(n));
			if (unknown.length) throw new BadRequestError(`Unknown metadata namespace(s): ${[...new Set(unknown)].join(", ")}`);
		}
		const id = uuid || input.Uuid || randomUUID();
		return this.deps.repo.putMetaTemplate({ Uuid: id, Label: label, Namespace: ns, Meta: meta, Policies: input.Policies ?? [] }, this.now());
	}

	async deleteMetaTemplate(uuid: string): Promise<void> {
		if (!(await this.deps.repo.deleteMetaTemplate(uuid))) throw new NotFoundError(`metadata template ${uuid} not found`, "template.notfound");
	}

	private now(): number {
		return this.deps.now ? this.deps.now() : Date.now();
	}
}
