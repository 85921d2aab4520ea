package api

// validateLiveMigration checks what felix needs to correlate a LiveMigration with endpoints
// unambiguously. Project Calico's felix does not validate LiveMigration; we refuse (treat as
// absent) an object that names two sources or two targets, or an identifier missing a part, since
// an identifier without its endpoint ID would silently widen to every endpoint of the workload.
func validateLiveMigration(e *errs, s *LiveMigrationSpec) {
	if src := s.Source; src != nil {
		if src.Workload != nil && src.WorkloadEndpoint != nil {
			e.add("spec.source", "only one of workload and workloadEndpoint may be set")
		}
		if w := src.Workload; w != nil {
			validateMigrationIdent(e, "spec.source.workload", w.Hostname, w.OrchestratorID, w.WorkloadID)
		}
		if w := src.WorkloadEndpoint; w != nil {
			validateMigrationIdent(e, "spec.source.workloadEndpoint", w.Hostname, w.OrchestratorID, w.WorkloadID)
			requirePart(e, "spec.source.workloadEndpoint.endpointID", w.EndpointID)
		}
	}
	if tgt := s.Target; tgt != nil {
		if tgt.Selector != nil && tgt.WorkloadEndpoint != nil {
			e.add("spec.target", "only one of selector and workloadEndpoint may be set")
		}
		if tgt.Selector != nil {
			if *tgt.Selector == "" {
				e.add("spec.target.selector", "selector must not be empty")
			}
			e.selector("spec.target.selector", *tgt.Selector)
		}
		if w := tgt.WorkloadEndpoint; w != nil {
			validateMigrationIdent(e, "spec.target.workloadEndpoint", w.Hostname, w.OrchestratorID, w.WorkloadID)
			requirePart(e, "spec.target.workloadEndpoint.endpointID", w.EndpointID)
		}
	}
}

// validateMigrationIdent requires the parts of a workload identifier; the hostname is optional for
// orchestrator k8s, whose endpoints Project Calico matches without it.
func validateMigrationIdent(e *errs, field, host, orch, workload string) {
	requirePart(e, field+".orchestratorID", orch)
	requirePart(e, field+".workloadID", workload)
	if orch != "k8s" {
		requirePart(e, field+".hostname", host)
	}
}

func requirePart(e *errs, field, v string) {
	if v == "" {
		e.add(field, "a value is required")
	}
}
