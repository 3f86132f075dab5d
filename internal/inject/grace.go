package inject

import (
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"

	"github.com/skills-sidecar/skills-sidecar/internal/config"
	"github.com/skills-sidecar/skills-sidecar/internal/stdio"
)

// exitMargin is what the sidecar's process is allowed, past its drain, to
// close what remains and exit, when its shutdown is measured against the
// pod's grace period. A stdio server is stopped after the drain and may
// take two of its transport's waits more (stdin closed, then SIGTERM,
// before SIGKILL).
const exitMargin = 2 * time.Second

// graceKeys are the runtime keys that make up the sidecar's shutdown: it
// keeps serving for shutdown-delay, then drains for up to drain-timeout.
var graceKeys = []string{"shutdown-delay", "drain-timeout"}

// checkGrace measures the sidecar's shutdown (cfg's shutdown-delay and
// drain-timeout, plus exitMargin and a stdio server's stop) against the pod's
// terminationGracePeriodSeconds (unset: the API server's 30), after which
// the kubelet kills the sidecar mid-drain, cutting the requests and
// streams it was finishing. A shutdown that does not fit is a warning,
// naming the pod owner's settings when they are what does not fit (by
// annotation, or in a stdio server's environment), never a refusal:
// drain-timeout is an upper bound a drain seldom reaches, and a pod the
// injector admitted before must not be refused after its upgrade. The
// pod's grace period is never changed: it also bounds the app's own
// shutdown, which is not the injector's to judge.
func checkGrace(cfg config.Config, ann map[string]string, target *stdioTarget, spec corev1.PodSpec) (warning string) {
	grace, dflt := int64(corev1.DefaultTerminationGracePeriodSeconds), " (the default)"
	if spec.TerminationGracePeriodSeconds != nil {
		grace, dflt = *spec.TerminationGracePeriodSeconds, ""
	}
	exit := exitMargin
	if target != nil {
		exit += 2 * stdio.DefaultGrace
	}
	need := cfg.ShutdownDelay + cfg.DrainTimeout + exit
	if need <= time.Duration(grace)*time.Second {
		return ""
	}
	seconds := int64((need + time.Second - 1) / time.Second)
	var set []string
	for _, k := range graceKeys {
		if hasKey(ann, config.AnnotationPrefix+k) {
			set = append(set, config.AnnotationPrefix+k)
		}
		if target != nil {
			for _, e := range target.environ {
				if strings.HasPrefix(e, config.EnvName(k)+"=") {
					set = append(set, target.name+"'s "+config.EnvName(k))
				}
			}
		}
	}
	// Short enough to be one admission warning (maxWarning).
	if len(set) > 0 {
		return fmt.Sprintf("%s: the sidecar may need %s to stop, over terminationGracePeriodSeconds %d%s, and be killed mid-drain; raise it to %d or lower the setting",
			strings.Join(set, ", "), need, grace, dflt, seconds)
	}
	sum := fmt.Sprintf("shutdown-delay %s + drain-timeout %s + %s", cfg.ShutdownDelay, cfg.DrainTimeout, exit)
	return fmt.Sprintf("terminationGracePeriodSeconds %d is under the %s the sidecar may need to stop (default %s), so it may be killed mid-drain; raise it to %d or lower %sdrain-timeout",
		grace, need, sum, seconds, config.AnnotationPrefix)
}
