package deployer

import "fmt"

// Health is what the deployer says of the app's health, and whether that
// may be trusted yet.
type Health struct {
	// Status is the deployer's own word: Argo CD's status.health.status
	// ("Healthy", "Progressing", "Degraded"…), or Flux's Ready condition
	// ("Ready", "NotReady", "Unknown").
	Status string
	// Counts is false while the status may describe the cluster before
	// the last operation: it must then be read as unknown.
	Counts bool
	// Healthy is true only when Counts and the status is healthy.
	Healthy bool
	// Reason says why the health does not count or is not healthy; ""
	// when Healthy.
	Reason string
}

// Health is the Application's health, trusted as Kargo trusts it (kargo
// #1411, #2196): not while an operation is requested or running, nor
// until Argo CD has reconciled the app since the operation finished
// (status.reconciledAt at or after operationState.finishedAt; equal counts,
// as Argo CD enqueues the reconciliation after setting finishedAt). A
// ComparisonError or InvalidSpecError condition makes it unhealthy.
func (a *Application) Health() Health {
	s := a.Status
	h := Health{Status: s.Health.Status}
	op := s.OperationState
	switch {
	case a.Operation != nil:
		h.Reason = "Argo CD has an operation requested"
		return h
	case op != nil && (op.Phase == PhaseRunning || op.Phase == PhaseTerminating):
		h.Reason = "Argo CD's operation is still " + op.Phase
		return h
	case op != nil && op.FinishedAt == nil:
		h.Reason = "Argo CD's operation has not finished"
		return h
	case op != nil && (s.ReconciledAt == nil || s.ReconciledAt.Before(*op.FinishedAt)):
		h.Reason = "Argo CD has not reconciled the app since its last operation finished"
		return h
	}
	h.Counts = true
	for _, c := range s.Conditions {
		if c.Type == "ComparisonError" || c.Type == "InvalidSpecError" {
			h.Reason = fmt.Sprintf("Argo CD reports %s: %s", c.Type, c.Message)
			return h
		}
	}
	if s.Health.Status != "Healthy" {
		h.Reason = fmt.Sprintf("Argo CD reports health %s", orWord(s.Health.Status, "unknown"))
		if s.Health.Message != "" {
			h.Reason += ": " + s.Health.Message
		}
		return h
	}
	h.Healthy = true
	return h
}

// Health is the Kustomization's Ready condition, trusted only once Flux
// has observed the current generation, is not reconciling, and is not
// suspended.
func (k *Kustomization) Health() Health {
	return fluxHealth(k.Status.Conditions, k.Metadata.Generation, k.Status.ObservedGeneration, k.Spec.Suspend, "Kustomization")
}

// Health is the HelmRelease's Ready condition, trusted as a
// Kustomization's.
func (h *HelmRelease) Health() Health {
	return fluxHealth(h.Status.Conditions, h.Metadata.Generation, h.Status.ObservedGeneration, h.Spec.Suspend, "HelmRelease")
}

// fluxHealth reads a Flux object's Ready condition: trusted only once
// Flux has observed generation gen, is not reconciling, and the object
// (a kind) is not suspended.
func fluxHealth(conds []Condition, gen, observed int64, suspended bool, kind string) Health {
	var ready, reconciling *Condition
	for i, c := range conds {
		switch c.Type {
		case "Ready":
			ready = &conds[i]
		case "Reconciling":
			reconciling = &conds[i]
		}
	}
	h := Health{Status: "Unknown"}
	if ready != nil {
		switch ready.Status {
		case "True":
			h.Status = "Ready"
		case "False":
			h.Status = "NotReady"
		}
	}
	switch {
	case suspended:
		h.Reason = "the " + kind + " is suspended"
		return h
	case observed != gen || ready == nil || ready.ObservedGeneration != 0 && ready.ObservedGeneration != gen:
		h.Reason = fmt.Sprintf("Flux has not reconciled generation %d yet", gen)
		return h
	case reconciling != nil && reconciling.Status == "True":
		h.Reason = "Flux is reconciling"
		if reconciling.Message != "" {
			h.Reason += ": " + reconciling.Message
		}
		return h
	}
	h.Counts = true
	if h.Status != "Ready" {
		h.Reason = fmt.Sprintf("Flux reports %s", h.Status)
		if ready.Message != "" {
			h.Reason += ": " + ready.Message
		}
		return h
	}
	h.Healthy = true
	return h
}

func orWord(s, word string) string {
	if s == "" {
		return word
	}
	return s
}
