/**
 * templates — `GET /templates`: the document templates a user can create a file from (empty Word, Excel,
 * PowerPoint, OpenDocument, text and Markdown files, lib/templates). Stateless: the templates are built in
 * code, and the tree service reads them from the same library when it creates a file from one
 * (`POST /tree/create` with TemplateUUID). Emits and consumes nothing.
 */
import type { Context, ServiceSchema, ServiceSettingSchema } from "moleculer";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import { listTemplates } from "../lib/templates";

// No methods, no state: `this` is a plain Service, so a stray `this.x` fails to compile.
const TemplatesService: ServiceSchema<ServiceSettingSchema, object, object> = {
	name: "templates",
	settings: { rest: "/" },
	actions: {
		list: {
			rest: "GET /templates",
			params: { TemplateType: { type: "string", optional: true, max: 64 } },
			handler(ctx: Context<{ TemplateType?: string }, Meta>) {
				requireUser(ctx);
				return { Templates: listTemplates(ctx.params.TemplateType) };
			},
		},
	},
};

export = TemplatesService;
