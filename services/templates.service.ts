/**
 * templates — `GET /templates`: the templates a user can create from: the built-in document templates (empty
 * Word, Excel, PowerPoint, OpenDocument, text and Markdown files, lib/templates), then the node templates admins
 * made. Admin writes (Cells enterprise): `POST /templates/node` copies a file or a folder tree into a node
 * template (bytes in the store, lib/templates/nodes), `DELETE /templates/node/{TemplateUuid}` (built-ins are
 * refused); metadata templates `GET|PUT /templates/meta`, `DELETE /templates/meta/{TemplateUuid}` (named sets of
 * user-metadata namespaces). The tree service reads the same store when it creates a node from a template
 * (`POST /tree/create` with TemplateUUID). Reads node bytes through the datastores mixin, never over the
 * transporter. Emits `audit.log` (template.update, template.delete) after each write; consumes only the mixins'
 * `datasources.changed`/`encryption.changed`.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin, requireUser } from "../lib/identity/resource-policy";
import { policiesParam as policies } from "../lib/identity/policy-params";
import { NodesRepo, TemplatesRepo, UserMetaRepo } from "../lib/db";
import { TreeIndex } from "../lib/tree/index";
import { TemplatesCatalog } from "../lib/templates/catalog";
import type { MetaTemplate } from "../lib/templates/model";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { audit } from "../lib/logs/audit";
import { DataStoresMixin, type DataStoresMethods } from "../mixins/datastores.mixin";

const uuid = { type: "string", min: 1, max: 255 } as const;

interface Vars extends DatabaseVars {
	catalog: TemplatesCatalog;
}
type This = Service & Vars & DataStoresMethods;

const TemplatesService: ServiceSchema<ServiceSettingSchema, DataStoresMethods, Vars> = {
	name: "templates",
	mixins: [DatabaseMixin, DataStoresMixin],
	settings: { rest: "/" },
	actions: {
		list: {
			read: true,
			rest: "GET /templates",
			params: { TemplateType: { type: "string", optional: true, max: 64 } },
			async handler(this: This, ctx: Context<{ TemplateType?: string }, Meta>) {
				return { Templates: await this.catalog.list(requireUser(ctx), ctx.params.TemplateType) };
			},
		},
		createNode: {
			rest: "POST /templates/node",
			params: { RefNodeUuid: { type: "string", optional: true, max: 255 }, TplLabel: { type: "string", optional: true, max: 255 }, Policies: policies },
			async handler(this: This, ctx: Context<{ RefNodeUuid?: string; TplLabel?: string; Policies?: MetaTemplate["Policies"] }, Meta>) {
				const admin = requireAdmin(ctx);
				const id = await this.catalog.createNodeTemplate(ctx.params.RefNodeUuid ?? "", ctx.params.TplLabel, ctx.params.Policies ?? [], admin.Login);
				audit(ctx, "template.update", { target: `node template ${ctx.params.TplLabel ?? ""}`.trim(), targetUuid: id, detail: `from node ${ctx.params.RefNodeUuid}` });
				return { Success: true, TemplateUuid: id };
			},
		},
		deleteNode: {
			rest: "DELETE /templates/node/:TemplateUuid",
			params: { TemplateUuid: uuid },
			async handler(this: This, ctx: Context<{ TemplateUuid: string }, Meta>) {
				requireAdmin(ctx);
				await this.catalog.deleteNodeTemplate(ctx.params.TemplateUuid);
				audit(ctx, "template.delete", { target: "node template", targetUuid: ctx.params.TemplateUuid });
				return { Success: true };
			},
		},
		listMeta: {
			rest: "GET /templates/meta",
			params: { Namespace: { type: "string", optional: true, max: 128 } },
			async handler(this: This, ctx: Context<{ Namespace?: string }, Meta>) {
				return { Templates: await this.catalog.metaTemplates(requireUser(ctx), ctx.params.Namespace) };
			},
		},
		putMeta: {
			rest: "PUT /templates/meta",
			params: {
				Uuid: { type: "string", optional: true, max: 255 },
				Template: {
					type: "object",
					optional: true,
					props: {
						Uuid: { type: "string", optional: true, max: 255 },
						Label: { type: "string", optional: true, max: 255 },
						Namespace: { type: "string", optional: true, max: 128 },
						Meta: { type: "string", optional: true, max: 65536 },
						Policies: policies,
					},
				},
			},
			async handler(this: This, ctx: Context<{ Uuid?: string; Template?: Partial<MetaTemplate> }, Meta>) {
				requireAdmin(ctx);
				const Template = await this.catalog.putMetaTemplate(ctx.params.Template ?? {}, ctx.params.Uuid);
				audit(ctx, "template.update", { target: `metadata template ${Template.Label}`, targetUuid: Template.Uuid });
				return { Template };
			},
		},
		deleteMeta: {
			rest: "DELETE /templates/meta/:TemplateUuid",
			params: { TemplateUuid: uuid },
			async handler(this: This, ctx: Context<{ TemplateUuid: string }, Meta>) {
				requireAdmin(ctx);
				await this.catalog.deleteMetaTemplate(ctx.params.TemplateUuid);
				audit(ctx, "template.delete", { target: "metadata template", targetUuid: ctx.params.TemplateUuid });
				return { Success: true };
			},
		},
	},
	async started(this: This) {
		const users = new UserMetaRepo(this.db);
		const index = new TreeIndex(new NodesRepo(this.db));
		this.catalog = new TemplatesCatalog({
			repo: new TemplatesRepo(this.db),
			snapshot: { index, datasource: (name) => this.dataStore(name) },
			namespaces: async () => (await users.namespaces()).map((n) => n.Namespace),
		});
	},
};

export = TemplatesService;
