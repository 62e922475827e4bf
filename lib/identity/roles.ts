// A role as stored and shown (idmRole).
import type { ResourcePolicy } from "./resource-policy";

export interface Role {
	Uuid: string;
	Label: string;
	IsTeam?: boolean;
	GroupRole?: boolean;
	UserRole?: boolean;
	AutoApplies?: string[];
	ForceOverride?: boolean;
	Policies?: ResourcePolicy[];
	LastUpdated?: number;
	PoliciesContextEditable?: boolean;
}
