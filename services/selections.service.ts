/**
 * selections — `POST /tree/selection`: a list of nodes saved under a uuid, for multi-file actions; the /io
 * gateway streams a selection as one zip (`GET /io/<workspace>/<any-name>-<SelectionUUID>.zip`). Selections
 * belong to their creator and expire after a day. Emits and consumes nothing.
 */
import type { Context, ServiceSchema } from "moleculer";
import { randomUUID } from "node:crypto";
import { DbMixin, type Doc, type Store } from "../mixins/db.mixin";
import { BadRequestError, NotFoundError } from "../lib/errors";
import type { Meta } from "../lib/auth/identity";
import { requireUser } from "../lib/identity/resource-policy";
import type { TreeNode } from "../lib/tree/model";

interface SelectionDoc extends Doc {
	owner: string;
	paths: string[];
	action?: string;
	expires: number;
}

const TTL_SECONDS = 24 * 3600;

const SelectionsService: ServiceSchema = {
	name: "selections",
	mixins: [DbMixin("selections")],
	settings: { rest: "/" },
	actions: {
		create: {
			rest: "POST /tree/selection",
			params: {
				Nodes: { type: "array", items: { type: "object", props: { Path: { type: "string", min: 1, max: 8192 } } }, min: 1, max: 10_000 },
				Persist: { type: "boolean", optional: true },
				TargetAction: { type: "string", optional: true, max: 128 },
			},
			async handler(ctx: Context<{ Nodes: { Path: string }[]; TargetAction?: string }, Meta>) {
				const user = requireUser(ctx);
				const paths = [...new Set(ctx.params.Nodes.map((n) => n.Path.replace(/\/$/, "")))];
				// Every node must exist and be readable by the caller now.
				const nodes: TreeNode[] = [];
				for (const p of paths) {
					const r: { Node: TreeNode } = await ctx.call("tree.stat", { Node: p });
					nodes.push(r.Node);
				}
				const doc: SelectionDoc = { _id: randomUUID(), owner: user.Uuid, paths, expires: Math.floor(Date.now() / 1000) + TTL_SECONDS };
				if (ctx.params.TargetAction) doc.action = ctx.params.TargetAction;
				await (this.store as Store<SelectionDoc>).insert(doc);
				return { SelectionUUID: doc._id, Nodes: nodes };
			},
		},
		get: {
			retryPolicy: { enabled: true },
			params: { uuid: { type: "string", max: 64 } },
			async handler(ctx: Context<{ uuid: string }, Meta>) {
				const user = requireUser(ctx);
				const doc = await (this.store as Store<SelectionDoc>).get(ctx.params.uuid);
				if (!doc || doc.owner !== user.Uuid || doc.expires < Date.now() / 1000) throw new NotFoundError("No such selection", "selection.notfound");
				if (!doc.paths.length) throw new BadRequestError("Empty selection");
				return { paths: doc.paths };
			},
		},
	},
	async started() {
		const sweep = () => (this.store as Store<SelectionDoc>).removeMany({ expires: { $lt: Math.floor(Date.now() / 1000) } }).catch(() => 0);
		await sweep();
		this.sweeper = setInterval(sweep, 3600_000);
		this.sweeper.unref?.();
	},
	stopped() {
		clearInterval(this.sweeper);
	},
};

export = SelectionsService;
