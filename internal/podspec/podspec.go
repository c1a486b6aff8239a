// Package podspec reads the containers of a Pod, or of a workload's Pod
// template, out of an object's JSON, as serve's admission webhook judges them.
package podspec

import "encoding/json"

// Container is a container of a Pod's spec, as far as the webhook reads it.
type Container struct {
	Name  string `json:"name"`
	Image string `json:"image"`
}

// podSpec is the containers of a Pod spec.
type podSpec struct {
	Containers          []Container `json:"containers"`
	InitContainers      []Container `json:"initContainers"`
	EphemeralContainers []Container `json:"ephemeralContainers"`
}

func (s podSpec) all() []Container {
	return append(append(append([]Container(nil), s.InitContainers...), s.Containers...), s.EphemeralContainers...)
}

// ContainersOf reads the containers of a Pod, of a workload's Pod
// template (Deployment, StatefulSet, DaemonSet, ReplicaSet, Job,
// ReplicationController) or of a CronJob's.
func ContainersOf(raw []byte) ([]Container, error) {
	if len(raw) == 0 {
		return nil, nil
	}
	var obj struct {
		Kind string `json:"kind"`
		Spec struct {
			podSpec
			Template *struct {
				Spec podSpec `json:"spec"`
			} `json:"template"`
			JobTemplate *struct {
				Spec struct {
					Template struct {
						Spec podSpec `json:"spec"`
					} `json:"template"`
				} `json:"spec"`
			} `json:"jobTemplate"`
		} `json:"spec"`
	}
	if err := json.Unmarshal(raw, &obj); err != nil {
		return nil, err
	}
	switch {
	case obj.Spec.JobTemplate != nil:
		return obj.Spec.JobTemplate.Spec.Template.Spec.all(), nil
	case obj.Spec.Template != nil:
		return obj.Spec.Template.Spec.all(), nil
	}
	return obj.Spec.all(), nil
}

// Changed are the containers of now whose image before did not
// run under the same name: only what a request changes is judged, so a
// scale or a label change of a workload passes whatever it runs.
func Changed(now, before []Container) []Container {
	had := map[Container]bool{}
	for _, c := range before {
		had[c] = true
	}
	var out []Container
	for _, c := range now {
		if !had[c] {
			out = append(out, c)
		}
	}
	return out
}
