// graph — relations between the caller and other users, their workspace state, and node recommendations
// (services/graph.service.ts). `graph.recommend` is also what a home page of the web front end asks.
import type { TreeNode } from "../tree/model";

export type RecommendCategory = "recent" | "bookmark" | "shared";

export interface GraphActions {
	/** Nodes for the caller: bookmarked, recently modified, and roots of the cells they belong to (Category: one of them). */
	"graph.recommend": { params: { Category?: string; Limit?: number; Segment?: string; Neighbor?: string }; result: { Nodes?: TreeNode[] } };
}
