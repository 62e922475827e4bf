/**
 * scheduler-templates — the enterprise scheduler's templates, for administrators: job templates
 * (`POST /scheduler/templates/jobs` lists, `PUT|DELETE /scheduler/templates/jobs/{Name}`), action templates and
 * selector templates (`PUT` stores, `POST` lists, `DELETE …/{TemplateName}`), their documentation
 * (`GET /scheduler/templates/docs/{Type}`: selectors' fields, actions with their parameters) and the playground
 * (`POST /scheduler/templates/playground`: a nodes selector or filter tried on sample nodes, or on the tree as the
 * caller reads it through `tree.stats`). Internal: `scheduler-templates.job` (a job template by name). Emits
 * `audit.log` (template.update, template.delete) after each write; consumes no event.
 */

import type { Context, Service, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireAdmin } from "../lib/identity/resource-policy";
import { SchedulerTemplatesRepo } from "../lib/db";
import { call } from "../lib/contracts";
import { SchedulerTemplates } from "../lib/scheduler-templates/templates";
import { docTemplates } from "../lib/scheduler-templates/docs";
import { runPlayground, type PlaygroundRequest } from "../lib/scheduler-templates/playground";
import type { ActionTemplate, Job, SelectorTemplate } from "../lib/scheduler-templates/model";
import { DatabaseMixin, type DatabaseVars } from "../mixins/database.mixin";
import { audit } from "../lib/logs/audit";

const name = { type: "string", min: 1, max: 255 } as const;
const message = { type: "object", optional: true } as const;

interface Vars extends DatabaseVars {
	templates: SchedulerTemplates;
}
type This = Service & Vars;

const SchedulerTemplatesService: ServiceSchema<ServiceSettingSchema, Record<string, never>, Vars> = {
	name: "scheduler-templates",
	mixins: [DatabaseMixin],
	settings: { rest: "/" },
	actions: {
		listJobs: {
			read: true,
			rest: "POST /scheduler/templates/jobs",
			params: { All: { type: "boolean", optional: true } },
			async handler(this: This, ctx: Context<{ All?: boolean }, Meta>) {
				requireAdmin(ctx);
				return { Jobs: await this.templates.listJobs() };
			},
		},
		putJob: {
			rest: "PUT /scheduler/templates/jobs/:Name",
			params: { Name: name, Job: message },
			async handler(this: This, ctx: Context<{ Name: string; Job?: Job }, Meta>) {
				const admin = requireAdmin(ctx);
				const Job = await this.templates.putJob(ctx.params.Name, ctx.params.Job, admin.Login);
				audit(ctx, "template.update", { target: `job template ${Job.ID}` });
				return { Job };
			},
		},
		deleteJob: {
			rest: "DELETE /scheduler/templates/jobs/:Name",
			params: { Name: name },
			async handler(this: This, ctx: Context<{ Name: string }, Meta>) {
				requireAdmin(ctx);
				await this.templates.deleteJob(ctx.params.Name);
				audit(ctx, "template.delete", { target: `job template ${ctx.params.Name}` });
				return { Success: true };
			},
		},
		job: {
			read: true,
			params: { Name: name },
			async handler(this: This, ctx: Context<{ Name: string }, Meta>) {
				return { Job: await this.templates.job(ctx.params.Name) };
			},
		},
		listActions: {
			read: true,
			rest: "POST /scheduler/templates/actions",
			params: { All: { type: "boolean", optional: true } },
			async handler(this: This, ctx: Context<{ All?: boolean }, Meta>) {
				requireAdmin(ctx);
				return { Templates: await this.templates.listActions() };
			},
		},
		putAction: {
			rest: "PUT /scheduler/templates/actions",
			params: { Template: message },
			async handler(this: This, ctx: Context<{ Template?: Partial<ActionTemplate> }, Meta>) {
				const admin = requireAdmin(ctx);
				const Template = await this.templates.putAction(ctx.params.Template, admin.Login);
				audit(ctx, "template.update", { target: `action template ${Template.Name}` });
				return { Template };
			},
		},
		deleteAction: {
			rest: "DELETE /scheduler/templates/actions/:TemplateName",
			params: { TemplateName: name },
			async handler(this: This, ctx: Context<{ TemplateName: string }, Meta>) {
				requireAdmin(ctx);
				await this.templates.deleteAction(ctx.params.TemplateName);
				audit(ctx, "template.delete", { target: `action template ${ctx.params.TemplateName}` });
				return { Success: true };
			},
		},
		listSelectors: {
			read: true,
			rest: "POST /scheduler/templates/selectors",
			params: { Filter: { type: "string", optional: true, max: 128 } },
			async handler(this: This, ctx: Context<{ Filter?: string }, Meta>) {
				requireAdmin(ctx);
				return { Templates: await this.templates.listSelectors(ctx.params.Filter) };
			},
		},
		putSelector: {
			rest: "PUT /scheduler/templates/selectors",
			params: { Template: message },
			async handler(this: This, ctx: Context<{ Template?: Partial<SelectorTemplate> }, Meta>) {
				const admin = requireAdmin(ctx);
				const t = await this.templates.putSelector(ctx.params.Template, admin.Login);
				audit(ctx, "template.update", { target: `selector template ${t.Name}` });
				return { Success: true };
			},
		},
		deleteSelector: {
			rest: "DELETE /scheduler/templates/selectors/:TemplateName",
			params: { TemplateName: name },
			async handler(this: This, ctx: Context<{ TemplateName: string }, Meta>) {
				requireAdmin(ctx);
				await this.templates.deleteSelector(ctx.params.TemplateName);
				audit(ctx, "template.delete", { target: `selector template ${ctx.params.TemplateName}` });
				return { Success: true };
			},
		},
		docs: {
			read: true,
			rest: "GET /scheduler/templates/docs/:Type",
			params: { Type: { type: "string", min: 1, max: 128 } },
			async handler(this: This, ctx: Context<{ Type: string }, Meta>) {
				requireAdmin(ctx);
				return docTemplates(ctx.params.Type);
			},
		},
		playground: {
			read: true,
			rest: "POST /scheduler/templates/playground",
			params: { Code: { type: "string", optional: true }, CodeMime: { type: "string", optional: true, max: 255 }, Input: message, LastOutputJsonBody: { type: "string", optional: true } },
			async handler(this: This, ctx: Context<PlaygroundRequest, Meta>) {
				requireAdmin(ctx);
				return runPlayground(ctx.params, {
					// The caller's view of the tree: their workspaces and rights, as a listing of theirs would show.
					nodesAt: async (paths) => (await call(ctx, "tree.stats", { NodePaths: paths, Limit: 1000 })).Nodes ?? [],
				});
			},
		},
	},
	async started(this: This) {
		this.templates = new SchedulerTemplates({ repo: new SchedulerTemplatesRepo(this.db) });
	},
};

export = SchedulerTemplatesService;
