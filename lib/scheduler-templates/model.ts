// The scheduler's templates as Cells writes them (entActionTemplate, entSelectorTemplate, jobsJob), as the gateway
// hands them over after its codec (int64 as numbers, enums as names, unknown fields refused). Only the fields this
// server reads are typed; the rest of a Cells message is kept as it came.
import type { TreeQuery } from "../search/query";

export interface SelectorRange {
	Limit?: string;
	Offset?: string;
	OrderBy?: string;
	OrderDir?: string;
}

/** serviceQuery: its SubQueries are protobuf Any, `tree.Query` ones for nodes. */
export interface ServiceQuery {
	Operation?: "OR" | "AND";
	SubQueries?: (TreeQuery & { "@type"?: string })[];
	Limit?: number;
	Offset?: number;
	[field: string]: unknown;
}

/** jobsNodesSelector, used as a selector (collect nodes) or as a filter (keep the input nodes that match). */
export interface NodesSelector {
	All?: boolean;
	Pathes?: string[];
	Query?: ServiceQuery;
	Range?: SelectorRange;
	Label?: string;
	Description?: string;
	FanOutInput?: boolean;
	ClearInput?: boolean;
	Collect?: boolean;
	Timeout?: string;
}

export interface JobAction {
	ID?: string;
	Label?: string;
	Description?: string;
	Parameters?: Record<string, string>;
	NodesSelector?: NodesSelector;
	NodesFilter?: NodesSelector;
	ChainedActions?: JobAction[];
	FailedFilterActions?: JobAction[];
	MergeAction?: JobAction;
	[field: string]: unknown;
}

export interface Job {
	ID?: string;
	Label?: string;
	Actions?: JobAction[];
	MergeAction?: JobAction;
	NodeEventFilter?: NodesSelector;
	[field: string]: unknown;
}

export interface ActionTemplate {
	Name: string;
	Action: JobAction;
}

/** The selector kinds an entSelectorTemplate may hold (one of them). */
export const SELECTOR_FIELDS = ["NodesSelector", "IdmSelector", "DataSourceSelector", "ActionOutputFilter", "ContextMetaFilter", "TriggerFilter"] as const;
export type SelectorField = (typeof SELECTOR_FIELDS)[number];

export type SelectorTemplate = { Name: string; Label?: string; Description?: string; AsFilter?: boolean; NodesSelector?: NodesSelector } & Partial<Record<Exclude<SelectorField, "NodesSelector">, Record<string, unknown>>>;
