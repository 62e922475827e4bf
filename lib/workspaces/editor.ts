// Writing workspaces: who may create or edit one, what a PUT /workspace/<slug> means (an update of the workspace
// that slug or UUID names, else a creation), slugs, default policies, and the ACLs that hold roots and default
// rights. The record store (lib/db/workspaces), the ACL service and the change broadcast are injected.
// A slug is unique by the store's index, not by the read that chose it: a creation that loses it to a
// concurrent one (ConflictError) is done again, and then finds that workspace or takes the next free slug.
import { randomUUID } from "node:crypto";
import { isAdmin, type Identity } from "../auth/identity";
import { checkId } from "../acl/model";
import { BadRequestError, ConflictError, ForbiddenError, NotFoundError } from "../errors";
import { defaultPolicies, hasPolicy, type ResourcePolicy } from "../identity/resource-policy";
import {
	DEFAULT_WORKSPACES,
	MAX_DESCRIPTION,
	MAX_LABEL,
	checkSlugInput,
	checkText,
	dedupSlug,
	parseAttributes,
	requestedRoots,
	slugify,
	type Workspace,
	type WorkspaceDoc,
} from "./model";
import { syncWorkspaceAcls, type AclClient } from "./roots";

export interface WorkspaceStore {
	byId(uuid: string): Promise<WorkspaceDoc | null>;
	bySlug(slug: string): Promise<WorkspaceDoc | null>;
	slugsLike(base: string): Promise<Set<string>>;
	create(w: WorkspaceDoc): Promise<WorkspaceDoc>;
	update(w: WorkspaceDoc): Promise<WorkspaceDoc | null>;
	delete(uuid: string): Promise<boolean>;
}

export type PutWorkspace = Workspace & { Slug: string };

/** Creations lost to concurrent ones before giving up with the ConflictError (each loss is another's win). */
const MAX_ATTEMPTS = 25;

export class WorkspaceEditor {
	constructor(
		private readonly store: WorkspaceStore,
		private readonly acl: AclClient,
		/** Announces a change (the service broadcasts identity.changed); no uuid: several workspaces. */
		private readonly changed: (uuid?: string) => Promise<void>,
		private readonly now: () => number = () => Math.floor(Date.now() / 1000),
	) {}

	async bySlugOrUuid(key: string): Promise<WorkspaceDoc | null> {
		return (await this.store.bySlug(key)) ?? (await this.store.byId(key));
	}

	/** Creates or updates; the stored workspace. */
	async put(user: Identity, p: PutWorkspace): Promise<WorkspaceDoc> {
		for (let attempt = 1; ; attempt++) {
			try {
				return await this.putOnce(user, p);
			} catch (err) {
				if (!(err instanceof ConflictError) || attempt >= MAX_ATTEMPTS) throw err;
				await new Promise((r) => setTimeout(r, Math.random() * 5 * attempt));
			}
		}
	}

