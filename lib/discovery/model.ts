// The registry as discovery reads it: the few fields of Moleculer's node and service lists it uses (typed here,
// so the services hand plain registry data to the pure functions of lib/discovery).

export interface RegistryAction {
	name: string;
	rawName?: string;
	rest?: unknown;
	params?: Record<string, unknown>;
	visibility?: string;
}

export interface RegistryService {
	name: string;
	version?: string | number;
	fullName?: string;
	settings?: Record<string, unknown>;
	metadata?: Record<string, unknown>;
	/** With grouping. */
	nodes?: string[];
	nodeID?: string;
	available?: boolean;
	actions?: Record<string, RegistryAction>;
}

export interface RegistryNode {
	id: string;
	available: boolean;
	local?: boolean;
	hostname?: string;
	ipList?: string[];
	cpu?: number | null;
	client?: { type?: string; version?: string; langVersion?: string };
	services?: { name: string; version?: string | number }[];
	instanceID?: string;
	lastHeartbeatTime?: number;
}

/** What a node says about itself (discovery.nodeInfo, called on that node). */
export interface NodeInfo {
	NodeId: string;
	Hostname: string;
	Addresses: string[];
	Pid: number;
	ParentPid: number;
	/** Seconds since the process started. */
	Uptime: number;
	/** Bytes. */
	MemoryRss: number;
	MemoryHeapUsed: number;
	MemoryTotal: number;
	MemoryFree: number;
	/** 1-minute load average / cores, in percent (0-100+). */
	CpuLoad: number;
	Cores: number;
	Version: string;
	NodeVersion: string;
	LogLevel: string;
	StartTag: string;
	/** The services this node runs (its local registry). */
	Services: string[];
}
