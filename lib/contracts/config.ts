// config and discovery — internal actions (a value of the configuration tree; what a node says about itself, its
// folders and its services, each called on that node with the `nodeID` option) and the `config.changed` event.
import type { Json } from "../config-tree/tree";
import type { FolderListing, FolderNode } from "../discovery/folders";
import type { NodeInfo } from "../discovery/model";

export interface ConfigActions {
	/** The value at a path of the configuration tree (null: nothing there). */
	"config.get": { params: { Path: string }; result: Json | null };
	/** PUT /config/{FullPath} (administrators): validates, stores, then broadcasts `config.changed`. */
	"config.putConfig": { params: { FullPath: string; Data: string }; result: { FullPath: string; Data: string } };
	/** On the node it is called on (nodeID option). */
	"discovery.nodeInfo": { params: Record<string, never>; result: NodeInfo };
	"discovery.listFolders": { params: { Path: string }; result: FolderListing };
	"discovery.createFolder": { params: { Path: string }; result: FolderNode };
	/** Starts or stops a service on the node it is called on; the services that node runs afterwards. */
	"discovery.control": { params: { ServiceName: string; Command: "START" | "STOP" }; result: { Services: string[] } };
}

/** `config.changed`: the subtree at Path was replaced (every node re-reads what it applies from there). */
export interface ConfigChange {
	Path: string;
	Author: string;
}

export interface ConfigEvents {
	"config.changed": ConfigChange;
}