	private async putOnce(user: Identity, p: PutWorkspace): Promise<WorkspaceDoc> {
		const pathSlug = checkSlugInput(p.Slug);
		const uuid = checkId("UUID", p.UUID);
		const existing = uuid ? await this.store.byId(uuid) : pathSlug ? await this.store.bySlug(pathSlug) : null;
		if (existing) {
			if (!hasPolicy(existing.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this workspace");
		} else if (!isAdmin(user)) {
			throw new ForbiddenError("Only administrators can create workspaces");
		}

		const label = p.Label !== undefined ? checkText("Label", p.Label, MAX_LABEL).trim() : existing?.Label ?? "";
		if (!label) throw new BadRequestError("Label is required");
		const description = p.Description !== undefined ? checkText("Description", p.Description, MAX_DESCRIPTION) : existing?.Description ?? "";
		const scope = p.Scope && p.Scope !== "ANY" ? p.Scope : existing?.Scope ?? "ADMIN";
		const attrs = parseAttributes(p.Attributes);
		const roots = requestedRoots(p);
		const id = existing?.UUID ?? (uuid || randomUUID());

		let slug = existing?.Slug ?? "";
		const wanted = slugify(pathSlug || label) || "workspace";
		if (!existing || (pathSlug && wanted !== existing.Slug && pathSlug !== existing.Slug)) {
			const taken = await this.store.slugsLike(wanted);
			if (existing) taken.delete(existing.Slug);
			// The workspace this PUT names was created since it was looked for: done again, the PUT updates it.
			if (!existing && !uuid && pathSlug === wanted && taken.has(wanted)) throw new ConflictError("A workspace with this slug was just created", "workspace.exists");
			// Only a choice: the slug's unique index decides.
			slug = dedupSlug(wanted, (s) => taken.has(s));
		}

		let policies: ResourcePolicy[];
		if (p.Policies?.length) policies = p.Policies.map((pol) => ({ ...pol, Resource: id }));
		else policies = existing?.Policies ?? defaultPolicies(id, ["profile:standard", "profile:shared"], ["profile:admin"]);

		const doc: WorkspaceDoc = {
			UUID: id,
			Slug: slug,
			Label: label,
			Description: description,
			Scope: scope,
			LastUpdated: this.now(),
			Policies: policies,
			// Attributes not sent on an update are kept as they were.
			Attributes: p.Attributes !== undefined ? JSON.stringify(attrs.rest) : existing?.Attributes ?? "{}",
		};
		if (existing) {
			if (!(await this.store.update(doc))) throw new NotFoundError(`Workspace ${existing.Slug} not found`, "workspace.notfound");
		} else await this.store.create(doc);
		await syncWorkspaceAcls(this.acl, { workspaceId: id, roots, defaultRights: attrs.defaultRights, quota: attrs.quota });
		await this.changed(id);
		const stored = await this.store.byId(id);
		if (!stored) throw new NotFoundError(`Workspace ${slug} not found`, "workspace.notfound");
		return stored;
	}

	/** Deletes the workspace a slug (or UUID) names, with its ACLs. */
	async remove(user: Identity, key: string): Promise<void> {
		const slug = checkSlugInput(key);
		const doc = await this.bySlugOrUuid(slug);
		if (!doc) throw new NotFoundError(`Workspace ${slug} not found`, "workspace.notfound");
		if (!hasPolicy(doc.Policies, user, "WRITE")) throw new ForbiddenError("You are not allowed to edit this workspace");
		await this.store.delete(doc.UUID);
		await this.acl.deleteWhere({ WorkspaceID: doc.UUID });
		await this.changed(doc.UUID);
	}

	/** Cells' default workspaces, each created once; the slugs created by this call. */
	async ensureDefaults(): Promise<string[]> {
		const created: string[] = [];
		for (const def of DEFAULT_WORKSPACES) {
			if (await this.store.byId(def.UUID)) continue;
			// A workspace an administrator made with that slug stands for the default.
			if (await this.store.bySlug(def.Slug)) continue;
			// ACLs first: a crash before the record is written leaves a retry that redoes them (idempotent).
			await syncWorkspaceAcls(this.acl, { workspaceId: def.UUID, roots: [def.root], defaultRights: def.defaultRights });
			try {
				await this.store.create({
					UUID: def.UUID,
					Slug: def.Slug,
					Label: def.Label,
					Description: def.Description,
					Scope: "ADMIN",
					LastUpdated: this.now(),
					Policies: defaultPolicies(def.UUID, ["profile:standard", "profile:shared"], ["profile:admin"]),
					Attributes: "{}",
				});
				created.push(def.Slug);
			} catch (err) {
				// Another node put it (or a workspace with its slug) in place meanwhile: that one stands.
				if (!(err instanceof ConflictError)) throw err;
			}
		}
		if (created.length) await this.changed();
		return created;
	}
}
